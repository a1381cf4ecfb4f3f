// Redis first; when it errors or times out, rate_limits.on_store_error decides (docs/design.md,
// "Plans and limits"): `allow` counts in this instance's memory instead, `deny` answers 503
// store_unavailable. A short breaker keeps a dead Redis from costing command_timeout on every
// request: after a failure Redis is skipped for breakerOpenMs, then one request probes it; when
// the probe succeeds every request goes back to Redis.
import { systemClock, type Clock } from '../clock.js';
import { GatewayError } from '../errors.js';
import type { Logger } from '../logger.js';
import { metrics } from '../metrics/metrics.js';
import type { ChargeUsage, RateLimitDecision, ScopeKeys, RateLimiter, RateWindow, StreamCap } from './rate-limiter.js';
import { RateLimitStoreError } from './rate-limit-store-error.js';

export type StoreErrorMode = 'allow' | 'deny';

export interface FailoverRateLimiterOptions {
  /** The shared limiter (RedisRateLimiter). */
  primary: RateLimiter;
  /** Used in `allow` mode while the primary is failing (MemoryRateLimiter). */
  fallback: RateLimiter;
  /** config.rateLimits.onStoreError. */
  mode: StoreErrorMode;
  logger: Logger;
  clock?: Clock;
  /** How long Redis is skipped after a failure before one request probes it. Default 1000 ms. */
  breakerOpenMs?: number;
}

export class FailoverRateLimiter implements RateLimiter {
  private readonly primary: RateLimiter;
  private readonly fallback: RateLimiter;
  private readonly mode: StoreErrorMode;
  private readonly logger: Logger;
  private readonly clock: Clock;
  private readonly breakerOpenMs: number;
  /** Set from the first failure until a call to the primary succeeds again. */
  private outageSinceMs: number | undefined;
  private skipPrimaryUntilMs = 0;
  private probing = false;

  constructor(options: FailoverRateLimiterOptions) {
    this.primary = options.primary;
    this.fallback = options.fallback;
    this.mode = options.mode;
    this.logger = options.logger;
    this.clock = options.clock ?? systemClock;
    this.breakerOpenMs = options.breakerOpenMs ?? 1_000;
  }

  /** True while the primary is considered down (for /readyz-style diagnostics). */
  get degraded(): boolean {
    return this.outageSinceMs !== undefined;
  }

  // Not async: the common case hands back tryPrimary's promise as it is, without wrapping it
  // in another (one promise and three microtask hops fewer per request).
  // A stream's slot comes from whichever limiter decided: its release() goes back to that one
  // (a slot taken in memory during an outage is released in memory after it).
  consume(subject: string, windows: readonly RateWindow[], cap?: StreamCap, scopes?: ScopeKeys): Promise<RateLimitDecision> {
    if (this.outageSinceMs === undefined) return this.tryPrimary(subject, windows, false, cap, scopes);
    // During an outage: skip Redis while the breaker is open, and let only one request probe.
    if (this.probing || this.clock.now() < this.skipPrimaryUntilMs) return this.withoutPrimary(subject, windows, cap, scopes);
    this.probing = true;
    return this.tryPrimary(subject, windows, true, cap, scopes);
  }

  /** As consume() would decide, where that needs no wait: the primary's own answer, or the fallback's while the breaker is open in `allow` mode. */
  consumeNow(subject: string, windows: readonly RateWindow[], cap?: StreamCap, scopes?: ScopeKeys): RateLimitDecision | undefined {
    if (this.outageSinceMs === undefined) return this.primary.consumeNow(subject, windows, cap, scopes);
    if (this.probing || this.clock.now() < this.skipPrimaryUntilMs) return this.mode === 'allow' ? this.fallback.consumeNow(subject, windows, cap, scopes) : undefined;
    // The probe that may end the outage has to ask Redis.
    return undefined;
  }

  /**
   * To Redis while it answers; during an outage to the fallback (in `allow` mode it admits
   * from those local counts; in `deny` mode nothing is admitted, so they only keep count).
   * A charge lost with Redis going down is not replayed (docs/rate-limits.md "Token budgets").
   */
  charge(subject: string, windows: readonly RateWindow[], usage: ChargeUsage, scopes?: ScopeKeys): void {
    if (this.outageSinceMs === undefined) this.primary.charge(subject, windows, usage, scopes);
    else this.fallback.charge(subject, windows, usage, scopes);
  }

  async close(): Promise<void> {
    await Promise.all([this.primary.close(), this.fallback.close()]);
  }

  private async tryPrimary(subject: string, windows: readonly RateWindow[], probe: boolean, cap: StreamCap | undefined, scopes?: ScopeKeys): Promise<RateLimitDecision> {
    let decision: RateLimitDecision;
    try {
      decision = await this.primary.consume(subject, windows, cap, scopes);
    } catch (error) {
      if (probe) this.probing = false;
      if (!(error instanceof RateLimitStoreError)) throw error;
      this.recordFailure(error);
      return this.withoutPrimary(subject, windows, cap, scopes);
    }
    if (probe) this.probing = false;
    if (this.outageSinceMs !== undefined) {
      this.logger.info({ outageMs: this.clock.now() - this.outageSinceMs }, 'rate-limit store answers again; back to shared limits');
      this.outageSinceMs = undefined;
    }
    return decision;
  }

  private recordFailure(error: RateLimitStoreError): void {
    metrics.redisErrors.inc({ op: 'ratelimit' });
    const nowMs = this.clock.now();
    this.skipPrimaryUntilMs = nowMs + this.breakerOpenMs;
    if (this.outageSinceMs !== undefined) return;
    this.outageSinceMs = nowMs;
    this.logger.warn(
      { err: error, mode: this.mode },
      this.mode === 'allow'
        ? 'rate-limit store unavailable; counting in this instance only until it answers again'
        : 'rate-limit store unavailable; answering 503 store_unavailable until it answers again',
    );
  }

  private withoutPrimary(subject: string, windows: readonly RateWindow[], cap: StreamCap | undefined, scopes?: ScopeKeys): Promise<RateLimitDecision> {
    if (this.mode === 'deny') return Promise.reject(new GatewayError('store_unavailable', { retryAfterSeconds: 1 }));
    return this.fallback.consume(subject, windows, cap, scopes);
  }
}
