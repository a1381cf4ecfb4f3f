// auth.jwt and admin.oidc in the one config schema (docs/identity.md): defaults, and what the
// schema refuses — none, HS*, an unknown default plan, a plain-http issuer off loopback.
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config/load-config.js';

const base = { agents: { support: { upstream: 'http://127.0.0.1:8081/api/v1' } } };
const issuer = { issuer: 'https://login.example.com/', audiences: ['https://gw.example.com'] };

function problems(document: Record<string, unknown>): string {
  try {
    parseConfig({ ...base, ...document }, 'test', {});
    return '';
  } catch (error) {
    return (error as Error).message;
  }
}

describe('auth.jwt', () => {
  it('defaults: no issuer; an issuer gets RS256/ES256/EdDSA, the default claim names and 30 s / 10 min', () => {
    expect(parseConfig(base, 'test', {}).auth.jwt).toEqual([]);
    expect(parseConfig({ ...base, auth: { jwt: [issuer] } }, 'test', {}).auth.jwt[0]).toEqual({
      ...issuer,
      algorithms: ['RS256', 'ES256', 'EdDSA'],
      claims: { account: 'org_id', plan: 'plan', endUser: 'sub', agents: 'agents', mcp: 'mcp', limits: undefined },
      defaultPlan: undefined,
      jwksRefetchIntervalMs: 30_000,
      jwksMaxAgeMs: 600_000,
    });
  });

  it('refuses none, HS*, an unknown default plan, http off loopback, a repeated issuer', () => {
    expect(problems({ auth: { jwt: [{ ...issuer, algorithms: ['none'] }] } })).toMatch(/never none, never HS/);
    expect(problems({ auth: { jwt: [{ ...issuer, algorithms: ['HS256'] }] } })).toMatch(/never none, never HS/);
    expect(problems({ auth: { jwt: [{ ...issuer, default_plan: 'platinum' }] } })).toMatch(/plan "platinum" is not configured/);
    expect(problems({ auth: { jwt: [{ ...issuer, issuer: 'http://login.example.com/' }] } })).toMatch(/https/);
    expect(problems({ auth: { jwt: [issuer, issuer] } })).toMatch(/each issuer may appear once/);
    expect(problems({ auth: { jwt: [{ ...issuer, issuer: 'http://127.0.0.1:9400' }] } })).toBe('');
  });
});

describe('admin.oidc', () => {
  const oidc = { issuer: 'https://login.example.com/', client_id: 'gw', client_secret: 's', roles: { admin: ['admins'] } };
  it('takes the role claim (default groups) and needs at least one role value and the openid scope', () => {
    expect(parseConfig({ ...base, admin: { oidc } }, 'test', {}).admin.oidc).toMatchObject({ clientId: 'gw', scopes: ['openid', 'email', 'profile'], roles: { claim: 'groups', admin: ['admins'], viewer: [] } });
    expect(problems({ admin: { oidc: { ...oidc, roles: {} } } })).toMatch(/at least one value/);
    expect(problems({ admin: { oidc: { ...oidc, scopes: ['email'] } } })).toMatch(/openid/);
  });
});
