// A verified token's claims as the caller (src/auth/jwt/token-claims.ts): the mapping, the
// defaults, and every claim the gateway cannot use refused rather than guessed.
import { describe, expect, it } from 'vitest';
import { ClaimError, tokenCaller, tokenKeyId } from '../../../../src/auth/jwt/token-claims.js';
import type { JwtIssuerConfig } from '../../../../src/config/schema.js';

const issuer: JwtIssuerConfig = {
  issuer: 'https://login.example.com/',
  audiences: ['https://gw.example.com'],
  algorithms: ['RS256'],
  claims: { account: 'org_id', plan: 'plan', endUser: 'sub', agents: 'agents', mcp: 'mcp', limits: 'limits' },
  defaultPlan: 'starter',
  jwksRefetchIntervalMs: 30_000,
  jwksMaxAgeMs: 600_000,
};
const plans = new Set(['starter', 'pro']);
const hasPlan = (plan: string) => plans.has(plan);

describe('tokenCaller', () => {
  it('maps the claims to the caller a key would give', () => {
    const caller = tokenCaller({ sub: 'person-1', org_id: 'acme', plan: 'pro', agents: 'support billing', jti: 'j1', mcp: { files: ['read_file'] } }, issuer, hasPlan);
    expect(caller.key).toEqual({
      keyId: tokenKeyId(issuer.issuer, 'person-1'),
      account: 'acme',
      plan: 'pro',
      limits: null,
      tools: null,
      endUser: 'person-1',
      mcp: { files: ['read_file'] },
      token: { issuer: issuer.issuer, sub: 'person-1', jti: 'j1' },
    });
    expect(caller.agents).toEqual(new Set(['support', 'billing']));
    expect(tokenKeyId(issuer.issuer, 'person-1')).toMatch(/^jwt_[A-Za-z0-9_-]{22}$/);
    expect(tokenKeyId(issuer.issuer, 'person-1')).not.toBe(tokenKeyId('https://other.example.com/', 'person-1'));
  });

  it('default plan without a plan claim, "*" for every agent, no agents claim reaches none', () => {
    expect(tokenCaller({ sub: 's', org_id: 'a', agents: ['*'] }, issuer, hasPlan)).toMatchObject({ key: { plan: 'starter', token: { jti: null } }, agents: 'all' });
    expect(tokenCaller({ sub: 's', org_id: 'a' }, issuer, hasPlan).agents).toEqual(new Set());
  });

  it('equal limits claims share one object (compiled once per plan by the pipeline)', () => {
    const limits = { windows: [{ requests: 5, per: '1m' }] };
    const a = tokenCaller({ sub: 'a', org_id: 'x', limits }, issuer, hasPlan).key.limits;
    const b = tokenCaller({ sub: 'b', org_id: 'y', limits: JSON.parse(JSON.stringify(limits)) as unknown }, issuer, hasPlan).key.limits;
    expect(a).toEqual(limits);
    expect(b).toBe(a);
  });

  it.each([
    ['no account', { sub: 's' }],
    ['an account with spaces', { sub: 's', org_id: 'a b' }],
    ['an account that is a number', { sub: 's', org_id: 7 }],
    ['an unknown plan', { sub: 's', org_id: 'a', plan: 'platinum' }],
    ['a sub that is not a string', { sub: 5, org_id: 'a' }],
    ['agents that are not names', { sub: 's', org_id: 'a', agents: [1, 2] }],
    ['an mcp scope that is a list', { sub: 's', org_id: 'a', mcp: ['files'] }],
    ['limits of the wrong shape', { sub: 's', org_id: 'a', limits: { windows: 'many' } }],
    ['an end user past 256 characters', { sub: 'x'.repeat(300), org_id: 'a' }],
  ])('refuses %s', (_what, payload) => {
    expect(() => tokenCaller(payload as never, issuer, hasPlan)).toThrow(ClaimError);
  });

  it('without a default plan, a token without a plan claim is refused', () => {
    expect(() => tokenCaller({ sub: 's', org_id: 'a' }, { ...issuer, defaultPlan: undefined }, hasPlan)).toThrow(/default_plan/);
  });
});
