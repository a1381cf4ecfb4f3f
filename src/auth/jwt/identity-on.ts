// JWT access tokens on (docs/identity.md): everything auth.jwt needs, in the module that
// src/auth/create-authenticator.ts imports at start only when an issuer is configured, so a
// gateway without one loads neither jose nor anything of src/auth/jwt/ (decision 0108).
import type { GatewayConfig } from '../../config/schema.js';
import type { Authenticator } from '../authenticator.js';
import { BearerAuthenticator } from '../bearer-authenticator.js';
import type { FailedAuthThrottle } from '../failed-auth-throttle.js';
import type { McpAuthorization } from '../mcp-authorization.js';
import type { AuthenticatorDeps, RevocationDeps } from '../authenticator-deps.js';
import type { TokenRevocations } from '../token-revocation-types.js';
import { JwtAuthenticator } from './jwt-authenticator.js';
import { mcpAuthorizationOn } from './mcp-authorization-on.js';
import { MemoryTokenRevocations, RedisTokenRevocations } from './token-revocations.js';

/** Revocations where every instance reads them: Redis when configured, else this process's memory. */
export function tokenRevocationsOn(config: GatewayConfig, deps: RevocationDeps): TokenRevocations {
  if (deps.redisClient !== undefined && config.redis) return new RedisTokenRevocations({ client: deps.redisClient, prefix: config.redis.prefix, clock: deps.clock, logger: deps.logger });
  return new MemoryTokenRevocations(deps.clock);
}

/** Keys and tokens behind one BearerAuthenticator, the revocations it reads, and the MCP endpoints' audiences and challenges. */
export function identityOn(
  config: GatewayConfig,
  deps: AuthenticatorDeps,
  keys: Authenticator,
  throttle: FailedAuthThrottle,
): { authenticator: Authenticator; revocations: TokenRevocations; mcpAuthorization: McpAuthorization } {
  const revocations = deps.revocations ?? tokenRevocationsOn(config, deps);
  const tokens = new JwtAuthenticator({ issuers: config.auth.jwt, clock: deps.clock, logger: deps.logger, throttle, revocations, hasPlan: deps.hasPlan });
  return { authenticator: new BearerAuthenticator(keys, tokens, revocations), revocations, mcpAuthorization: mcpAuthorizationOn(config.auth.jwt) };
}
