// The Authenticator the gateway's pipeline holds: the key authenticator alone, or, when
// auth.jwt names an issuer, keys and JWT access tokens behind one BearerAuthenticator
// (docs/identity.md). Also the token revocations every instance reads (the admin API writes them).
import type { Clock } from '../clock.js';
import type { GatewayConfig } from '../config/schema.js';
import type { KeyStore } from '../keys/key-store.js';
import type { Logger } from '../logger.js';
import type { RedisClient } from '../redis/redis-client.js';
import type { Authenticator } from './authenticator.js';
import { BearerAuthenticator } from './bearer-authenticator.js';
import { JwtAuthenticator } from './jwt/jwt-authenticator.js';
import { MemoryTokenRevocations, RedisTokenRevocations, type TokenRevocations } from './jwt/token-revocations.js';
import { createFailedAuthThrottle, createKeyAuthenticator } from './key-authenticator.js';

export interface AuthenticatorDeps {
  store: KeyStore;
  clock: Clock;
  logger: Logger;
  redisClient?: RedisClient | undefined;
  /** The running config's plans (a reload may change them). */
  hasPlan(plan: string): boolean;
  /** The revocations to read; opened here when not given. */
  revocations?: TokenRevocations;
}

/** Revocations where every instance reads them: Redis when configured, else this process's memory. */
export function openTokenRevocations(config: GatewayConfig, deps: { clock: Clock; logger: Logger; redisClient?: RedisClient | undefined }): TokenRevocations {
  if (deps.redisClient !== undefined && config.redis) return new RedisTokenRevocations({ client: deps.redisClient, prefix: config.redis.prefix, clock: deps.clock, logger: deps.logger });
  return new MemoryTokenRevocations(deps.clock);
}

export function createAuthenticator(config: GatewayConfig, deps: AuthenticatorDeps): { authenticator: Authenticator; revocations: TokenRevocations | undefined } {
  const throttle = createFailedAuthThrottle(config, deps);
  const keys = createKeyAuthenticator(config, { ...deps, throttle });
  if (config.auth.jwt.length === 0) return { authenticator: keys, revocations: undefined };
  const revocations = deps.revocations ?? openTokenRevocations(config, deps);
  const tokens = new JwtAuthenticator({ issuers: config.auth.jwt, clock: deps.clock, logger: deps.logger, throttle, revocations, hasPlan: deps.hasPlan });
  return { authenticator: new BearerAuthenticator(keys, tokens, revocations), revocations };
}
