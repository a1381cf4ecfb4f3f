// What building the Authenticator needs (create-authenticator.ts), in a file of its own so the
// token half it imports when auth.jwt is on (jwt/identity-on.ts) can name it without importing back.
import type { Clock } from '../clock.js';
import type { KeyStore } from '../keys/key-store.js';
import type { Logger } from '../logger.js';
import type { RedisClient } from '../redis/redis-client.js';
import type { TokenRevocations } from './token-revocation-types.js';

export interface RevocationDeps {
  clock: Clock;
  logger: Logger;
  redisClient?: RedisClient | undefined;
}

export interface AuthenticatorDeps extends RevocationDeps {
  store: KeyStore;
  /** The running config's plans (a reload may change them). */
  hasPlan(plan: string): boolean;
  /** The revocations to read; opened here when not given. */
  revocations?: TokenRevocations;
}
