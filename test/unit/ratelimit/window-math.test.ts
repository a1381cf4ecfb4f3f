import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/clock.js';
import { MemoryRateLimiter } from '../../../src/ratelimit/memory-rate-limiter.js';
import type { RateWindow } from '../../../src/ratelimit/rate-limiter.js';
import { bucketWidthMs, consumeWindows, newBucketCounter } from '../../../src/ratelimit/window-math.js';

// A start time on a 100 ms bucket boundary (and on a 1 s and 24 min one), so expected times are exact.
const T0 = 1_699_200_000_000;
const FIVE_PER_2S: RateWindow[] = [{ name: 'burst', limit: 5, windowMs: 2_000, kind: 'requests' as const, scope: 'subject' as const }];

function setup(windows: RateWindow[] = FIVE_PER_2S) {
  const clock = new ManualClock(T0);
  const limiter = new MemoryRateLimiter({ clock });
  return { clock, limiter, consume: () => limiter.consume('account:acme', windows) };
}

describe('bucketWidthMs', () => {
  it('splits a window into about 60 buckets, never finer than 100 ms nor wider than the window', () => {
    expect(bucketWidthMs(60_000)).toBe(1_000);
    expect(bucketWidthMs(86_400_000)).toBe(1_440_000);
    expect(bucketWidthMs(3_600_000)).toBe(60_000);
    expect(bucketWidthMs(2_000)).toBe(100);
    expect(bucketWidthMs(50)).toBe(50);
  });
});

describe('sliding window math', () => {
  it('counts remaining down and rejects the 6th of 5 per 2 s', async () => {
    const { consume } = setup();
    const remaining: number[] = [];
    for (let i = 0; i < 5; i += 1) {
      const decision = await consume();
      expect(decision.allowed).toBe(true);
      remaining.push(decision.windows[0]!.remaining);
    }
    expect(remaining).toEqual([4, 3, 2, 1, 0]);
    const sixth = await consume();
    expect(sixth.allowed).toBe(false);
    expect(sixth.windows[0]).toMatchObject({ name: 'burst', limit: 5, windowMs: 2_000, remaining: 0 });
    // The 5 requests sit in the bucket [T0, T0+100): it stops counting at T0 + 100 + 2000 - 1.
    expect(sixth.retryAfterMs).toBe(2_099);
    expect(sixth.windows[0]!.resetMs).toBe(2_099);
  });

  it('reports resetMs 0 while requests are left and the time to a free slot once exhausted', async () => {
    const { consume, clock } = setup();
    expect((await consume()).windows[0]!.resetMs).toBe(0);
    clock.advance(500);
    for (let i = 0; i < 3; i += 1) await consume();
    const fifth = await consume();
    expect(fifth.allowed).toBe(true);
    expect(fifth.windows[0]!.remaining).toBe(0);
    // Only one request must leave for a slot to open: the one at T0, 500 ms ago.
    expect(fifth.windows[0]!.resetMs).toBe(2_099 - 500);
  });

  it('reports recoverMs: until the oldest counted request leaves while requests remain, resetMs once exhausted', async () => {
    const { consume, clock } = setup();
    const first = await consume();
    // The bucket [T0, T0+100) stops counting at T0 + 2099; nothing else frees earlier.
    expect(first.windows[0]).toMatchObject({ remaining: 4, resetMs: 0, recoverMs: 2_099 });
    clock.advance(500);
    expect((await consume()).windows[0]).toMatchObject({ remaining: 3, resetMs: 0, recoverMs: 1_599 });
    await consume();
    await consume();
    const fifth = await consume();
    expect(fifth.windows[0]).toMatchObject({ remaining: 0, resetMs: 1_599, recoverMs: 1_599 });
    const rejected = await consume();
    expect(rejected.windows[0]).toMatchObject({ remaining: 0, resetMs: 1_599, recoverMs: 1_599 });
    // Once the T0 request has left, the four of T0+500 are the oldest: they leave at T0 + 2599.
    clock.set(T0 + 2_099);
    expect((await consume()).windows[0]).toMatchObject({ remaining: 0, resetMs: 500, recoverMs: 500 });
    clock.set(T0 + 2_599);
    // Only the request made at T0+2099 still counts (besides this one); its bucket leaves at T0 + 4099.
    expect((await consume()).windows[0]).toMatchObject({ remaining: 3, resetMs: 0, recoverMs: 4_099 - 2_599 });
  });

  it('reports recoverMs 0 for a window that counts nothing', () => {
    const limiter = new MemoryRateLimiter({ clock: new ManualClock(T0) });
    const one: RateWindow = { name: 'one', limit: 1, windowMs: 60_000, kind: 'requests' as const, scope: 'subject' as const };
    expect(limiter.consumeAt('account:acme', [one], T0).allowed).toBe(true);
    // A window added by a reload starts empty; the full one rejects, so it stays empty.
    const decision = limiter.consumeAt('account:acme', [one, { name: 'added', limit: 5, windowMs: 60_000, kind: 'requests' as const, scope: 'subject' as const }], T0 + 10);
    expect(decision.allowed).toBe(false);
    expect(decision.windows[1]).toMatchObject({ remaining: 5, resetMs: 0, recoverMs: 0 });
  });

  it('admits a client that waits exactly retryAfterMs, and not one that waits 1 ms less', async () => {
    const { consume, clock } = setup();
    clock.advance(50);
    for (let i = 0; i < 5; i += 1) await consume();
    const rejected = await consume();
    expect(rejected.allowed).toBe(false);
    clock.advance(rejected.retryAfterMs - 1);
    const early = await consume();
    expect(early.allowed).toBe(false);
    expect(early.retryAfterMs).toBe(1);
    clock.advance(1);
    expect((await consume()).allowed).toBe(true);
  });

  it('rejects the boundary burst a fixed window would let through', async () => {
    const { consume, clock } = setup();
    clock.advance(1_999); // the last millisecond of the fixed window [T0, T0+2000)
    for (let i = 0; i < 5; i += 1) expect((await consume()).allowed).toBe(true);
    clock.advance(1); // a fixed window would start over here
    for (let i = 0; i < 5; i += 1) expect((await consume()).allowed).toBe(false);
    clock.set(T0 + 3_998); // the true window (T0+1998, T0+3998] still holds all 5
    expect((await consume()).allowed).toBe(false);
    clock.set(T0 + 3_999); // ... and (T0+1999, T0+3999] holds none: the bucket ended with them
    expect((await consume()).allowed).toBe(true);
  });

  it('consumes nothing on a rejection, however often the client retries', async () => {
    const { consume, clock } = setup();
    for (let i = 0; i < 5; i += 1) await consume();
    const first = await consume();
    for (let i = 0; i < 50; i += 1) {
      clock.advance(10);
      const again = await consume();
      expect(again.allowed).toBe(false);
      expect(again.retryAfterMs).toBe(first.retryAfterMs - (i + 1) * 10);
    }
    clock.set(T0 + first.retryAfterMs);
    const admitted = await consume();
    expect(admitted.allowed).toBe(true);
    expect(admitted.windows[0]!.remaining).toBe(4);
  });

  it('frees slots bucket by bucket as they leave the window', async () => {
    const { consume, clock } = setup();
    await consume(); // bucket T0
    clock.advance(300);
    await consume();
    await consume(); // bucket T0+300
    clock.advance(300);
    await consume();
    await consume(); // bucket T0+600
    const rejected = await consume();
    expect(rejected.retryAfterMs).toBe(2_099 - 600);
    clock.set(T0 + 2_099);
    expect((await consume()).windows[0]!.remaining).toBe(0);
    const next = await consume();
    expect(next.allowed).toBe(false);
    // The two of T0+300 leave at T0+2399; one free slot is enough.
    expect(next.retryAfterMs).toBe(300);
  });
});

describe('several windows', () => {
  const MINUTE_AND_DAY: RateWindow[] = [
    { name: 'minute', limit: 3, windowMs: 60_000, kind: 'requests' as const, scope: 'subject' as const },
    { name: 'day', limit: 5, windowMs: 86_400_000, kind: 'requests' as const, scope: 'subject' as const },
  ];

  it('the tighter window answers, and every window must admit', async () => {
    const { consume, clock } = setup(MINUTE_AND_DAY);
    for (let i = 0; i < 3; i += 1) expect((await consume()).allowed).toBe(true);
    const minuteFull = await consume();
    expect(minuteFull.allowed).toBe(false);
    expect(minuteFull.windows.map((w) => w.remaining)).toEqual([0, 2]);
    expect(minuteFull.windows[1]!.resetMs).toBe(0);
    // minute bucket is 1 s: [T0, T0+1000) stops counting at T0 + 1000 + 60000 - 1
    expect(minuteFull.retryAfterMs).toBe(60_999);

    clock.advance(minuteFull.retryAfterMs);
    expect((await consume()).allowed).toBe(true);
    const fifth = await consume();
    expect(fifth.allowed).toBe(true);
    expect(fifth.windows.map((w) => w.remaining)).toEqual([1, 0]);

    // The minute has room, the day does not: the day decides, and for much longer.
    const dayFull = await consume();
    expect(dayFull.allowed).toBe(false);
    expect(dayFull.windows.map((w) => w.remaining)).toEqual([1, 0]);
    expect(dayFull.windows[0]!.resetMs).toBe(0);
    // day bucket is 24 min: all five sit in the bucket at T0, which stops counting at T0 + 1440000 + 86400000 - 1
    const dayResetMs = T0 + 1_440_000 + 86_400_000 - 1 - clock.now();
    expect(dayFull.windows[1]!.resetMs).toBe(dayResetMs);
    expect(dayFull.retryAfterMs).toBe(dayResetMs);

    // A request rejected by the day window does not eat into the minute either.
    clock.advance(1);
    expect((await consume()).windows[0]!.remaining).toBe(1);
  });

  it('waits for the slowest window when several are full', async () => {
    const windows: RateWindow[] = [
      { name: 'second', limit: 2, windowMs: 1_000, kind: 'requests' as const, scope: 'subject' as const },
      { name: 'minute', limit: 2, windowMs: 60_000, kind: 'requests' as const, scope: 'subject' as const },
    ];
    const { consume } = setup(windows);
    await consume();
    await consume();
    const rejected = await consume();
    expect(rejected.windows.map((w) => w.resetMs)).toEqual([1_099, 60_999]);
    expect(rejected.retryAfterMs).toBe(60_999);
  });

  it('a plan without windows always admits and reports nothing', async () => {
    const { limiter } = setup();
    const decision = await limiter.consume('account:free', []);
    expect(decision).toEqual({ allowed: true, windows: [], retryAfterMs: 0 });
    expect(limiter.subjectCount).toBe(0);
  });
});

describe('memory per window', () => {
  it('keeps at most 61 buckets for a 1-day window holding 100,000 requests', () => {
    const windows: RateWindow[] = [{ name: 'day', limit: 100_000, windowMs: 86_400_000, kind: 'requests' as const, scope: 'subject' as const }];
    const counter = newBucketCounter(bucketWidthMs(86_400_000));
    let maxBuckets = 0;
    let admitted = 0;
    // 200,000 requests over two days: the window is always nearly full.
    for (let i = 0; i < 200_000; i += 1) {
      if (consumeWindows([counter], windows, T0 + i * 864).allowed) admitted += 1;
      maxBuckets = Math.max(maxBuckets, counter.indexes.length);
    }
    expect(counter.total).toBeLessThanOrEqual(100_000);
    expect(admitted).toBeGreaterThan(100_000);
    expect(maxBuckets).toBeLessThanOrEqual(61);
  });
});
