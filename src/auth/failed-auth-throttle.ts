// Failed-key throttle (docs/design.md, "Keys": 429 for too many failed key attempts from one
// client address). Counting is rate-limiter-flexible: RateLimiterRedis shared by all instances
// when Redis is configured (with a RateLimiterMemory to fall back on, call by call, when Redis
// errors), RateLimiterMemory otherwise. The fallback is ours rather than the library's
// insuranceLimiter, which would hide the error: each one is counted as
// agentgw_redis_errors_total{op="authfail"}.
//
// A failed attempt is counted and checked in one step (recordFailure), so concurrent wrong
// keys from one address get at most `max_attempts` 401s per window, then 429s.
//
// The request path never waits on the counter for a key that is in the cache: blocks are
// mirrored in a local map that check() reads synchronously. Before a store lookup,
// checkShared() also asks the shared counter, so an address blocked through another
// instance is refused here before any lookup too.
//
// Every shared-counter call is bounded by redis.command_timeout (withDeadline, as the limiter
// and the key store are): checkShared() runs before every key lookup, so an unbounded call
// would hold a request for as long as ioredis waits on a dead node (seen: ~2 s during a
// cluster master's failover, before the replica was promoted).
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Clock } from '../clock.js';
import { DeadlineExceededError, withDeadline } from '../deadline.js';
import { GatewayError } from '../errors.js';
import type { Logger } from '../logger.js';
import { metrics } from '../metrics/metrics.js';

export interface FailedAuthThrottleOptions {
  /** Failed attempts allowed per window; the attempt that uses the last one starts the block. */
  maxAttempts: number;
  perMs: number;
  blockForMs: number;
  clock: Clock;
  logger: Logger;
  /** An ioredis client (rate-limiter-flexible's `storeClient`) and the key prefix; memory-only when absent. */
  redis?: { client: unknown; prefix: string } | undefined;
  /** Bound on each shared-counter call (config.redis.commandTimeoutMs); past it, the call counts as failed. Default 100 ms. */
  commandTimeoutMs?: number;
  /** Bound on the local mirror of blocked addresses. */
  maxTrackedAddresses?: number;
}

const toSeconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

export class FailedAuthThrottle {
  private readonly limiter: RateLimiterAbstract;
  /** With Redis (the counter is shared): this instance's own count, for a call whose Redis command failed. */
  private readonly fallback: RateLimiterAbstract | undefined;
  /** Client address → blocked until (epoch ms, injected clock). */
  private readonly blockedUntil = new Map<string, number>();
  private readonly maxTracked: number;
  private readonly commandTimeoutMs: number;

  constructor(private readonly options: FailedAuthThrottleOptions) {
    this.maxTracked = options.maxTrackedAddresses ?? 100_000;
    this.commandTimeoutMs = options.commandTimeoutMs ?? 100;
    const limits = { points: options.maxAttempts, duration: toSeconds(options.perMs), blockDuration: toSeconds(options.blockForMs) };
    if (options.redis) {
      this.limiter = new RateLimiterRedis({
        ...limits,
        storeClient: options.redis.client,
        keyPrefix: `${options.redis.prefix}authfail`,
        // Fail over at once instead of queueing behind a reconnect.
        rejectIfRedisNotReady: true,
      });
      this.fallback = new RateLimiterMemory({ ...limits, keyPrefix: 'authfail' });
    } else {
      this.fallback = undefined;
      this.limiter = new RateLimiterMemory({ ...limits, keyPrefix: 'authfail' });
    }
  }

  /** Throws 429 rate_limit_exceeded when `ip` is blocked as far as this instance knows. Synchronous and allocation-free when not blocked. */
  check(ip: string): void {
    const remainingMs = this.blockedForMs(ip);
    if (remainingMs > 0) throw rateLimited(remainingMs);
  }

  /** How much longer `ip` is blocked as far as this instance knows (0: not blocked). */
  blockedForMs(ip: string): number {
    if (this.blockedUntil.size === 0) return 0;
    const until = this.blockedUntil.get(ip);
    if (until === undefined) return 0;
    const remainingMs = until - this.options.clock.now();
    if (remainingMs > 0) return remainingMs;
    this.blockedUntil.delete(ip);
    return 0;
  }

  /** check(), plus the shared counter when there is one. Call before a store lookup. */
  async checkShared(ip: string): Promise<void> {
    this.check(ip);
    if (this.fallback === undefined) return;
    let res: RateLimiterRes | null;
    try {
      res = await this.call((limiter) => limiter.get(ip));
    } catch (error) {
      this.options.logger.warn({ err: error }, 'failed-auth throttle: cannot read the counter; allowing');
      return;
    }
    if (res && res.consumedPoints >= this.options.maxAttempts && res.msBeforeNext > 0) {
      this.block(ip, res.msBeforeNext);
      throw rateLimited(res.msBeforeNext);
    }
  }

  /**
   * Counts one failed attempt, and that count is the check: the increment and its result are
   * one atomic call (a Lua script on Redis), so attempts in flight together are numbered one
   * by one and only the first `maxAttempts` of a window are answered as failed keys. Resolves
   * to the 429 to answer instead when this attempt is past the limit (and blocks the address),
   * else undefined. Never rejects: when the count cannot be taken at all, the attempt is
   * answered as the failed key it is.
   */
  async recordFailure(ip: string): Promise<GatewayError | undefined> {
    try {
      const res = await this.call((limiter) => limiter.consume(ip));
      if (res.remainingPoints <= 0) {
        await this.call((limiter) => limiter.block(ip, toSeconds(this.options.blockForMs)));
        this.block(ip, this.options.blockForMs);
      }
      return undefined;
    } catch (error) {
      if (error instanceof RateLimiterRes) {
        const blockedForMs = error.msBeforeNext > 0 ? error.msBeforeNext : this.options.blockForMs;
        this.block(ip, blockedForMs);
        return rateLimited(blockedForMs);
      }
      this.options.logger.warn({ err: error }, 'failed-auth throttle: cannot count a failed attempt');
      return undefined;
    }
  }

  /**
   * One limiter call: the shared counter, or this instance's own when the Redis command
   * fails (counted). A refusal (RateLimiterRes: no points left) is an answer, not a failure.
   */
  private async call<T>(run: (limiter: RateLimiterAbstract) => Promise<T>): Promise<T> {
    try {
      if (this.fallback === undefined) return await run(this.limiter);
      const timeoutMs = this.commandTimeoutMs;
      return await withDeadline(run(this.limiter), timeoutMs, () => new DeadlineExceededError(timeoutMs, 'failed-auth counter'));
    } catch (error) {
      if (error instanceof RateLimiterRes || this.fallback === undefined) throw error;
      metrics.redisErrors.inc({ op: 'authfail' });
      return run(this.fallback);
    }
  }

  private block(ip: string, forMs: number): void {
    if (!this.blockedUntil.has(ip) && this.blockedUntil.size >= this.maxTracked) {
      const oldest = this.blockedUntil.keys().next();
      if (!oldest.done) this.blockedUntil.delete(oldest.value);
    }
    this.blockedUntil.set(ip, this.options.clock.now() + forMs);
  }
}

function rateLimited(remainingMs: number): GatewayError {
  return new GatewayError('rate_limit_exceeded', {
    message: 'Too many failed API key attempts from this address; retry after the time in the Retry-After header.',
    retryAfterSeconds: toSeconds(remainingMs),
  });
}
