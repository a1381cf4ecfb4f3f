import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MemoryRateLimiter } from '../../../src/ratelimit/memory-rate-limiter.js';
import type { RateWindow } from '../../../src/ratelimit/rate-limiter.js';
import { bucketWidthMs, consumeWindows, newBucketCounter, type BucketCounter } from '../../../src/ratelimit/window-math.js';

const T0 = 1_700_000_000_123;

const windowArb = fc.record({ limit: fc.integer({ min: 1, max: 8 }), windowMs: fc.integer({ min: 1, max: 5_000 }) });
const windowsArb = fc.array(windowArb, { minLength: 1, maxLength: 3 }).map((ws): RateWindow[] => ws.map((w, i) => ({ name: `w${i}`, kind: 'requests', scope: 'subject', ...w })));
// Mostly small gaps (bursts), sometimes long ones (windows draining).
const gapsArb = fc.array(fc.oneof(fc.integer({ min: 0, max: 50 }), fc.integer({ min: 0, max: 3_000 })), { minLength: 1, maxLength: 150 });

function admittedIn(times: readonly number[], fromExclusiveMs: number, toInclusiveMs: number): number {
  let count = 0;
  for (const t of times) if (t > fromExclusiveMs && t <= toInclusiveMs) count += 1;
  return count;
}

function run(windows: RateWindow[], gaps: number[]) {
  const limiter = new MemoryRateLimiter();
  const admitted: number[] = [];
  const rejected: number[] = [];
  let nowMs = T0;
  for (const gap of gaps) {
    nowMs += gap;
    if (limiter.consumeAt('s', windows, nowMs).allowed) admitted.push(nowMs);
    else rejected.push(nowMs);
  }
  return { limiter, admitted, rejected, nowMs };
}

describe('sliding window properties', () => {
  it('no true sliding window of any configured length ever holds more than its limit', () => {
    fc.assert(
      fc.property(windowsArb, gapsArb, (windows, gaps) => {
        const { admitted } = run(windows, gaps);
        for (const window of windows) {
          // The busiest span of windowMs ends at some admitted request.
          for (const t of admitted) expect(admittedIn(admitted, t - window.windowMs, t)).toBeLessThanOrEqual(window.limit);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('rejects only when an exact sliding log over windowMs + bucketMs - 1 would (the accuracy bound)', () => {
    fc.assert(
      fc.property(windowsArb, gapsArb, (windows, gaps) => {
        const { admitted, rejected } = run(windows, gaps);
        for (const t of rejected) {
          const full = windows.some((w) => admittedIn(admitted, t - (w.windowMs + bucketWidthMs(w.windowMs) - 1), t) >= w.limit);
          expect(full).toBe(true);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('a rejected client that waits exactly retryAfterMs is admitted, 1 ms less is not', () => {
    fc.assert(
      fc.property(windowsArb, gapsArb, (windows, gaps) => {
        const { limiter, nowMs } = run(windows, gaps);
        const decision = limiter.consumeAt('s', windows, nowMs);
        if (decision.allowed) return;
        expect(decision.retryAfterMs).toBeGreaterThan(0);
        expect(decision.retryAfterMs).toBe(Math.max(...decision.windows.map((w) => w.resetMs)));
        expect(limiter.consumeAt('s', windows, nowMs + decision.retryAfterMs - 1).allowed).toBe(false);
        expect(limiter.consumeAt('s', windows, nowMs + decision.retryAfterMs).allowed).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('remaining and resetMs agree with the decision', () => {
    fc.assert(
      fc.property(windowsArb, gapsArb, (windows, gaps) => {
        const limiter = new MemoryRateLimiter();
        let nowMs = T0;
        for (const gap of gaps) {
          nowMs += gap;
          const decision = limiter.consumeAt('s', windows, nowMs);
          for (const status of decision.windows) {
            expect(status.remaining).toBeGreaterThanOrEqual(0);
            expect(status.resetMs === 0).toBe(status.remaining > 0);
            if (status.remaining === 0) expect(status.recoverMs).toBe(status.resetMs);
            else expect(status.recoverMs).toBeLessThanOrEqual(status.windowMs + bucketWidthMs(status.windowMs) - 1);
            expect(status.recoverMs).toBeGreaterThanOrEqual(0);
          }
          if (!decision.allowed) expect(decision.windows.some((w) => w.remaining === 0)).toBe(true);
          else expect(decision.retryAfterMs).toBe(0);
        }
      }),
      { numRuns: 200 },
    );
  });

  it('recoverMs is when the quota starts to recover: nothing frees 1 ms before it, something frees at it', () => {
    fc.assert(
      fc.property(windowArb, gapsArb, (window, gaps) => {
        const windows: RateWindow[] = [{ name: 'w', kind: 'requests', scope: 'subject', ...window }];
        const counter = newBucketCounter(bucketWidthMs(window.windowMs));
        // Requests the window counts at atMs, probed on a copy so the run itself goes on unchanged.
        const countedAt = (atMs: number): number => {
          const copy: BucketCounter = structuredClone(counter);
          const decision = consumeWindows([copy], windows, atMs);
          return copy.total - (decision.allowed ? 1 : 0);
        };
        let nowMs = T0;
        for (const gap of gaps) {
          nowMs += gap;
          const status = consumeWindows([counter], windows, nowMs).windows[0]!;
          // A single window always counts something after a request (admitted, or full).
          expect(status.recoverMs).toBeGreaterThan(0);
          expect(countedAt(nowMs + status.recoverMs - 1)).toBe(counter.total);
          expect(countedAt(nowMs + status.recoverMs)).toBeLessThan(counter.total);
        }
      }),
      { numRuns: 300 },
    );
  });
});
