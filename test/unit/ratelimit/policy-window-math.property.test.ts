// Cost budgets and tool-call quotas in the window math against a brute-force model (docs/rate-limits.md
// "Cost budgets", "Tool-call quotas"): every charge kept as (time, units); at each admission the
// model sums the charges whose bucket still counts. A tool's quota refuses only when the request
// names the tool (a report-only window never refuses), and no budget admits beyond its limit plus
// the stated overshoot (the answers admitted while it had a unit left, charged after).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { planSchema } from '../../../src/config/plan-schema.js';
import { MemoryRateLimiter } from '../../../src/ratelimit/memory-rate-limiter.js';
import { modelTotal, modelWaitMs, type ModelCharge } from '../../helpers/budget-model.js';
import type { RateWindow } from '../../../src/ratelimit/rate-limiter.js';
import { bucketWidthMs, chargeUnits, chargeWindows, consumeWindows, microUsdOf, newBucketCounter } from '../../../src/ratelimit/window-math.js';


const TOOLS = ['search', 'browse'] as const;

const opArb = fc.oneof(
  fc.record({ kind: fc.constant('admit' as const), gapMs: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 300 }), fc.integer({ min: 0, max: 20_000 })), names: fc.subarray([...TOOLS]) }),
  fc.record({
    kind: fc.constant('charge' as const),
    gapMs: fc.integer({ min: 0, max: 300 }),
    usd: fc.oneof(fc.constant(0), fc.double({ min: 0.000001, max: 0.01, noNaN: true })),
    calls: fc.array(fc.constantFrom(...TOOLS, 'other'), { maxLength: 5 }),
  }),
);

describe('cost and tool windows against a brute-force model', () => {
  it('admits exactly while every refusing window has a unit left in the model; report-only windows report the model and never refuse', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 20_000 }),
        fc.integer({ min: 1, max: 6 }),
        fc.oneof(fc.integer({ min: 50, max: 10_000 }), fc.constantFrom(1_000, 60_000)),
        fc.integer({ min: 0, max: 2_000_000_000_000 }),
        fc.array(opArb, { minLength: 1, maxLength: 60 }),
        (costLimit, callLimit, windowMs, startMs, ops) => {
          const cost: RateWindow = { name: 'cost-w', limit: costLimit, windowMs, kind: 'cost', scope: 'subject' };
          const tools = TOOLS.map((tool): RateWindow => ({ name: `tool-${tool}-w`, limit: callLimit, windowMs, kind: 'tool_calls', scope: 'subject', tool, use: 'charge' as const }));
          const all = [cost, ...tools];
          const counters = all.map((w) => newBucketCounter(bucketWidthMs(w.windowMs)));
          const charges: ModelCharge[][] = all.map(() => []);
          let nowMs = startMs;
          for (const op of ops) {
            nowMs += op.gapMs;
            if (op.kind === 'charge') {
              const usage = { tokens: 0, microUsd: microUsdOf(op.usd), toolCalls: op.calls };
              chargeWindows(counters, all, nowMs, usage);
              all.forEach((w, i) => {
                const units = chargeUnits(w, usage);
                if (units > 0) charges[i]!.push({ atMs: nowMs, units });
              });
              continue;
            }
            // The request's list: the named tools' quotas refuse, the others only report.
            const windows = [cost, ...tools.map((w): RateWindow => (w.kind === 'tool_calls' && !op.names.includes(w.tool as (typeof TOOLS)[number]) ? { ...w, use: 'report' as const } : w))];
            const totals = all.map((w, i) => modelTotal(charges[i]!, w, nowMs));
            const refusing = windows.map((w, i) => !(w.kind === 'tool_calls' && w.use === 'report') && totals[i]! >= w.limit);
            const decision = consumeWindows(counters, windows, nowMs);
            expect(decision.allowed).toBe(!refusing.includes(true));
            decision.windows.forEach((status, i) => expect(status.remaining).toBe(Math.max(0, all[i]!.limit - totals[i]!)));
            const wait = decision.allowed ? 0 : Math.max(...windows.map((w, i) => (refusing[i] ? modelWaitMs(charges[i]!, w, nowMs) : 0)));
            expect(decision.retryAfterMs).toBe(wait);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('never admits beyond the limit plus the answers in flight: charged ≤ limit − 1 + what was in flight at the last admission', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 50 }),
        fc.array(fc.oneof(fc.constant({ kind: 'admit' as const }), fc.record({ kind: fc.constant('finish' as const), calls: fc.integer({ min: 0, max: 4 }), micro: fc.integer({ min: 0, max: 30 }) })), { maxLength: 80 }),
        (limit, ops) => {
          const nowMs = 1_700_000_000_000;
          const limiter = new MemoryRateLimiter({ clock: { now: () => nowMs } });
          const windows: RateWindow[] = [
            { name: 'cost-day', limit, windowMs: 86_400_000, kind: 'cost' as const, scope: 'subject' as const },
            { name: 'tool-search-day', limit, windowMs: 86_400_000, kind: 'tool_calls' as const, scope: 'subject' as const, tool: 'search', use: 'charge' as const },
          ];
          const inFlight: number[] = [];
          let charged = [0, 0];
          let boundAtLastAdmission = [limit - 1, limit - 1];
          for (const op of ops) {
            if (op.kind === 'admit') {
              const decision = limiter.consumeAt('account:a', windows, nowMs);
              expect(decision.allowed).toBe(charged[0]! < limit && charged[1]! < limit);
              if (decision.allowed) {
                inFlight.push(0);
                boundAtLastAdmission = charged.map((c) => c) as [number, number];
              }
              continue;
            }
            if (inFlight.length === 0) continue;
            inFlight.pop();
            limiter.chargeAt('account:a', windows, { tokens: 0, microUsd: op.micro, toolCalls: new Array<string>(op.calls).fill('search') }, nowMs);
            charged = [charged[0]! + op.micro, charged[1]! + op.calls];
          }
          // Every admission saw less than the limit charged: what is charged beyond it came from answers admitted before.
          for (const at of boundAtLastAdmission) expect(at).toBeLessThanOrEqual(limit - 1);
          const status = limiter.consumeAt('account:a', windows, nowMs, undefined).windows;
          expect(status.map((s) => s.remaining)).toEqual(charged.map((c) => Math.max(0, limit - c)));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('charges each budget its own unit: tokens, whole micro-dollars rounded up, one per call of the tool', () => {
    const tokens: RateWindow = { name: 'tokens-day', limit: 10, windowMs: 86_400_000, kind: 'tokens' as const, scope: 'subject' as const };
    const cost: RateWindow = { name: 'cost-day', limit: 10, windowMs: 86_400_000, kind: 'cost' as const, scope: 'subject' as const };
    const search: RateWindow = { name: 'tool-search-day', limit: 10, windowMs: 86_400_000, kind: 'tool_calls' as const, scope: 'subject' as const, tool: 'search', use: 'charge' as const };
    const usage = { tokens: 7, microUsd: microUsdOf(0.0000021), toolCalls: ['search', 'browse', 'search'] };
    expect([tokens, cost, search].map((w) => chargeUnits(w, usage))).toEqual([7, 3, 2]);
    expect(chargeUnits({ name: 'minute', limit: 10, windowMs: 60_000, kind: 'requests' as const, scope: 'subject' as const }, usage)).toBe(0);
    expect(microUsdOf(0.1)).toBe(100_000);
    expect(microUsdOf(0.0000001)).toBe(1);
    for (const nonsense of [null, undefined, -1, Number.NaN, Number.POSITIVE_INFINITY, 0]) expect(microUsdOf(nonsense)).toBe(0);
  });

  it('reads a plan: cost in micro-dollars, tool windows named per tool, both refusing and report-only forms with one name', () => {
    const plan = planSchema.parse({ cost: [{ usd: 50, per: '30d' }], tool_calls: { web_search: [{ calls: 100, per: '1d' }, { calls: 5, per: '1m', name: 'burst' }] } });
    expect(plan.cost).toEqual([{ name: 'cost-30d', limit: 50_000_000, windowMs: 2_592_000_000, kind: 'cost' as const, scope: 'subject' as const }]);
    expect(plan.windows.map((w) => w.name)).toEqual(['cost-30d']);
    expect(plan.toolCalls).toHaveLength(1);
    expect(plan.toolCalls![0]!.windows.map((w) => [w.name, w.limit, w.kind === 'tool_calls' ? w.tool : null])).toEqual([
      ['tool-web_search-day', 100, 'web_search'],
      ['burst', 5, 'web_search'],
    ]);
    expect(plan.toolCalls![0]!.reports.every((w) => w.kind === 'tool_calls' && w.use === 'report')).toBe(true);
    expect(plan.toolCalls![0]!.reports.map((w) => w.name)).toEqual(plan.toolCalls![0]!.windows.map((w) => w.name));
    // 90 days in 60 buckets: 36 h each.
    expect(bucketWidthMs(90 * 86_400_000)).toBe(36 * 3_600_000);
  });
});
