// MCP authorization (docs/identity.md "MCP clients"): the gateway in front of an MCP server is
// an OAuth resource server. Each server's resource URL is the gateway's public URL (the first
// audience of the first auth.jwt issuer) plus `/mcp/{server}`; a token for it must name that
// URL in `aud` (RFC 8707). Clients find the issuers from the protected resource metadata
// (RFC 9728) that the 401 challenge points to. Pure functions: the MCP endpoints call them for
// their challenge and audience, the public listener for the metadata document.
import type { JwtIssuerConfig } from '../../config/auth-schema.js';
import { PROTECTED_RESOURCE_PATH } from '../mcp-authorization.js';

export { PROTECTED_RESOURCE_PATH };

/** An MCP server's name in a URL path: the config's id syntax (letters, digits, "_" and "-"). */
const SERVER_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

export function isServerName(text: string): boolean {
  return SERVER_NAME.test(text);
}

/** The gateway's public URL as the tokens name it: the first issuer's first audience, without a trailing "/". */
export function publicBaseUrl(issuers: readonly JwtIssuerConfig[]): string | undefined {
  const first = issuers[0]?.audiences[0];
  return first?.replace(/\/+$/, '');
}

/** The MCP server's resource URL: what its tokens must name in `aud`; `server` undefined: the aggregated endpoint `/mcp`. */
export function mcpResourceUrl(issuers: readonly JwtIssuerConfig[], server: string | undefined): string | undefined {
  const base = publicBaseUrl(issuers);
  if (base === undefined) return undefined;
  return server === undefined ? `${base}/mcp` : `${base}/mcp/${server}`;
}

/** Where the resource's metadata is (RFC 9728 section 3.1: the well-known path between the host and the resource's path). */
export function resourceMetadataUrl(resource: string): string {
  const url = new URL(resource);
  return `${url.origin}${PROTECTED_RESOURCE_PATH}${url.pathname === '/' ? '' : url.pathname}`;
}

/**
 * The `WWW-Authenticate` value of an MCP endpoint's 401: `Bearer resource_metadata="…"`, with
 * `error="invalid_token"` when a token was presented and refused. Undefined when no issuer is
 * configured (keys only: the plain `Bearer` challenge).
 */
export function mcpChallenge(issuers: readonly JwtIssuerConfig[], server: string | undefined, invalidToken: boolean): string | undefined {
  const resource = mcpResourceUrl(issuers, server);
  if (resource === undefined) return undefined;
  const metadata = `Bearer resource_metadata="${resourceMetadataUrl(resource)}"`;
  return invalidToken ? `${metadata}, error="invalid_token"` : metadata;
}

/** The RFC 9728 metadata document of an MCP server's resource. */
export function protectedResourceMetadata(issuers: readonly JwtIssuerConfig[], server: string | undefined): Record<string, unknown> | undefined {
  const resource = mcpResourceUrl(issuers, server);
  if (resource === undefined) return undefined;
  const algorithms = [...new Set(issuers.flatMap((issuer) => issuer.algorithms))];
  return {
    resource,
    authorization_servers: issuers.map((issuer) => issuer.issuer),
    bearer_methods_supported: ['header'],
    resource_signing_alg_values_supported: algorithms,
  };
}
