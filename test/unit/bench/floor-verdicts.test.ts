// The verdict math of `npm run bench` (issue 34): a target is a ratio or a distance to the
// floor (bare node:http + undici) measured in the same rounds, and a run judges it only when
// the floor's own spread across the rounds is within the target's margin. Pure functions of
// bench/lib/floor-verdicts.mjs and bench/lib/target-checks.mjs, fed made-up rounds.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

interface Verdict {
  standing: number | null;
  limit: number;
  toSpare: number | null;
  floorSpread: number | null;
  margin: number;
  rounds: number;
  quiet: boolean;
  reason: string;
  result: string;
}
interface Round {
  gateway: number | null;
  floor: number | null;
}
interface Check {
  scenario: number;
  target: string;
  measured: string;
  result: string;
  verdict: string;
}
interface VerdictsModule {
  spread: (xs: (number | null)[]) => number | null;
  relativeSpread: (xs: (number | null)[]) => number | null;
  medianRatio: (rounds: Round[]) => number | null;
  medianDistance: (rounds: Round[]) => number | null;
  noiseJudgement: (o: { floorSpread: number | null; margin: number; rounds: number }) => { quiet: boolean; reason: string };
  floorVerdict: (o: { kind: string; limit: number; rounds: Round[]; floorValues?: (number | null)[] }) => Verdict;
  heldBackVerdict: (o: { gateway: { heldBack: number; outOfOrder: number }; floor: { heldBack: number; outOfOrder: number } | null }) => { result: string; reason: string };
  describeStanding: (v: Verdict, spec: { kind: string; unit?: string; digits?: number }) => string;
  resultCell: (v: Verdict, load: string | null) => string;
  loadRange: (xs: (number | null)[]) => string | null;
}
interface ChecksModule {
  checkTargets: (results: object) => Check[];
  absoluteTargets: (results: object) => string[];
  verdictSummary: (checks: Check[], machine: object | null) => string;
}

const lib = (name: string) => pathToFileURL(join(process.cwd(), 'bench', 'lib', name)).href;
const v = (await import(lib('floor-verdicts.mjs'))) as VerdictsModule;
const checks = (await import(lib('target-checks.mjs'))) as ChecksModule;

describe('spread and the per-round figures', () => {
  it('spread is max − min of the finite values, null with fewer than two', () => {
    expect(v.spread([3, 1, 2])).toBe(2);
    expect(v.spread([5, null, Number.NaN, 4])).toBe(1);
    expect(v.spread([7])).toBeNull();
    expect(v.spread([])).toBeNull();
  });

  it('relative spread divides by the median; null for a median of 0', () => {
    expect(v.relativeSpread([90, 100, 110])).toBeCloseTo(0.2, 10);
    expect(v.relativeSpread([0, 0, 0])).toBeNull();
  });

  it('ratio and distance are medians of per-round pairs; a round missing a side is left out', () => {
    const rounds = [
      { gateway: 130, floor: 100 },
      { gateway: 120, floor: 100 },
      { gateway: 300, floor: null },
      { gateway: 150, floor: 100 },
    ];
    expect(v.medianRatio(rounds)).toBeCloseTo(1.3, 10);
    expect(v.medianDistance(rounds)).toBe(30);
    expect(v.medianRatio([{ gateway: 1, floor: 0 }])).toBeNull();
    expect(v.medianDistance([])).toBeNull();
  });

  it('pairs per round, so a drift both sides share cancels', () => {
    // The machine slowed in round 3 for both: the per-round distance stays 0.2.
    const rounds = [
      { gateway: 1.2, floor: 1.0 },
      { gateway: 1.3, floor: 1.1 },
      { gateway: 1.25, floor: 1.05 },
    ];
    expect(v.medianDistance(rounds)).toBeCloseTo(0.2, 10);
  });
});

describe('noise judgement', () => {
  it('is quiet when the floor moved no more than the margin', () => {
    expect(v.noiseJudgement({ floorSpread: 0.4, margin: 0.5, rounds: 3 }).quiet).toBe(true);
    expect(v.noiseJudgement({ floorSpread: 0.5, margin: 0.5, rounds: 3 }).quiet).toBe(true);
  });

  it('is noisy when the floor moved more than the margin, and says by how much', () => {
    const n = v.noiseJudgement({ floorSpread: 0.62, margin: 0.5, rounds: 3 });
    expect(n.quiet).toBe(false);
    expect(n.reason).toBe("the floor's spread 0.620 > the margin 0.500");
  });

  it('cannot judge from one round: the floor has no spread', () => {
    expect(v.noiseJudgement({ floorSpread: null, margin: 0.5, rounds: 1 })).toEqual({ quiet: false, reason: '1 round of the floor: its spread is unknown' });
  });
});

describe('floorVerdict', () => {
  const quietFloor = [100, 104, 98];

  it('ratio: passes at or under the limit, fails over it, when the floor held still', () => {
    const pass = v.floorVerdict({ kind: 'ratio', limit: 1.35, rounds: quietFloor.map((f) => ({ gateway: f * 1.3, floor: f })) });
    expect(pass).toMatchObject({ result: 'PASS', quiet: true, rounds: 3 });
    expect(pass.standing).toBeCloseTo(1.3, 10);
    expect(pass.toSpare).toBeCloseTo(0.05, 10);
    expect(pass.margin).toBeCloseTo(0.35, 10);
    const fail = v.floorVerdict({ kind: 'ratio', limit: 1.35, rounds: quietFloor.map((f) => ({ gateway: f * 1.5, floor: f })) });
    expect(fail.result).toBe('FAIL');
    expect(fail.toSpare).toBeCloseTo(-0.15, 10);
  });

  it('ratio: the floor spread is relative to its median, against limit − 1', () => {
    // The floor moved 40 % of itself: more than the 35 % a 1.35× target allows.
    const noisy = v.floorVerdict({ kind: 'ratio', limit: 1.35, rounds: [80, 100, 120].map((f) => ({ gateway: f * 2, floor: f })) });
    expect(noisy.floorSpread).toBeCloseTo(0.4, 10);
    expect(noisy.result).toBe('UNJUDGED');
  });

  it('distance: judged in the floor unit, the margin is the limit itself', () => {
    const rounds = [1.0, 1.1, 1.05].map((f) => ({ gateway: f + 0.45, floor: f }));
    const pass = v.floorVerdict({ kind: 'distance', limit: 0.5, rounds });
    expect(pass.result).toBe('PASS');
    expect(pass.standing).toBeCloseTo(0.45, 10);
    expect(pass.floorSpread).toBeCloseTo(0.1, 10);
    const fail = v.floorVerdict({ kind: 'distance', limit: 0.1, rounds: [0.40, 0.45, 0.43].map((f) => ({ gateway: f + 0.2, floor: f })) });
    expect(fail.result).toBe('FAIL');
    expect(fail.toSpare).toBeCloseTo(-0.1, 10);
  });

  it('UNJUDGED rather than FAIL when the floor moved more than the margin, and rather than PASS too', () => {
    const missNoisy = v.floorVerdict({ kind: 'distance', limit: 0.5, rounds: [1.0, 2.0, 1.5].map((f) => ({ gateway: f + 3, floor: f })) });
    expect(missNoisy.result).toBe('UNJUDGED');
    expect(missNoisy.standing).toBe(3);
    const passNoisy = v.floorVerdict({ kind: 'distance', limit: 0.5, rounds: [1.0, 2.0, 1.5].map((f) => ({ gateway: f, floor: f })) });
    expect(passNoisy.result).toBe('UNJUDGED');
  });

  it('judges the spread of the floor values given (the floor over stub direct), not of the raw floor', () => {
    const rounds = [10, 14, 12].map((f) => ({ gateway: f + 0.2, floor: f }));
    expect(v.floorVerdict({ kind: 'distance', limit: 0.5, rounds }).result).toBe('UNJUDGED');
    expect(v.floorVerdict({ kind: 'distance', limit: 0.5, rounds, floorValues: [1.3, 1.4, 1.35] }).result).toBe('PASS');
  });

  it('one round is UNJUDGED; no paired round is n/a; an unknown kind throws', () => {
    expect(v.floorVerdict({ kind: 'distance', limit: 0.5, rounds: [{ gateway: 1, floor: 1 }] }).result).toBe('UNJUDGED');
    expect(v.floorVerdict({ kind: 'ratio', limit: 1.35, rounds: [{ gateway: 1, floor: null }] })).toMatchObject({ result: 'n/a', standing: null });
    expect(() => v.floorVerdict({ kind: 'percent', limit: 1, rounds: [] })).toThrow(/ratio or distance/);
  });
});

describe('held back', () => {
  it('passes with none, fails when only the gateway held some back, cannot judge when the floor did too', () => {
    expect(v.heldBackVerdict({ gateway: { heldBack: 0, outOfOrder: 0 }, floor: { heldBack: 3, outOfOrder: 0 } }).result).toBe('PASS');
    expect(v.heldBackVerdict({ gateway: { heldBack: 4, outOfOrder: 0 }, floor: { heldBack: 0, outOfOrder: 0 } }).result).toBe('FAIL');
    expect(v.heldBackVerdict({ gateway: { heldBack: 4, outOfOrder: 0 }, floor: { heldBack: 2, outOfOrder: 0 } })).toEqual({ result: 'UNJUDGED', reason: 'the floor held back 2 too' });
    expect(v.heldBackVerdict({ gateway: { heldBack: 0, outOfOrder: 1 }, floor: { heldBack: 0, outOfOrder: 0 } }).result).toBe('FAIL');
    expect(v.heldBackVerdict({ gateway: { heldBack: 1, outOfOrder: 0 }, floor: null }).result).toBe('n/a');
  });
});

describe('how a verdict reads', () => {
  it('says how far each stands, both ways', () => {
    const ratio = v.floorVerdict({ kind: 'ratio', limit: 1.35, rounds: [100, 101, 99].map((f) => ({ gateway: f * 1.21, floor: f })) });
    expect(v.describeStanding(ratio, { kind: 'ratio' })).toBe('×1.21 the floor (limit ×1.35: ×0.14 to spare)');
    const over = v.floorVerdict({ kind: 'distance', limit: 0.5, rounds: [1, 1.1, 1.05].map((f) => ({ gateway: f + 0.83, floor: f })) });
    expect(v.describeStanding(over, { kind: 'distance' })).toBe('+0.830 ms vs the floor (limit +0.500 ms: 0.330 ms over)');
    const under = v.floorVerdict({ kind: 'distance', limit: 0.5, rounds: [1, 1.1, 1.05].map((f) => ({ gateway: f - 0.2, floor: f })) });
    expect(v.describeStanding(under, { kind: 'distance' })).toBe('−0.200 ms vs the floor (limit +0.500 ms: 0.700 ms to spare)');
  });

  it('an UNJUDGED cell carries the reason and the load', () => {
    const noisy = v.floorVerdict({ kind: 'distance', limit: 0.1, rounds: [0.4, 0.9, 0.5].map((f) => ({ gateway: f + 0.3, floor: f })) });
    expect(v.resultCell(noisy, '3.10–5.62')).toBe("UNJUDGED (noisy: the floor's spread 0.500 > the margin 0.100; load 3.10–5.62)");
    expect(v.loadRange([3.1, null, 5.62, 4])).toBe('3.10–5.62');
    expect(v.loadRange([])).toBeNull();
  });
});

describe('checkTargets on a made-up run', () => {
  const row = (round: number, target: string, fields: object) => ({ round, target, loadAvg1m: 1.5, ...fields });
  const results = {
    options: { scenarios: [1, 2, 3] },
    throughput: {
      rows: [1, 2, 3].flatMap((r) => [
        row(r, 'gateway', { tool: 'wrk', connections: 32, cpuUsPerReq: 120 + r, reqPerSec: 9000 }),
        row(r, 'bare-undici', { tool: 'wrk', connections: 32, cpuUsPerReq: 100 + r, reqPerSec: 10000 }),
        row(r, 'fastify-stack', { tool: 'wrk', connections: 32, cpuUsPerReq: 300, reqPerSec: 4000 }),
      ]),
      summary: [{ tool: 'wrk', connections: 32, byTarget: { gateway: { vs: { 'fastify-stack': 2.25 }, cpuUsPerReq: 122, cpuVsBareUndici: 1.2 }, 'bare-undici': { cpuUsPerReq: 102 } } }],
    },
    fixedRate: {
      ratePerSec: 2000,
      // The floor moves 0.3 ms between rounds: more than the 0.1 ms margin.
      rows: [1, 2, 3].flatMap((r) => [row(r, 'stub-direct', { p50Ms: 0.3 }), row(r, 'bare-undici', { p50Ms: 0.6 + (r - 1) * 0.15 }), row(r, 'gateway', { p50Ms: 0.9 + (r - 1) * 0.15 })]),
      summary: { gateway: { errors: 0, addedP50Ms: 0.6, addedP99Ms: 3 }, 'bare-undici': { addedP50Ms: 0.45, addedP99Ms: 2 } },
    },
    streamDelay: {
      concurrency: 32,
      rows: [1, 2, 3].flatMap((r) => [
        row(r, 'stub-direct', { firstEventP50Ms: 11, eventDelayP99Ms: 2 }),
        row(r, 'bare-undici', { firstEventP50Ms: 12.5, eventDelayP99Ms: 2.5 }),
        row(r, 'gateway', { firstEventP50Ms: 14, eventDelayP99Ms: 2.8 }),
      ]),
      summary: {
        gateway: { errors: 0, heldBack: 0, outOfOrder: 0, events: 15360, addedFirstEventP50Ms: 3, addedDelayP99Ms: 0.8 },
        'bare-undici': { heldBack: 0, outOfOrder: 0, addedFirstEventP50Ms: 1.5, addedDelayP99Ms: 0.5 },
      },
    },
  };
  const byTarget = (list: Check[], text: string) => list.find((c) => c.target.includes(text))!;

  it('gives each floor-relative target its verdict from the per-round figures', () => {
    const list = checks.checkTargets(results);
    expect(byTarget(list, 'CPU/request').verdict).toBe('PASS');
    expect(byTarget(list, 'CPU/request').measured).toMatch(/^×1\.20 the floor \(limit ×1\.35: ×0\.15 to spare\)/);
    expect(byTarget(list, 'Node peer').verdict).toBe('PASS');
    expect(byTarget(list, 'added p50').result).toMatch(/^UNJUDGED \(noisy: the floor's spread 0\.300 > the margin 0\.100; load 1\.50\)$/);
    expect(byTarget(list, 'first event').verdict).toBe('FAIL');
    expect(byTarget(list, 'first event').measured).toMatch(/^\+1\.500 ms vs the floor \(limit \+0\.500 ms: 1\.000 ms over\)/);
    expect(byTarget(list, 'per event p99').verdict).toBe('PASS');
    expect(byTarget(list, 'held back').verdict).toBe('PASS');
  });

  it('sums the verdicts in one line and keeps issue 26 absolute targets as a footnote', () => {
    const list = checks.checkTargets(results);
    expect(checks.verdictSummary(list, { loadAvgAtStart: [1, 2, 3], loadAvgAtEnd: [2, 2, 2] })).toBe(
      'verdicts: 4 PASS, 1 FAIL, 1 UNJUDGED (the floor moved more than the margin), 0 n/a; load average 1 2 3 at start, 2 2 2 at end',
    );
    const footnote = checks.absoluteTargets(results);
    expect(footnote).toContain('first event added ≤ 1 ms: +3.000 ms (floor +1.500 ms), missed');
    expect(footnote).toContain('CPU/request ≤ 1.5× bare undici (wrk, 32 conns): ×1.20, met');
    for (const line of footnote) expect(line).not.toMatch(/PASS|FAIL/);
  });

  it('scenario 4: the gateway against the floor held before and after it; a smaller run is n/a', () => {
    const idle = (count: number, gwKb: number, floorKb: number[]) => ({
      options: { scenarios: [4] },
      idleStreams: {
        attempts: [{ count, peakOpen: count, errors: 0, processes: 3, gatewayTotalVmHwmKb: gwKb, perStreamKb: 30 }],
        floor: floorKb.map((hwmKb) => ({ count, peakOpen: count, errors: 0, hwmKb, perStreamKb: 27, loadBefore: '2.00 1 1', loadAfter: '3.00 1 1' })),
      },
    });
    expect(checks.checkTargets(idle(10_000, 600_000, [450_000, 460_000]))[0]!.verdict).toBe('FAIL');
    expect(checks.checkTargets(idle(10_000, 500_000, [450_000, 460_000]))[0]!.verdict).toBe('PASS');
    expect(checks.checkTargets(idle(10_000, 500_000, [450_000, 700_000]))[0]!.verdict).toBe('UNJUDGED');
    expect(checks.checkTargets(idle(2_000, 500_000, [450_000, 460_000]))[0]!.verdict).toBe('n/a');
  });

  it('scenario 7: an MCP call\'s added p50 against the floor\'s + 0.2 ms and its CPU against 1.5× the floor\'s; errors fail both', () => {
    const mcp = (gatewayP50: number, gatewayCpu: number, errors = 0) => ({
      options: { scenarios: [7] },
      mcpCalls: {
        ratePerSec: 2000,
        rows: [1, 2, 3].flatMap((r) => [
          row(r, 'stub-direct', { p50Ms: 0.2, cpuUsPerCall: null }),
          row(r, 'bare-undici', { p50Ms: 0.4 + r * 0.01, cpuUsPerCall: 60 + r }),
          row(r, 'gateway', { p50Ms: gatewayP50 + r * 0.01, cpuUsPerCall: gatewayCpu + r }),
        ]),
        summary: { gateway: { errors, cpuUsPerCall: gatewayCpu }, 'bare-undici': { errors: 0, cpuUsPerCall: 62 } },
      },
    });
    const verdicts = (run: object) => checks.checkTargets(run).map((c) => [c.scenario, c.verdict]);
    // 0.1 ms over the floor each round (within 0.2); CPU ×1.44 the floor's (89 vs 62 µs in the median round).
    expect(verdicts(mcp(0.5, 87))).toEqual([[7, 'PASS'], [7, 'PASS']]);
    // 0.5 ms over the floor; ×2 its CPU.
    expect(verdicts(mcp(0.9, 124))).toEqual([[7, 'FAIL'], [7, 'FAIL']]);
    expect(verdicts(mcp(0.5, 87, 3))).toEqual([[7, 'FAIL'], [7, 'FAIL']]);
    expect(byTarget(checks.checkTargets(mcp(0.5, 87)), 'MCP tools/call gateway CPU').measured).toMatch(/^×1\.44 the floor \(limit ×1\.50/);
  });
});
