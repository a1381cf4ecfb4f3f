import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/clock.js';
import { GatewayError } from '../../../src/errors.js';
import { FailoverRateLimiter, type StoreErrorMode } from '../../../src/ratelimit/failover-rate-limiter.js';
import { MemoryRateLimiter } from '../../../src/ratelimit/memory-rate-limiter.js';
import type { RateLimitDecision, RateLimiter, RateWindow } from '../../../src/ratelimit/rate-limiter.js';
import { RateLimitStoreError, RateLimitStoreTimeoutError } from '../../../src/ratelimit/rate-limit-store-error.js';
import { captureLogLines } from '../../helpers/log-capture.js';
import { redisErrorCount } from '../../helpers/metric-counts.js';

const WINDOWS: RateWindow[] = [{ name: 'minute', limit: 2, windowMs: 60_000, kind: 'requests' as const, scope: 'subject' as const }];
const PRIMARY_DECISION: RateLimitDecision = { allowed: true, windows: [{ name: 'minute', limit: 2, windowMs: 60_000, remaining: 1, resetMs: 0, recoverMs: 60_999 }], retryAfterMs: 0 };

/** A stand-in for the Redis limiter (the interface, not Redis): fails while `down`. */
class SwitchablePrimary implements RateLimiter {
  down = false;
  calls = 0;
  failure: Error = new RateLimitStoreTimeoutError(100);
  pending: Array<() => void> = [];
  hold = false;
  /** What consumeNow answers (a lease's decision, in the Redis limiter). */
  nowDecision: RateLimitDecision | undefined = undefined;
  consumeNow(): RateLimitDecision | undefined {
    return this.nowDecision;
  }

  async consume(): Promise<RateLimitDecision> {
    this.calls += 1;
    if (this.hold) await new Promise<void>((resolve) => this.pending.push(resolve));
    if (this.down) throw this.failure;
    return PRIMARY_DECISION;
  }
  charged: number[] = [];
  charge(_subject: string, _windows: unknown, usage: { tokens: number }): void {
    this.charged.push(usage.tokens);
  }
  async close(): Promise<void> {}
}

function setup(mode: StoreErrorMode) {
  const clock = new ManualClock();
  const primary = new SwitchablePrimary();
  const { logger, lines } = captureLogLines();
  const limiter = new FailoverRateLimiter({ primary, fallback: new MemoryRateLimiter({ clock }), mode, logger, clock, breakerOpenMs: 1_000 });
  // The gateway's own counter: what this limiter added since it was made.
  const before = redisErrorCount('ratelimit');
  const errorCount = async () => (await redisErrorCount('ratelimit')) - (await before);
  const flushLogs = () => new Promise((resolve) => setImmediate(resolve));
  return { clock, primary, lines, limiter, errorCount, flushLogs };
}

describe('FailoverRateLimiter.consumeNow', () => {
  it('answers what the primary can decide now while it is healthy, the fallback while the breaker is open in allow mode, and nothing when Redis must be asked', async () => {
    const { limiter, primary, clock } = setup('allow');
    expect(limiter.consumeNow('s', WINDOWS)).toBeUndefined();
    primary.nowDecision = PRIMARY_DECISION;
    expect(limiter.consumeNow('s', WINDOWS)).toBe(PRIMARY_DECISION);
    primary.down = true;
    await limiter.consume('s', WINDOWS);
    // Breaker open: the memory limiter decides, on the counts consume() started.
    expect(limiter.consumeNow('s', WINDOWS)).toMatchObject({ allowed: true, windows: [{ remaining: 0 }] });
    expect(limiter.consumeNow('s', WINDOWS)?.allowed).toBe(false);
    // Breaker closed again: the next call is the probe, which has to ask Redis.
    clock.advance(1_000);
    expect(limiter.consumeNow('s', WINDOWS)).toBeUndefined();
    expect(primary.calls).toBe(1);
  });

  it('in deny mode leaves an outage to consume(), which answers store_unavailable', async () => {
    const { limiter, primary } = setup('deny');
    primary.down = true;
    await limiter.consume('s', WINDOWS).catch(() => {});
    expect(limiter.consumeNow('s', WINDOWS)).toBeUndefined();
    await expect(limiter.consume('s', WINDOWS)).rejects.toMatchObject({ type: 'store_unavailable' });
  });
});

describe('FailoverRateLimiter, mode allow', () => {
  it('uses the primary while it answers', async () => {
    const { limiter, primary } = setup('allow');
    expect(await limiter.consume('s', WINDOWS)).toBe(PRIMARY_DECISION);
    expect(primary.calls).toBe(1);
    expect(limiter.degraded).toBe(false);
  });

  it('falls back to memory on a store error, warns once per outage, counts every failed call', async () => {
    const { limiter, primary, lines, errorCount, clock, flushLogs } = setup('allow');
    primary.down = true;
    const first = await limiter.consume('s', WINDOWS);
    expect(first.windows[0]!.remaining).toBe(1); // the memory limiter's own count
    expect(limiter.degraded).toBe(true);
    // Breaker open: Redis is not asked again for 1 s, the memory limiter keeps counting.
    expect((await limiter.consume('s', WINDOWS)).allowed).toBe(true);
    expect((await limiter.consume('s', WINDOWS)).allowed).toBe(false);
    expect(primary.calls).toBe(1);
    clock.advance(1_000);
    await limiter.consume('s', WINDOWS); // probe, fails again
    expect(primary.calls).toBe(2);
    expect(await errorCount()).toBe(2);
    await flushLogs();
    expect(lines.filter((l) => l.level === 'warn')).toHaveLength(1);

    primary.down = false;
    clock.advance(999);
    await limiter.consume('s', WINDOWS);
    expect(primary.calls).toBe(2);
    clock.advance(1);
    expect(await limiter.consume('s', WINDOWS)).toBe(PRIMARY_DECISION);
    expect(limiter.degraded).toBe(false);
    expect(await limiter.consume('s', WINDOWS)).toBe(PRIMARY_DECISION);
    await flushLogs();
    expect(lines.filter((l) => l.level === 'info').map((l) => l.msg)).toEqual([expect.stringContaining('answers again')]);

    // A second outage warns again.
    primary.down = true;
    await limiter.consume('s', WINDOWS);
    await flushLogs();
    expect(lines.filter((l) => l.level === 'warn')).toHaveLength(2);
  });

  it('lets only one request probe a recovering store', async () => {
    const { limiter, primary, clock } = setup('allow');
    primary.down = true;
    await limiter.consume('s', WINDOWS);
    clock.advance(1_000);
    primary.down = false;
    primary.hold = true;
    const probe = limiter.consume('s', WINDOWS);
    const others = await Promise.all([limiter.consume('s', WINDOWS), limiter.consume('s', WINDOWS)]);
    expect(others.every((d) => d !== PRIMARY_DECISION)).toBe(true);
    expect(primary.calls).toBe(2);
    primary.hold = false;
    for (const resolve of primary.pending) resolve();
    expect(await probe).toBe(PRIMARY_DECISION);
  });

  it('passes errors that are not store errors through instead of hiding bugs', async () => {
    const { limiter, primary, errorCount } = setup('allow');
    primary.down = true;
    primary.failure = new TypeError('bad subject');
    await expect(limiter.consume('s', WINDOWS)).rejects.toThrow(TypeError);
    expect(await errorCount()).toBe(0);
    expect(limiter.degraded).toBe(false);
  });
});

describe('FailoverRateLimiter, mode deny', () => {
  it('answers store_unavailable with Retry-After 1 while the store fails, then recovers by itself', async () => {
    const { limiter, primary, clock, errorCount } = setup('deny');
    primary.down = true;
    primary.failure = new RateLimitStoreError('connection refused');
    const error = await limiter.consume('s', WINDOWS).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GatewayError);
    expect(error).toMatchObject({ type: 'store_unavailable', status: 503, retryAfterSeconds: 1 });
    await expect(limiter.consume('s', WINDOWS)).rejects.toMatchObject({ type: 'store_unavailable' });
    expect(primary.calls).toBe(1);
    expect(await errorCount()).toBe(1);
    primary.down = false;
    clock.advance(1_000);
    expect(await limiter.consume('s', WINDOWS)).toBe(PRIMARY_DECISION);
  });
});
