// The Authenticator the gateway's pipeline holds: the key authenticator alone, or, when
// auth.jwt names an issuer, keys and JWT access tokens behind one BearerAuthenticator
// (docs/identity.md). Also the token revocations every instance reads (the admin API writes
// them) and what the MCP endpoints ask of identity. The token half (jose, src/auth/jwt/) is
// imported here at start only when an issuer is configured (decision 0108): a gateway
// without one loads none of it, and its callers hold the null objects.
import type { GatewayConfig } from '../config/schema.js';
import type { AuthenticatorDeps, RevocationDeps } from './authenticator-deps.js';
import type { Authenticator } from './authenticator.js';
import { createFailedAuthThrottle, createKeyAuthenticator } from './key-authenticator.js';
import { NO_MCP_AUTHORIZATION, type McpAuthorization } from './mcp-authorization.js';
import type { TokenRevocations } from './token-revocation-types.js';

export interface Identity {
  authenticator: Authenticator;
  /** undefined without auth.jwt: nothing to revoke. */
  revocations: TokenRevocations | undefined;
  /** NO_MCP_AUTHORIZATION without auth.jwt. */
  mcpAuthorization: McpAuthorization;
}

/** Revocations where every instance reads them (Redis when configured, else this process's memory); only with auth.jwt. */
export async function openTokenRevocations(config: GatewayConfig, deps: RevocationDeps): Promise<TokenRevocations> {
  const { tokenRevocationsOn } = await import('./jwt/identity-on.js');
  return tokenRevocationsOn(config, deps);
}

export type { AuthenticatorDeps, RevocationDeps };

export async function createAuthenticator(config: GatewayConfig, deps: AuthenticatorDeps): Promise<Identity> {
  const throttle = createFailedAuthThrottle(config, deps);
  const keys = createKeyAuthenticator(config, { ...deps, throttle });
  if (config.auth.jwt.length === 0) return { authenticator: keys, revocations: undefined, mcpAuthorization: NO_MCP_AUTHORIZATION };
  const { identityOn } = await import('./jwt/identity-on.js');
  return identityOn(config, deps, keys, throttle);
}
