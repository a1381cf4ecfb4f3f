import { describe, expect, it } from 'vitest';
import type { RateLimitDecision, WindowStatus } from '../../../src/ratelimit/rate-limiter.js';
import { appendRateLimitHeaders, closestToExhaustion, formatRateLimitPolicy, rateLimitPolicy, retryAfterSeconds } from '../../../src/ratelimit/rate-limit-headers.js';

// recoverMs defaults to what the limiter reports for an exhausted window (resetMs) or an empty one (0).
const minute = (remaining: number, resetMs: number, recoverMs = resetMs): WindowStatus => ({ name: 'minute', limit: 60, windowMs: 60_000, remaining, resetMs, recoverMs });
const day = (remaining: number, resetMs: number, recoverMs = resetMs): WindowStatus => ({ name: 'day', limit: 10_000, windowMs: 86_400_000, remaining, resetMs, recoverMs });

function decision(windows: WindowStatus[], allowed = true, retryAfterMs = 0): RateLimitDecision {
  return { allowed, windows, retryAfterMs };
}

/** The flat name/value list appendRateLimitHeaders writes, as [name, value] pairs. */
function rateLimitHeaders(d: RateLimitDecision): Array<[string, string]> {
  const out: string[] = [];
  appendRateLimitHeaders(d, out);
  const pairs: Array<[string, string]> = [];
  for (let i = 0; i < out.length; i += 2) pairs.push([out[i]!, out[i + 1]!]); // all strings here
  return pairs;
}

describe('appendRateLimitHeaders', () => {
  it('appends after what the list already holds and says whether it added anything', () => {
    const out = ['X-Request-Id', 'req-1'];
    expect(appendRateLimitHeaders(decision([minute(12, 0, 40_200)]), out)).toBe(true);
    expect(out.slice(0, 4)).toEqual(['X-Request-Id', 'req-1', 'X-RateLimit-Limit', '60']);
    expect(out).toHaveLength(12);
    expect(appendRateLimitHeaders(decision([]), out)).toBe(false);
    expect(out).toHaveLength(12);
  });

  it('describes the window closest to exhaustion and lists every window in the policy', () => {
    // The example of docs/api.md, "Headers": 48 of 60 used, the oldest of them stops counting in 40.2 s.
    expect(rateLimitHeaders(decision([minute(12, 0, 40_200), day(9_000, 0, 86_000_000)]))).toEqual([
      ['X-RateLimit-Limit', '60'],
      ['X-RateLimit-Remaining', '12'],
      ['X-RateLimit-Reset', '0'],
      ['RateLimit-Policy', '"minute";q=60;w=60, "day";q=10000;w=86400'],
      ['RateLimit', '"minute";r=12;t=41'],
    ]);
  });

  it("sends t=0 for a window that counts nothing (a rejection by another window can leave one empty)", () => {
    const headers = new Map(rateLimitHeaders(decision([minute(60, 0, 0)])));
    expect(headers.get('X-RateLimit-Reset')).toBe('0');
    expect(headers.get('RateLimit')).toBe('"minute";r=60;t=0');
  });

  it('rounds the reset up to whole delta-seconds', () => {
    const headers = new Map(rateLimitHeaders(decision([minute(0, 40_001), day(9_000, 0)], false, 40_001)));
    expect(headers.get('X-RateLimit-Reset')).toBe('41');
    expect(headers.get('RateLimit')).toBe('"minute";r=0;t=41');
  });

  it('names the day window when it is the one running out', () => {
    const headers = new Map(rateLimitHeaders(decision([minute(30, 0, 59_000), day(3, 0, 7_200_500)])));
    expect(headers.get('X-RateLimit-Limit')).toBe('10000');
    expect(headers.get('X-RateLimit-Remaining')).toBe('3');
    expect(headers.get('X-RateLimit-Reset')).toBe('0');
    expect(headers.get('RateLimit')).toBe('"day";r=3;t=7201');
  });

  it('breaks a tie on remaining by the longer reset', () => {
    expect(closestToExhaustion([minute(0, 20_000), day(0, 3_600_000)])?.name).toBe('day');
    expect(closestToExhaustion([day(0, 1_000), minute(0, 20_000)])?.name).toBe('minute');
  });

  it('sends nothing for a plan without windows', () => {
    expect(rateLimitHeaders(decision([]))).toEqual([]);
  });

  it('rounds window lengths that are not whole seconds up', () => {
    const odd: WindowStatus = { name: 'burst', limit: 5, windowMs: 1_500, remaining: 5, resetMs: 0, recoverMs: 0 };
    expect(new Map(rateLimitHeaders(decision([odd]))).get('RateLimit-Policy')).toBe('"burst";q=5;w=2');
  });
});

describe('rateLimitPolicy', () => {
  it('is formatRateLimitPolicy for any sequence of window lists, repeated or alternating', () => {
    const lists: WindowStatus[][] = [
      [minute(12, 0), day(9_000, 0)],
      [minute(1, 0), day(1, 0)], // same windows, other counts: the same policy
      [{ name: 'minute', limit: 61, windowMs: 60_000, remaining: 0, resetMs: 0, recoverMs: 0 }, day(9_000, 0)],
      [minute(12, 0)],
      [{ name: 'hour', limit: 60, windowMs: 3_600_000, remaining: 0, resetMs: 0, recoverMs: 0 }],
      [{ name: 'hour', limit: 60, windowMs: 60_000, remaining: 0, resetMs: 0, recoverMs: 0 }],
      [],
    ];
    for (const order of [[0, 1, 0, 2, 2, 3, 4, 5, 6, 0, 6, 5, 4], [6, 6, 1, 3, 3, 0]]) {
      for (const index of order) expect(rateLimitPolicy(lists[index]!)).toBe(formatRateLimitPolicy(lists[index]!));
    }
  });
});

describe('retryAfterSeconds', () => {
  it('is ceil(retryAfterMs / 1000), at least 1 when rejected, 0 when allowed', () => {
    expect(retryAfterSeconds(decision([minute(0, 40_001)], false, 40_001))).toBe(41);
    expect(retryAfterSeconds(decision([minute(0, 40_000)], false, 40_000))).toBe(40);
    expect(retryAfterSeconds(decision([minute(0, 1)], false, 1))).toBe(1);
    expect(retryAfterSeconds(decision([minute(0, 0)], false, 0))).toBe(1);
    expect(retryAfterSeconds(decision([minute(5, 0)]))).toBe(0);
  });
});
