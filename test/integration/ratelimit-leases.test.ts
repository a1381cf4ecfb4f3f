// Leases (docs/rate-limits.md "Leases") against a real Redis: a busy subject is served with
// few round trips, several instances never admit more than the limit between them, and
// every reserved unit that was not used goes back to Redis.
import { describe, expect, it } from 'vitest';
import type { RateLimitDecision, RateWindow } from '../../src/ratelimit/rate-limiter.js';
import { MAX_LEASE_MS } from '../../src/ratelimit/rate-limit-leases.js';
import { RateLimitStoreTimeoutError } from '../../src/ratelimit/rate-limit-store-error.js';
import { RedisRateLimiter } from '../../src/ratelimit/redis-rate-limiter.js';
import { lcg } from '../helpers/lcg.js';
import { leasesOver, useLeaseLimiterRedis } from '../helpers/rate-limit-leases.js';

const PREFIX = 'lease-test:';

const leases = useLeaseLimiterRedis({ prefix: PREFIX, commandTimeoutMs: 2_000, controllable: true });
const { instance, scriptCalls, counted, earlyInBucket } = leases;

describe('RedisRateLimiter with leases', () => {
  it('serves a busy subject with far fewer script calls than requests, remaining counting down by one each time', async () => {
    const limiter = instance();
    const windows: RateWindow[] = [{ name: 'minute', limit: 100_000, windowMs: 60_000, kind: 'requests' as const, scope: 'subject' as const }, { name: 'day', limit: 1_000_000, windowMs: 86_400_000, kind: 'requests' as const, scope: 'subject' as const }];
    const before = await scriptCalls();
    const remaining: number[] = [];
    for (let i = 0; i < 3_000; i += 1) {
      const decision = await limiter.consume('account:busy', windows);
      expect(decision.allowed).toBe(true);
      remaining.push(decision.windows[0]!.remaining);
    }
    const calls = (await scriptCalls()) - before;
    // Without leases every one of these awaited requests is its own call.
    expect(calls).toBeLessThan(300);
    expect(remaining).toEqual(Array.from({ length: 3_000 }, (_, i) => 99_999 - i));
    // Units reserved and not used are given back: Redis ends up counting the admitted ones.
    await leasesOver();
    expect(await counted('account:busy', 'minute')).toBe(3_000);
    expect(await counted('account:busy', 'day')).toBe(3_000);
  });

  it('consumeNow decides from a lease without waiting; mixed with consume, the count stays exact', async () => {
    const limiter = instance();
    const windows: RateWindow[] = [{ name: 'minute', limit: 100_000, windowMs: 60_000, kind: 'requests' as const, scope: 'subject' as const }];
    // Without a lease there is nothing to decide from, and nothing is counted.
    expect(limiter.consumeNow('account:mixed', windows)).toBeUndefined();
    expect(await counted('account:mixed', 'minute')).toBe(0);
    let withoutWaiting = 0;
    const remaining: number[] = [];
    for (let i = 0; i < 3_000; i += 1) {
      let decision = limiter.consumeNow('account:mixed', windows);
      if (decision === undefined) decision = await limiter.consume('account:mixed', windows);
      else withoutWaiting += 1;
      expect(decision.allowed).toBe(true);
      remaining.push(decision.windows[0]!.remaining);
    }
    expect(withoutWaiting).toBeGreaterThan(2_500);
    expect(remaining).toEqual(Array.from({ length: 3_000 }, (_, i) => 99_999 - i));
    await leasesOver();
    expect(await counted('account:mixed', 'minute')).toBe(3_000);
    // A limiter without leases never decides without Redis (a plan without windows aside).
    const plain = new RedisRateLimiter({ client: leases.admin, prefix: PREFIX, commandTimeoutMs: 2_000 });
    await plain.consume('account:plain', windows);
    expect(plain.consumeNow('account:plain', windows)).toBeUndefined();
    expect(plain.consumeNow('account:plain', [])).toMatchObject({ allowed: true, windows: [] });
    await plain.close();
  });

  it('asks for no lease while what is left is small: every request is then its own call', async () => {
    const limiter = instance();
    const windows: RateWindow[] = [{ name: 'minute', limit: 15, windowMs: 60_000, kind: 'requests' as const, scope: 'subject' as const }];
    const before = await scriptCalls();
    const decisions: RateLimitDecision[] = [];
    for (let i = 0; i < 20; i += 1) decisions.push(await limiter.consume('account:small', windows));
    expect((await scriptCalls()) - before).toBe(20);
    expect(decisions.filter((d) => d.allowed)).toHaveLength(15);
    expect(await counted('account:small', 'minute')).toBe(15);
  });

  // 4,000 requests: the quota runs out mid-run; 2,050: it is still nearly whole at the end.
  for (const [seed, total] of [[11, 4_000], [2027, 2_050]] as const) {
    it(`three instances in random bursts never admit more than the limit, and every unused unit comes back (seed ${seed}, ${total} requests)`, async () => {
      const limiters = [instance(), instance(), instance()];
      const windows: RateWindow[] = [{ name: 'minute', limit: 2_000, windowMs: 60_000, kind: 'requests' as const, scope: 'subject' as const }];
      const random = lcg(seed);
      const subject = `account:race${seed}`;
      let admitted = 0;
      let refused = 0;
      const bursts: Array<Promise<void>> = [];
      // Over a second of bursts (spanning bucket ends, so leases end and are given back
      // meanwhile) for a limit of 2,000.
      const startedMs = performance.now();
      let sent = 0;
      while (sent < total) {
        const limiter = limiters[Math.floor(random() * limiters.length)]!;
        const size = Math.min(total - sent, 1 + Math.floor(random() * (total / 100)));
        sent += size;
        bursts.push(
          Promise.all(Array.from({ length: size }, () => limiter.consume(subject, windows))).then((decisions) => {
            for (const decision of decisions) {
              if (decision.allowed) admitted += 1;
              else refused += 1;
            }
          }),
        );
        await new Promise((resolve) => setTimeout(resolve, Math.floor(random() * 12)));
      }
      await Promise.all(bursts);
      expect(performance.now() - startedMs).toBeGreaterThan(MAX_LEASE_MS);
      expect(admitted + refused).toBe(total);
      expect(admitted).toBeLessThanOrEqual(2_000);
      // Leases held by one instance may have refused another's requests meanwhile; once they
      // have ended and been given back, exactly the rest of the limit is admitted.
      await leasesOver();
      expect(await counted(subject, 'minute')).toBe(admitted);
      let more = 0;
      for (;;) {
        const decision = await limiters[more % 3]!.consume(subject, windows);
        if (!decision.allowed) break;
        more += 1;
      }
      expect(admitted + more).toBe(2_000);
    });
  }

  it('gives a lease back when the windows change (config reload) and when the limiter closes', async () => {
    const limiter = instance();
    const before: RateWindow[] = [{ name: 'minute', limit: 10_000, windowMs: 60_000, kind: 'requests' as const, scope: 'subject' as const }];
    await earlyInBucket();
    for (let i = 0; i < 50; i += 1) await limiter.consume('account:reload', before);
    // Busy enough for a lease: Redis counts more than was admitted.
    expect(await counted('account:reload', 'minute')).toBeGreaterThan(50);
    const after: RateWindow[] = [{ name: 'minute', limit: 20_000, windowMs: 60_000, kind: 'requests' as const, scope: 'subject' as const }];
    for (let i = 0; i < 50; i += 1) await limiter.consume('account:reload', after);
    expect(await counted('account:reload', 'minute')).toBeGreaterThan(100);
    await limiter.close();
    expect(await counted('account:reload', 'minute')).toBe(100);
  });

  it('admits what it had leased while Redis hangs, then fails over like any call once the lease runs out', async () => {
    // Without renewal: a renewal sent while Redis hangs would be a second call (its own test is
    // in ratelimit-lease-renewal.test.ts).
    // A lease ends with its 1 s bucket. On a loaded machine the calls below can take longer
    // than what is left of the bucket (seen at load 13), so the limiter's clock stands still
    // from the first call: what is asserted is what the lease holds, not how fast the machine
    // gets there.
    let stoppedAt: number | undefined;
    const limiter = instance(150, { renewLeases: false, now: () => stoppedAt ?? performance.now() });
    const windows: RateWindow[] = [{ name: 'minute', limit: 100_000, windowMs: 60_000, kind: 'requests' as const, scope: 'subject' as const }];
    // Two calls: the first dates the subject, the second asks for a lease (twice the last, plus itself).
    await earlyInBucket();
    stoppedAt = performance.now();
    await limiter.consume('account:outage', windows);
    await limiter.consume('account:outage', windows);
    const before = await scriptCalls();
    leases.redis.pause();
    try {
      // The lease the second call brought: counted in Redis already, so admitted without it.
      const leased = await limiter.consume('account:outage', windows);
      expect(leased.allowed).toBe(true);
      const error = await limiter.consume('account:outage', windows).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RateLimitStoreTimeoutError);
    } finally {
      leases.redis.resume();
    }
    // The lease-served request sent nothing; the refused one is the only call while paused.
    // Read twice: the refused call waits in its socket while Redis is paused, and after the
    // resume Redis may read this INFO before it in the same pass over its clients; it answers
    // only after that pass, so the second INFO counts every call sent while paused.
    await scriptCalls();
    expect((await scriptCalls()) - before).toBe(1);
  });
});

