// Token budgets in the window math against a brute-force model: every charge kept as
// (time, tokens), and at each admission the model sums the charges whose bucket still counts.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { RateWindow } from '../../../src/ratelimit/rate-limiter.js';
import { MemoryRateLimiter } from '../../../src/ratelimit/memory-rate-limiter.js';
import { modelTotal, modelWaitMs, type ModelCharge } from '../../helpers/budget-model.js';
import { bucketWidthMs, chargeWindows, consumeWindows, newBucketCounter } from '../../../src/ratelimit/window-math.js';


const opArb = fc.oneof(
  fc.record({ kind: fc.constant('admit' as const), gapMs: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 300 }), fc.integer({ min: 0, max: 20_000 })) }),
  fc.record({ kind: fc.constant('charge' as const), gapMs: fc.integer({ min: 0, max: 300 }), tokens: fc.integer({ min: 1, max: 400 }) }),
);

describe('token windows against a brute-force model', () => {
  it('admits exactly while the model has a token left, with the model wait as Retry-After, and never counts an admission as tokens', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1_000 }),
        fc.oneof(fc.integer({ min: 50, max: 10_000 }), fc.constantFrom(1_000, 60_000)),
        fc.integer({ min: 0, max: 2_000_000_000_000 }),
        fc.array(opArb, { minLength: 1, maxLength: 60 }),
        (limit, windowMs, startMs, ops) => {
          const window: RateWindow = { name: 'tokens-w', limit, windowMs, kind: 'tokens', scope: 'subject' };
          const counters = [newBucketCounter(bucketWidthMs(windowMs))];
          const charges: ModelCharge[] = [];
          let nowMs = startMs;
          for (const op of ops) {
            nowMs += op.gapMs;
            if (op.kind === 'charge') {
              chargeWindows(counters, [window], nowMs, { tokens: op.tokens });
              charges.push({ atMs: nowMs, units: op.tokens });
              continue;
            }
            const total = modelTotal(charges, window, nowMs);
            const decision = consumeWindows(counters, [window], nowMs);
            expect(decision.allowed).toBe(total < limit);
            expect(decision.windows[0]!.remaining).toBe(Math.max(0, limit - total));
            expect(decision.retryAfterMs).toBe(decision.allowed ? 0 : modelWaitMs(charges, window, nowMs));
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('charges only token windows: a request window beside them counts requests, not tokens', () => {
    const windows: RateWindow[] = [
      { name: 'minute', limit: 3, windowMs: 60_000, kind: 'requests' as const, scope: 'subject' as const },
      { name: 'tokens-minute', limit: 100, windowMs: 60_000, kind: 'tokens' as const, scope: 'subject' as const },
    ];
    const counters = windows.map((w) => newBucketCounter(bucketWidthMs(w.windowMs)));
    const first = consumeWindows(counters, windows, 1_000_000);
    expect(first.allowed).toBe(true);
    chargeWindows(counters, windows, 1_000_010, { tokens: 70 });
    const second = consumeWindows(counters, windows, 1_000_020);
    expect(second.windows.map((w) => w.remaining)).toEqual([1, 30]);
    chargeWindows(counters, windows, 1_000_030, { tokens: 40 });
    const third = consumeWindows(counters, windows, 1_000_040);
    expect(third.allowed).toBe(false);
    expect(third.windows.map((w) => w.remaining)).toEqual([1, 0]);
  });

  it('the memory limiter: an in-flight answer may overshoot, by at most what the answers admitted before the charge used', () => {
    let nowMs = 5_000_000;
    const limiter = new MemoryRateLimiter({ clock: { now: () => nowMs } });
    const windows: RateWindow[] = [{ name: 'tokens-hour', limit: 100, windowMs: 3_600_000, kind: 'tokens' as const, scope: 'subject' as const }];
    // Three requests admitted before any answer is charged: all see 100 tokens left.
    const admitted = [0, 1, 2].map(() => limiter.consumeNow('account:a', windows));
    expect(admitted.map((d) => d.allowed)).toEqual([true, true, true]);
    for (let i = 0; i < 3; i += 1) {
      nowMs += 1;
      limiter.charge('account:a', windows, { tokens: 60 });
    }
    // 180 charged against 100: the overshoot (80) is below the in-flight answers' own 3 × 60.
    const refused = limiter.consumeNow('account:a', windows);
    expect(refused.allowed).toBe(false);
    expect(refused.windows[0]!.remaining).toBe(0);
    expect(refused.retryAfterMs).toBeGreaterThan(0);
    expect(refused.retryAfterMs).toBeLessThanOrEqual(3_600_000 + bucketWidthMs(3_600_000));
  });
});
