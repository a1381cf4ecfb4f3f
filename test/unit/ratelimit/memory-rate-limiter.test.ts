import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/clock.js';
import { MemoryRateLimiter } from '../../../src/ratelimit/memory-rate-limiter.js';
import type { RateWindow } from '../../../src/ratelimit/rate-limiter.js';

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
