// The budget threshold detector (src/ratelimit/budget-thresholds.ts) against a model: for
// any sequence of remaining values of a window, each fraction fires exactly once per upward
// crossing (use going from below ⌈fraction × limit⌉ to at or above it), and never otherwise.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BudgetThresholds, nextBand, thresholdUnits } from '../../src/ratelimit/budget-thresholds.js';
import { windowStatus, type WindowStatus } from '../../src/ratelimit/rate-limiter.js';
import { RecordingNotifier } from '../helpers/recording-notifier.js';

const FRACTIONS = [0.5, 0.8, 1.0];

/** The model: per fraction, how many times the use rose from below its threshold to at or above it. */
function modelCrossings(limit: number, fractions: readonly number[], remainings: readonly number[]): number[] {
  const counts = fractions.map(() => 0);
  let previousUsed = 0;
  for (const remaining of remainings) {
    const used = limit - remaining;
    fractions.forEach((fraction, i) => {
      const threshold = fraction * limit;
      if (previousUsed < threshold - 1e-9 && used >= threshold - 1e-9) counts[i]!++;
    });
    previousUsed = used;
  }
  return counts;
}

const scenario = fc.integer({ min: 1, max: 200 }).chain((limit) =>
  fc.record({
    limit: fc.constant(limit),
    fractions: fc.uniqueArray(fc.integer({ min: 1, max: 100 }), { minLength: 1, maxLength: 8 }).map((ps) => ps.sort((a, b) => a - b).map((p) => p / 100)),
    remainings: fc.array(fc.integer({ min: 0, max: limit }), { maxLength: 200 }),
  }),
);

describe('nextBand', () => {
  it('crosses each threshold exactly once per upward crossing', () => {
    fc.assert(
      fc.property(scenario, ({ limit, fractions, remainings }) => {
        const units = thresholdUnits(fractions, limit);
        const counts = fractions.map(() => 0);
        let band = 0;
        for (const remaining of remainings) {
          const crossed: number[] = [];
          band = nextBand(units, band, limit - remaining, crossed);
          for (const index of crossed) counts[index]!++;
        }
        expect(counts).toEqual(modelCrossings(limit, fractions, remainings));
      }),
      { numRuns: 500 },
    );
  });

  it('reads 0.7 of 10 as 7 units (no floating-point overshoot)', () => {
    expect(thresholdUnits([0.7, 0.5, 1], 10)).toEqual([7, 5, 10]);
    expect(thresholdUnits([0.01], 5)).toEqual([1]);
  });
});

function statuses(limit: number, remaining: number, options: { endUser?: boolean; windowMs?: number } = {}): WindowStatus[] {
  return [windowStatus({ name: 'per-minute', limit, windowMs: options.windowMs ?? 60_000, kind: 'requests', scope: options.endUser ? 'user' : 'subject' }, remaining, 0, 0)];
}

describe('BudgetThresholds', () => {
  it('publishes each crossing with the documented data and dedupe key', () => {
    const notifier = new RecordingNotifier();
    const watch = new BudgetThresholds(FRACTIONS, notifier, { now: () => 1_000 });
    for (let remaining = 9; remaining >= 0; remaining--) watch.observe('key:key_a', statuses(10, remaining));
    expect(notifier.events.map((event) => event.data)).toEqual([
      { subject: 'key:key_a', policy: 'per-minute', fraction: 0.5, window: 60_000, limit: 10, used: 5 },
      { subject: 'key:key_a', policy: 'per-minute', fraction: 0.8, window: 60_000, limit: 10, used: 8 },
      { subject: 'key:key_a', policy: 'per-minute', fraction: 1, window: 60_000, limit: 10, used: 10 },
    ]);
    expect(notifier.events.map((event) => [event.type, event.subject, event.dedupeKey])).toEqual([
      ['budget.threshold', 'key:key_a', 'thr:key:key_a:per-minute:0.5'],
      ['budget.threshold', 'key:key_a', 'thr:key:key_a:per-minute:0.8'],
      ['budget.threshold', 'key:key_a', 'thr:key:key_a:per-minute:1'],
    ]);
  });

  it('a use hovering at a threshold fires once per window length, then again after it', () => {
    let now = 0;
    const notifier = new RecordingNotifier(() => now);
    const watch = new BudgetThresholds([0.5], notifier, { now: () => now });
    for (let i = 0; i < 50; i++) watch.observe('key:key_b', statuses(10, i % 2 === 0 ? 5 : 4));
    expect(notifier.events).toHaveLength(1);
    now = 60_000;
    watch.observe('key:key_b', statuses(10, 6));
    watch.observe('key:key_b', statuses(10, 5));
    expect(notifier.events).toHaveLength(2);
  });

  it("does not fire for an end user's window", () => {
    const notifier = new RecordingNotifier();
    const watch = new BudgetThresholds(FRACTIONS, notifier, { now: () => 0 });
    watch.observe('key:key_c', statuses(10, 0, { endUser: true }));
    expect(notifier.events).toEqual([]);
  });

  it('starts a window over when its limit changes (a plan change); the dedupe key still holds within the window', () => {
    let now = 0;
    const notifier = new RecordingNotifier(() => now);
    const watch = new BudgetThresholds([0.5], notifier, { now: () => now });
    watch.observe('key:key_d', statuses(10, 5));
    watch.observe('key:key_d', statuses(100, 50, { windowMs: 30_000 }));
    expect(notifier.events.map((event) => event.data.limit)).toEqual([10]);
    expect(notifier.deduplicated).toBe(1);
    now = 60_000;
    watch.observe('key:key_d', statuses(10, 5));
    expect(notifier.events.map((event) => event.data.limit)).toEqual([10, 10]);
  });
});
