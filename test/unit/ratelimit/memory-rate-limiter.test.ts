import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/clock.js';
import { MAX_END_USER_STATES, MemoryRateLimiter } from '../../../src/ratelimit/memory-rate-limiter.js';
import { userScope, type RateWindow } from '../../../src/ratelimit/rate-limiter.js';

const MINUTE: RateWindow[] = [{ name: 'minute', limit: 2, windowMs: 60_000, kind: 'requests' as const, scope: 'subject' as const }];

describe('MemoryRateLimiter', () => {
  it('keeps subjects apart', async () => {
    const limiter = new MemoryRateLimiter({ clock: new ManualClock() });
    await limiter.consume('account:a', MINUTE);
    await limiter.consume('account:a', MINUTE);
    expect((await limiter.consume('account:a', MINUTE)).allowed).toBe(false);
    expect((await limiter.consume('account:b', MINUTE)).allowed).toBe(true);
  });

  it('consumeNow always decides, on the same counts as consume', async () => {
    const limiter = new MemoryRateLimiter({ clock: new ManualClock() });
    expect(limiter.consumeNow('account:a', MINUTE)).toMatchObject({ allowed: true, windows: [{ remaining: 1 }] });
    expect((await limiter.consume('account:a', MINUTE)).windows[0]!.remaining).toBe(0);
    expect(limiter.consumeNow('account:a', MINUTE).allowed).toBe(false);
  });

  it('evicts subjects once nothing of theirs counts any more, and only then', async () => {
    const clock = new ManualClock(1_700_000_000_000);
    const limiter = new MemoryRateLimiter({ clock, sweepIntervalMs: 5_000 });
    for (let i = 0; i < 1_000; i += 1) await limiter.consume(`account:${i}`, MINUTE);
    expect(limiter.subjectCount).toBe(1_000);
    // Their bucket [T, T+1000) counts until T + 1000 + 60000 - 1.
    clock.advance(60_998);
    await limiter.consume('account:late', MINUTE);
    expect(limiter.subjectCount).toBe(1_001);
    clock.advance(5_000);
    await limiter.consume('account:late', MINUTE);
    expect(limiter.subjectCount).toBe(1);
    // An evicted subject starts with a full window, as it would have anyway.
    expect((await limiter.consume('account:0', MINUTE)).windows[0]!.remaining).toBe(1);
  });

  // Issue 45, H3-09: a client sending a new user_id per request must not grow the heap for a day.
  const PER_END_USER: RateWindow[] = [
    { name: 'minute', limit: 1_000_000, windowMs: 60_000, kind: 'requests', scope: 'subject' },
    { name: 'user-hour', limit: 30, windowMs: 3_600_000, kind: 'requests', scope: 'user' },
  ];

  it('holds at most maxEndUsers end users, the least recently used evicted first; the ones it holds count exactly', () => {
    const limiter = new MemoryRateLimiter({ clock: new ManualClock(1_700_000_000_000), maxEndUsers: 100 });
    let regularUses = 0;
    const useRegular = (): number => {
      regularUses += 1;
      return limiter.consumeNow('account:a', PER_END_USER, undefined, userScope('regular'))!.windows[1]!.remaining;
    };
    useRegular();
    for (let i = 0; i < 1_000; i += 1) {
      expect(limiter.consumeNow('account:a', PER_END_USER, undefined, userScope(`user-${i}`))!.allowed).toBe(true);
      if (i % 50 === 0) useRegular();
      // The subject and at most 100 end users.
      expect(limiter.subjectCount).toBeLessThanOrEqual(101);
    }
    // The end user used all along was never evicted: its count is exact.
    expect(useRegular()).toBe(30 - regularUses);
    // One evicted long ago starts over (a whole allowance but the request just counted).
    expect(limiter.consumeNow('account:a', PER_END_USER, undefined, userScope('user-0'))!.windows[1]!.remaining).toBe(29);
    // The most recent ones are still counted.
    expect(limiter.consumeNow('account:a', PER_END_USER, undefined, userScope('user-999'))!.windows[1]!.remaining).toBe(28);
  });

  it('by default holds at most MAX_END_USER_STATES end users, whatever the clients send', () => {
    const limiter = new MemoryRateLimiter({ clock: new ManualClock(1_700_000_000_000) });
    for (let i = 0; i < MAX_END_USER_STATES + 2_000; i += 1) limiter.consumeNow('account:a', PER_END_USER, undefined, userScope(`user-${i}`));
    expect(limiter.subjectCount).toBe(MAX_END_USER_STATES + 1);
  });

  it('keeps a window across a plan reload when its name and length stay, and restarts it when the length changes', async () => {
    const clock = new ManualClock();
    const limiter = new MemoryRateLimiter({ clock });
    await limiter.consume('s', MINUTE);
    const withDay: RateWindow[] = [{ name: 'day', limit: 100, windowMs: 86_400_000, kind: 'requests' as const, scope: 'subject' as const }, ...MINUTE];
    const after = await limiter.consume('s', withDay);
    expect(after.windows.map((w) => w.remaining)).toEqual([99, 0]);
    const longer: RateWindow[] = [{ name: 'minute', limit: 2, windowMs: 120_000, kind: 'requests' as const, scope: 'subject' as const }];
    expect((await limiter.consume('s', longer)).windows[0]!.remaining).toBe(1);
  });
});
