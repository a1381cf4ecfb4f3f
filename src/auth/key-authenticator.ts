// The Authenticator the request pipeline calls (docs/design.md, "Keys"). Order of work:
//   Bearer header → failed-attempt throttle → format + checksum (no store call on failure)
//   → cache → store → revoked / expired (injected clock, every request) / agent scope
//   → note last_used → {keyId, account, plan}.
// A fresh cached key costs a CRC32, a SHA-256 and two Map reads: no await, no allocation
// beyond the hash string (authenticateNow returns the cached result itself, authenticate a
// promise resolved once per cache entry); on a keep-alive connection that sent the same key
// before, a string compare instead of both.
import type { Clock } from '../clock.js';
import type { GatewayConfig } from '../config/schema.js';
import { GatewayError, type ErrorType } from '../errors.js';
import type { Logger } from '../logger.js';
import { boundOnFirstUse } from '../metrics/hot-path-metrics.js';
import { metrics } from '../metrics/metrics.js';
import type { AuthenticateInput, Authenticator } from './authenticator.js';
import { extractBearerToken } from './bearer-token.js';
import { KeyCache, toCachedKey, type CachedKey } from './key-cache.js';
import { hashApiKey, parseApiKey } from '../keys/key-format.js';
import type { AuthenticatedKey, KeyRecord } from '../keys/key-record.js';
import { INVALIDATE_ALL, StoreUnavailableError, type KeyStore } from '../keys/key-store.js';
import { FailedAuthThrottle } from './failed-auth-throttle.js';
import { LastUsedTracker } from './last-used-tracker.js';

export interface KeyAuthenticatorOptions {
  store: KeyStore;
  clock: Clock;
  logger: Logger;
  cacheTtlMs: number;
  negativeCacheTtlMs: number;
  maxCacheEntries?: number;
  throttle: FailedAuthThrottle;
  /** Created (flushing every 5 s) when not given. */
  lastUsed?: LastUsedTracker;
  /** Retry-After for 503 store_unavailable. */
  storeRetryAfterSeconds?: number;
  /** While the store is down, a stale entry is served this long before the store is tried again (default 1 s). */
  staleRetryMs?: number;
}

type FailureType = Extract<ErrorType, 'missing_api_key' | 'invalid_api_key' | 'expired_api_key' | 'revoked_api_key' | 'agent_not_allowed'>;

/** Failures that look like someone trying keys: they count toward the per-address throttle. */
const COUNTED_FAILURES: ReadonlySet<FailureType> = new Set(['invalid_api_key', 'expired_api_key', 'revoked_api_key']);

/** The last well-formed key a connection presented, and its hash. */
interface ConnectionKey {
  token: string;
  hash: string;
}

interface InflightLookup {
  promise: Promise<KeyRecord | undefined>;
  generation: number;
}

export class KeyAuthenticator implements Authenticator {
  readonly cache: KeyCache;
  private readonly store: KeyStore;
  private readonly clock: Clock;
  private readonly throttle: FailedAuthThrottle;
  private readonly lastUsed: LastUsedTracker;
  private readonly ownsTracker: boolean;
  private readonly inflight = new Map<string, InflightLookup>();
  // Clients on keep-alive connections send the same key on every request: remembering the
  // last key's hash per connection saves the checksum and the SHA-256 on every request after
  // the first (decision 0006 has their cost). Held only while the connection is (a WeakMap
  // on the socket), in memory only, like the request's own headers; the hash maps to nothing
  // without the key cache and the checks below, which still run on every request.
  private readonly connectionKeys = new WeakMap<object, ConnectionKey>();
  private readonly unsubscribe: () => void;
  private readonly storeRetryAfterSeconds: number;
  private readonly staleRetryMs: number;
  private readonly counters;

  constructor(options: KeyAuthenticatorOptions) {
    this.store = options.store;
    this.clock = options.clock;
    this.throttle = options.throttle;
    this.cache = new KeyCache({ ttlMs: options.cacheTtlMs, negativeTtlMs: options.negativeCacheTtlMs, maxEntries: options.maxCacheEntries });
    this.ownsTracker = options.lastUsed === undefined;
    this.lastUsed = options.lastUsed ?? new LastUsedTracker({ store: options.store, logger: options.logger });
    this.storeRetryAfterSeconds = options.storeRetryAfterSeconds ?? 1;
    this.staleRetryMs = options.staleRetryMs ?? 1_000;
    // Series bound once (on first use): a label lookup would otherwise run per request.
    this.counters = {
      hit: boundOnFirstUse(metrics.keyCache, 'hit'),
      miss: boundOnFirstUse(metrics.keyCache, 'miss'),
      negativeHit: boundOnFirstUse(metrics.keyCache, 'negative_hit'),
      staleHit: boundOnFirstUse(metrics.keyCache, 'stale_hit'),
      authFailures: metrics.authFailures,
    };
    this.unsubscribe = options.store.onInvalidate((hash) => {
      // Everything: the subscriber reconnected (messages may have been missed) or many keys
      // changed at once. Each key is asked for again, and served stale if the store does
      // not answer yet: on a failover the subscriber may find the new master before the
      // data connection does.
      if (hash === INVALIDATE_ALL) this.cache.expireAll();
      else this.cache.invalidate(hash);
      this.inflight.delete(hash);
      if (hash === INVALIDATE_ALL) this.inflight.clear();
    });
  }

  authenticateNow(input: AuthenticateInput): AuthenticatedKey | undefined {
    return this.acceptedNow(input)?.authenticated;
  }

  authenticate(input: AuthenticateInput): Promise<AuthenticatedKey> {
    const accepted = this.acceptedNow(input);
    if (accepted !== undefined) return accepted.resolved;
    const token = extractBearerToken(input.authorization);
    if (token === '') return this.fail('missing_api_key', input.clientIp);
    try {
      this.throttle.check(input.clientIp);
    } catch (error) {
      this.counters.authFailures.labels('rate_limit_exceeded').inc();
      return Promise.reject(error);
    }
    const hash = this.hashOf(token, input.connection);
    if (hash === undefined) return this.fail('invalid_api_key', input.clientIp);
    const now = this.clock.now();
    const entry = this.cache.get(hash);
    if (entry !== undefined && entry.freshUntilMs > now) {
      if (entry.stale) this.counters.staleHit.inc();
      else this.counters.hit.inc();
      return this.accept(entry, input, now);
    }
    if (entry === undefined) {
      const negativeUntil = this.cache.getNegative(hash);
      if (negativeUntil !== undefined && negativeUntil > now) {
        this.counters.negativeHit.inc();
        return this.fail('invalid_api_key', input.clientIp);
      }
    }
    return this.lookup(hash, entry, input);
  }

  /**
   * The fast path of both methods: a fresh cached key that passes every check (not
   * revoked, not expired, scoped to the agent, the address not throttled), counted as a hit
   * and noted as used. Anything else returns undefined having counted nothing, and the
   * rest of authenticate() decides it.
   */
  private acceptedNow(input: AuthenticateInput): CachedKey | undefined {
    if (this.throttle.blockedForMs(input.clientIp) > 0) return undefined;
    const token = extractBearerToken(input.authorization);
    if (token === '') return undefined;
    const hash = this.hashOf(token, input.connection);
    if (hash === undefined) return undefined;
    const now = this.clock.now();
    const entry = this.cache.get(hash);
    if (entry === undefined || entry.freshUntilMs <= now) return undefined;
    if (entry.revoked || now >= entry.expiresAtMs || !entry.agents.includes(input.agentId)) return undefined;
    if (entry.stale) this.counters.staleHit.inc();
    else this.counters.hit.inc();
    this.lastUsed.touch(entry.record.hash, now);
    return entry;
  }

  /** The key's hash, or undefined when it is not a well-formed key (bad format or checksum). */
  private hashOf(token: string, connection: object | undefined): string | undefined {
    if (connection !== undefined) {
      const last = this.connectionKeys.get(connection);
      if (last !== undefined && last.token === token) return last.hash;
    }
    if (!parseApiKey(token)) return undefined;
    const hash = hashApiKey(token);
    if (connection !== undefined) this.connectionKeys.set(connection, { token, hash });
    return hash;
  }

  private accept(entry: CachedKey, input: AuthenticateInput, now: number): Promise<AuthenticatedKey> {
    if (entry.revoked) return this.fail('revoked_api_key', input.clientIp);
    if (now >= entry.expiresAtMs) return this.fail('expired_api_key', input.clientIp);
    if (!entry.agents.includes(input.agentId)) return this.fail('agent_not_allowed', input.clientIp);
    this.lastUsed.touch(entry.record.hash, now);
    return entry.resolved;
  }

  private async lookup(hash: string, stale: CachedKey | undefined, input: AuthenticateInput): Promise<AuthenticatedKey> {
    await this.throttle.checkShared(input.clientIp).catch((error: unknown) => {
      this.counters.authFailures.labels('rate_limit_exceeded').inc();
      throw error;
    });
    let inflight = this.inflight.get(hash);
    if (inflight === undefined) {
      const generation = this.cache.generation;
      const promise = this.store.findByHash(hash);
      inflight = { promise, generation };
      this.inflight.set(hash, inflight);
      const settled = inflight;
      const forget = () => {
        if (this.inflight.get(hash) === settled) this.inflight.delete(hash);
      };
      promise.then(forget, forget);
    }
    let record: KeyRecord | undefined;
    try {
      record = await inflight.promise;
    } catch (error) {
      if (!(error instanceof StoreUnavailableError)) throw error;
      // Serve stale while the store is down: keys that worked a moment ago keep working,
      // unless an invalidation removed the entry while the lookup was failing.
      if (stale !== undefined && this.cache.peek(hash) === stale) {
        const now = this.clock.now();
        // Ask the store again only after a back-off, so requests during an outage do not
        // each wait for a command timeout.
        stale.freshUntilMs = now + this.staleRetryMs;
        stale.stale = true;
        this.counters.staleHit.inc();
        return this.accept(stale, input, now);
      }
      this.counters.authFailures.labels('store_unavailable').inc();
      throw new GatewayError('store_unavailable', { retryAfterSeconds: this.storeRetryAfterSeconds });
    }
    this.counters.miss.inc();
    const now = this.clock.now();
    // A lookup that overlapped an invalidation may hold the record from before it: use it
    // for this request, but do not cache it.
    const cacheable = inflight.generation === this.cache.generation;
    if (record === undefined) {
      if (cacheable) this.cache.setNegative(hash, now);
      return this.fail('invalid_api_key', input.clientIp);
    }
    if (record.hash !== hash) throw new Error('key store returned a record for another hash');
    const entry = cacheable ? this.cache.setPositive(record, now) : toCachedKey(record, now);
    return this.accept(entry, input, now);
  }

  private async fail(type: FailureType, clientIp: string): Promise<never> {
    // The attempt that goes past the throttle's limit is answered 429, not 401.
    const refusal = COUNTED_FAILURES.has(type) ? await this.throttle.recordFailure(clientIp) : undefined;
    if (refusal !== undefined) {
      this.counters.authFailures.labels('rate_limit_exceeded').inc();
      throw refusal;
    }
    this.counters.authFailures.labels(type).inc();
    throw new GatewayError(type);
  }

  /** Writes pending last_used_at times and detaches from the store (which the caller closes). */
  async close(): Promise<void> {
    this.unsubscribe();
    if (this.ownsTracker) await this.lastUsed.close();
    else await this.lastUsed.flush();
  }
}

export interface KeyAuthenticatorDeps {
  store: KeyStore;
  clock: Clock;
  logger: Logger;
  /** The ioredis client for the shared failed-auth counter; memory-only when absent. */
  redisClient?: unknown;
}

/** The failed-attempt throttle from config.keys.failed_auth (shared with the JWT authenticator, so both count toward one limit). */
export function createFailedAuthThrottle(config: GatewayConfig, deps: Pick<KeyAuthenticatorDeps, 'clock' | 'logger' | 'redisClient'>): FailedAuthThrottle {
  const { failedAuth } = config.keys;
  return new FailedAuthThrottle({
    maxAttempts: failedAuth.maxAttempts,
    perMs: failedAuth.perMs,
    blockForMs: failedAuth.blockForMs,
    clock: deps.clock,
    logger: deps.logger,
    redis: deps.redisClient !== undefined && config.redis ? { client: deps.redisClient, prefix: config.redis.prefix } : undefined,
    commandTimeoutMs: config.redis?.commandTimeoutMs,
  });
}

/** Builds the authenticator and (unless given) its throttle from config.keys (and config.redis.prefix). */
export function createKeyAuthenticator(config: GatewayConfig, deps: KeyAuthenticatorDeps & { throttle?: FailedAuthThrottle }): KeyAuthenticator {
  return new KeyAuthenticator({
    store: deps.store,
    clock: deps.clock,
    logger: deps.logger,
    cacheTtlMs: config.keys.cacheTtlMs,
    negativeCacheTtlMs: config.keys.negativeCacheTtlMs,
    throttle: deps.throttle ?? createFailedAuthThrottle(config, deps),
  });
}
