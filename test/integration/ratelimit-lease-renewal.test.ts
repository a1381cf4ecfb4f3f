// Leases renewed ahead (docs/rate-limits.md "Leases", decision 0029) against a real Redis: a
// busy subject's next lease is brought by one background call while the current one still
// admits, so at a steady rate no request waits for Redis across a lease hand-over; counts
// stay exact across instances; a renewal that fails changes nothing for requests. The
// limiter's clock is injected: the test moves it one millisecond per request (a steady
// 1,000 requests a second) and yields to the event loop between requests so replies land.
import { describe, expect, it } from 'vitest';
import type { RateLimitDecision, RateWindow } from '../../src/ratelimit/rate-limiter.js';
import { RateLimitStoreError } from '../../src/ratelimit/rate-limit-store-error.js';
import { rateLimitKey, type RedisRateLimiter } from '../../src/ratelimit/redis-rate-limiter.js';
import { lcg } from '../helpers/lcg.js';
import { leasesOver, useLeaseLimiterRedis } from '../helpers/rate-limit-leases.js';

const PREFIX = 'lease-renewal-test:';

const leases = useLeaseLimiterRedis({ prefix: PREFIX, commandTimeoutMs: 2_000, controllable: true });
const { instance, counted } = leases;

/** Redis's clock in ms (the script counts in it, not in the limiter's). */
async function redisNowMs(): Promise<number> {
  const [seconds, micros] = await leases.admin.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

const WINDOWS: RateWindow[] = [{ name: 'minute', limit: 1_000_000, windowMs: 60_000, kind: 'requests' as const, scope: 'subject' as const }];
const nextTimer = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 0));

/** A clock the test moves by hand. */
function manualClock(startMs = 1_000_000): { now: () => number; advance(ms: number): void } {
  let nowMs = startMs;
  return {
    now: () => nowMs,
    advance(ms) {
      nowMs += ms;
    },
  };
}

/** One request the way the gateway asks: from the lease without waiting, else awaited. */
async function request(limiter: RedisRateLimiter, subject: string): Promise<{ decision: RateLimitDecision; awaited: boolean }> {
  const now = limiter.consumeNow(subject, WINDOWS);
  if (now !== undefined) return { decision: now, awaited: false };
  return { decision: await limiter.consume(subject, WINDOWS), awaited: true };
}

/** `steps` requests, one per clock millisecond, yielding to the event loop after each. */
async function steady(limiter: RedisRateLimiter, clock: { advance(ms: number): void }, subject: string, steps: number): Promise<{ admitted: number; awaited: number }> {
  let admitted = 0;
  let awaited = 0;
  for (let i = 0; i < steps; i += 1) {
    clock.advance(1);
    const { decision, awaited: waited } = await request(limiter, subject);
    if (decision.allowed) admitted += 1;
    if (waited) awaited += 1;
    await nextTimer();
  }
  return { admitted, awaited };
}

describe('RedisRateLimiter lease renewal', () => {
  it('renews a busy subject ahead: at a steady rate no request waits for Redis across lease hand-overs, and Redis counts exactly the admitted', async () => {
    const clock = manualClock();
    const limiter = instance(undefined, { now: clock.now });
    // Ramp-up: the first call leases nothing, then leases double up to a second's worth.
    const warm = await steady(limiter, clock, 'account:steady', 1_500);
    const callsBefore = limiter.counters.requestCalls;
    const renewalsBefore = limiter.counters.renewals;
    const aheadBefore = limiter.counters.renewalsAhead;
    // Four seconds at 1,000 a second: several leases end (their units spent, or their time).
    const run = await steady(limiter, clock, 'account:steady', 4_000);
    expect(run.admitted).toBe(4_000);
    expect(run.awaited).toBe(0);
    expect(limiter.counters.requestCalls).toBe(callsBefore);
    // At least one lease a second, some of them counted from the lease they replaced.
    expect(limiter.counters.renewals - renewalsBefore).toBeGreaterThanOrEqual(4);
    expect(limiter.counters.renewalsAhead - aheadBefore).toBeGreaterThanOrEqual(1);
    expect(limiter.counters.renewalsFailed).toBe(0);
    // Closing gives back what the last lease did not use: Redis counts exactly the admitted.
    await limiter.close();
    expect(await counted('account:steady', 'minute')).toBe(warm.admitted + run.admitted);
  });

  it('a later call never shortens the life of a bucket a lease was counted ahead in (the key lives until its newest bucket stops counting)', async () => {
    await leases.earlyInBucket();
    const key = rateLimitKey(PREFIX, 'account:ahead', 'minute');
    const current = Math.floor((await redisNowMs()) / 1_000);
    // What a renewal ahead leaves: units counted in the next 1 s bucket of the minute window.
    await leases.admin.hset(key, 'bw', '1000', String(current + 1), '5');
    // A first call of another instance counts now, and sets the key's TTL.
    const decision = await instance().consume('account:ahead', WINDOWS);
    expect(decision.allowed).toBe(true);
    const ttlMs = await leases.admin.pttl(key);
    const afterMs = await redisNowMs();
    // Bucket current+1 counts until (current + 2) s + the window: the key must live that long.
    // A TTL of window + bucket from now (the rule before) ends up to a bucket earlier.
    expect(ttlMs).toBeGreaterThanOrEqual((current + 2) * 1_000 + 60_000 - afterMs - 1);
    expect(await counted('account:ahead', 'minute')).toBe(6);
  });

  it('with renewal off, the same steady run waits for Redis at lease ends (the test above can fail)', async () => {
    const clock = manualClock();
    const limiter = instance(undefined, { now: clock.now, renewLeases: false });
    await steady(limiter, clock, 'account:no-renewal', 1_500);
    const run = await steady(limiter, clock, 'account:no-renewal', 4_000);
    expect(limiter.counters.renewals).toBe(0);
    expect(run.awaited).toBeGreaterThanOrEqual(4);
  });

  it('two instances with renewal on never admit more than the limit, and every unused unit comes back', async () => {
    const limiters = [instance(), instance()];
    const windows: RateWindow[] = [{ name: 'minute', limit: 3_000, windowMs: 60_000, kind: 'requests' as const, scope: 'subject' as const }];
    const subject = 'account:two';
    const random = lcg(29);
    let admitted = 0;
    let refused = 0;
    const pending: Array<Promise<void>> = [];
    // About three seconds of small bursts on both instances (leases end, are renewed and
    // replaced meanwhile), 4,000 requests for a limit of 3,000.
    for (let sent = 0; sent < 4_000; ) {
      const limiter = limiters[Math.floor(random() * 2)]!;
      const size = Math.min(4_000 - sent, 1 + Math.floor(random() * 6));
      sent += size;
      for (let i = 0; i < size; i += 1) {
        const now = limiter.consumeNow(subject, windows);
        const decided = now === undefined ? limiter.consume(subject, windows) : Promise.resolve(now);
        pending.push(
          decided.then((decision) => {
            if (decision.allowed) admitted += 1;
            else refused += 1;
          }),
        );
      }
      await new Promise((resolve) => setTimeout(resolve, Math.floor(random() * 4)));
    }
    await Promise.all(pending);
    expect(admitted + refused).toBe(4_000);
    expect(admitted).toBeLessThanOrEqual(3_000);
    expect(limiters[0]!.counters.renewals + limiters[1]!.counters.renewals).toBeGreaterThan(0);
    await leasesOver();
    expect(await counted(subject, 'minute')).toBe(admitted);
    let more = 0;
    for (;;) {
      const decision = await limiters[more % 2]!.consume(subject, windows);
      if (!decision.allowed) break;
      more += 1;
    }
    expect(admitted + more).toBe(3_000);
  });

  it('a renewal that fails (Redis stopped) changes nothing: the lease admits all its units, then requests go to Redis as without renewal', async () => {
    const clock = manualClock();
    const limiter = instance(300, { now: clock.now });
    await steady(limiter, clock, 'account:down', 1_500);
    // Let any renewal on its way land, then hold the clock: the lease cannot end by time.
    await new Promise((resolve) => setTimeout(resolve, 100));
    const lease = limiter.leaseOf('account:down');
    expect(lease).toMatchObject({ requesting: false, renewing: false });
    const units = lease!.units;
    expect(units).toBeGreaterThan(8);
    const renewals = limiter.counters.renewals;
    await leases.redis.stop();
    try {
      let served = 0;
      // Up to the renewal: it is sent once the lease runs low, and fails.
      while (limiter.counters.renewals === renewals) {
        expect(limiter.consumeNow('account:down', WINDOWS)?.allowed).toBe(true);
        served += 1;
        await nextTimer();
      }
      while (limiter.counters.renewalsFailed === 0) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(limiter.leaseOf('account:down')).toMatchObject({ requesting: false, renewing: true });
      // The rest of the lease is still admitted, and no second renewal is tried.
      for (;;) {
        const decision = limiter.consumeNow('account:down', WINDOWS);
        if (decision === undefined) break;
        expect(decision.allowed).toBe(true);
        served += 1;
      }
      expect(served).toBe(units);
      expect(limiter.counters.renewals).toBe(renewals + 1);
      expect(limiter.counters.renewalsFailed).toBe(1);
      // Then the store-error path, as for any call.
      await expect(limiter.consume('account:down', WINDOWS)).rejects.toBeInstanceOf(RateLimitStoreError);
    } finally {
      await leases.redis.start();
    }
  });
});
