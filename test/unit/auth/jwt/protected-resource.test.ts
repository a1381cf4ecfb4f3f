// MCP authorization (src/auth/jwt/protected-resource.ts): the resource URL from the first
// audience, the RFC 9728 metadata URL, and the 401 challenge the MCP endpoints send.
import { describe, expect, it } from 'vitest';
import { isServerName, mcpChallenge, mcpResourceUrl, protectedResourceMetadata, resourceMetadataUrl } from '../../../../src/auth/jwt/protected-resource.js';
import type { JwtIssuerConfig } from '../../../../src/config/schema.js';

const issuer = (name: string, audiences: string[]): JwtIssuerConfig => ({
  issuer: name,
  audiences,
  algorithms: ['RS256', 'ES256'],
  claims: { account: 'org_id', plan: 'plan', endUser: 'sub', agents: 'agents', mcp: 'mcp', limits: undefined },
  defaultPlan: undefined,
  jwksRefetchIntervalMs: 30_000,
  jwksMaxAgeMs: 600_000,
});
const issuers = [issuer('https://login.example.com/', ['https://gw.example.com/']), issuer('https://other.example.com', ['https://gw.example.com'])];

describe('MCP protected resource', () => {
  it('the resource URL is the first audience plus /mcp/{server}, the metadata beside the host (RFC 9728 3.1)', () => {
    expect(mcpResourceUrl(issuers, 'files')).toBe('https://gw.example.com/mcp/files');
    expect(resourceMetadataUrl('https://gw.example.com/mcp/files')).toBe('https://gw.example.com/.well-known/oauth-protected-resource/mcp/files');
    expect(resourceMetadataUrl('https://example.com/gw/mcp/files')).toBe('https://example.com/.well-known/oauth-protected-resource/gw/mcp/files');
    expect(mcpResourceUrl([], 'files')).toBeUndefined();
  });

  it('the challenge points to the metadata, with error="invalid_token" for a refused token', () => {
    expect(mcpChallenge(issuers, 'files', false)).toBe('Bearer resource_metadata="https://gw.example.com/.well-known/oauth-protected-resource/mcp/files"');
    expect(mcpChallenge(issuers, 'files', true)).toBe('Bearer resource_metadata="https://gw.example.com/.well-known/oauth-protected-resource/mcp/files", error="invalid_token"');
    expect(mcpChallenge([], 'files', true)).toBeUndefined();
  });

  it('the metadata names every issuer', () => {
    expect(protectedResourceMetadata(issuers, 'git')).toEqual({
      resource: 'https://gw.example.com/mcp/git',
      authorization_servers: ['https://login.example.com/', 'https://other.example.com'],
      bearer_methods_supported: ['header'],
      resource_signing_alg_values_supported: ['RS256', 'ES256'],
    });
  });

  it('server names are the config id syntax only', () => {
    expect(isServerName('files_2')).toBe(true);
    for (const bad of ['', '../etc', 'a/b', 'a b', '%2e%2e', 'x'.repeat(65)]) expect(isServerName(bad)).toBe(false);
  });
});
