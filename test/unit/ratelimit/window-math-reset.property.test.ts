import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { RateWindow } from '../../../src/ratelimit/rate-limiter.js';
import { appendRateLimitHeaders, windowSeconds } from '../../../src/ratelimit/rate-limit-headers.js';
import { bucketWidthMs, consumeWindows, newBucketCounter } from '../../../src/ratelimit/window-math.js';

// Reset and t are reported per window; neither may say "wait longer than the window itself"
// (a 2 s window once answered X-RateLimit-Reset: 3, a 60 s one t=61).
const windowArb = fc.record({
  limit: fc.integer({ min: 1, max: 20 }),
  windowMs: fc.oneof(fc.integer({ min: 1, max: 5_000 }), fc.constantFrom(1_000, 2_000, 60_000, 3_600_000, 86_400_000)),
});

const scenarioArb = fc.record({
  windows: fc.array(windowArb, { minLength: 1, maxLength: 3 }),
  startMs: fc.integer({ min: 0, max: 2_000_000_000_000 }),
  // Gaps between requests: many at one instant, some across buckets and windows.
  gapsMs: fc.array(fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 200 }), fc.integer({ min: 0, max: 100_000 })), { minLength: 1, maxLength: 80 }),
});

function headerValues(out: Array<string | string[]>): Map<string, string> {
  const values = new Map<string, string>();
  for (let i = 0; i < out.length; i += 2) values.set(out[i] as string, out[i + 1] as string);
  return values;
}

describe('window math: Reset and t never exceed the window', () => {
  it('every status reads as 0 <= Reset, t <= the window in seconds, and the headers stay within the window in seconds', () => {
    fc.assert(
      fc.property(scenarioArb, ({ windows: shapes, startMs, gapsMs }) => {
        const windows: RateWindow[] = shapes.map((shape, i) => ({ name: `w${i}`, limit: shape.limit, windowMs: shape.windowMs, kind: 'requests', scope: 'subject' }));
        const counters = windows.map((w) => newBucketCounter(bucketWidthMs(w.windowMs)));
        let nowMs = startMs;
        for (const gapMs of gapsMs) {
          nowMs += gapMs;
          const decision = consumeWindows(counters, windows, nowMs);
          for (const status of decision.windows) {
            expect(windowSeconds(status.resetMs, status.windowMs)).toBeGreaterThanOrEqual(0);
            expect(windowSeconds(status.recoverMs, status.windowMs)).toBeGreaterThanOrEqual(0);
            expect(windowSeconds(status.resetMs, status.windowMs)).toBeLessThanOrEqual(Math.ceil(status.windowMs / 1000));
            expect(windowSeconds(status.recoverMs, status.windowMs)).toBeLessThanOrEqual(Math.ceil(status.windowMs / 1000));
          }
          const out: Array<string | string[]> = [];
          appendRateLimitHeaders(decision, out);
          const headers = headerValues(out);
          const limitName = headers.get('X-RateLimit-Limit');
          const closest = decision.windows.find((w) => String(w.limit) === limitName)!;
          const closestSeconds = Math.ceil(closest.windowMs / 1000);
          const reset = Number(headers.get('X-RateLimit-Reset'));
          const t = Number(/;t=(\d+)$/.exec(headers.get('RateLimit')!)![1]);
          expect(reset).toBeGreaterThanOrEqual(0);
          expect(t).toBeGreaterThanOrEqual(0);
          // Windows of equal limit may be picked interchangeably: bound by the longest of them.
          const longestSeconds = Math.max(...decision.windows.filter((w) => String(w.limit) === limitName).map((w) => Math.ceil(w.windowMs / 1000)), closestSeconds);
          expect(reset).toBeLessThanOrEqual(longestSeconds);
          expect(t).toBeLessThanOrEqual(longestSeconds);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('the first request on a 60 s window reports t=60 at most, and a refused 2 s window Reset 2 at most', () => {
    const minute: RateWindow = { name: 'minute', limit: 60, windowMs: 60_000, kind: 'requests' as const, scope: 'subject' as const };
    const first = consumeWindows([newBucketCounter(bucketWidthMs(minute.windowMs))], [minute], 1_700_000_040_000);
    const out: Array<string | string[]> = [];
    appendRateLimitHeaders(first, out);
    expect(headerValues(out).get('RateLimit')).toBe('"minute";r=59;t=60');

    const short: RateWindow = { name: 'short', limit: 1, windowMs: 2_000, kind: 'requests' as const, scope: 'subject' as const };
    const counters = [newBucketCounter(bucketWidthMs(short.windowMs))];
    consumeWindows(counters, [short], 1_700_000_000_000);
    const refused = consumeWindows(counters, [short], 1_700_000_000_001);
    expect(refused.allowed).toBe(false);
    const refusedOut: Array<string | string[]> = [];
    appendRateLimitHeaders(refused, refusedOut);
    expect(headerValues(refusedOut).get('X-RateLimit-Reset')).toBe('2');
    // Retry-After stays exact (never early): the request counts until its bucket's end + window - 1.
    expect(refused.retryAfterMs).toBe(2_098);
  });
});
