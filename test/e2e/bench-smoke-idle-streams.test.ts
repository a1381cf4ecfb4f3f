// `npm run bench -- --scenarios 4` runs end to end at toy size and writes its result file:
// the idle streams held by the harness alone, by the bare-undici floor just before and just
// after the gateway, and by the gateway as two reuse_port instances, all without an error,
// and scenario 4's target given its verdict (n/a: 50 streams are not 10,000). Scenarios 1, 2,
// 3 and 5 are test/e2e/bench-smoke.test.ts: scenario 4 mostly waits (processes starting,
// streams held), so in a file of its own it overlaps the other half on two test workers.
// No timing is asserted (issue 7).
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runNodeScript } from '../helpers/run-node-script.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';

interface IdleStreamsResult {
  options: { scenarios: number[] };
  idleStreams: { direct: { open: number }; floor: { label: string; count: number; peakOpen: number; errors: number; hwmKb: number | null; processes: number }[]; attempts: { count: number; peakOpen: number; errors: number; gatewayVmHwmKb: number | null; processes: number; topology: string }[] };
  targets: { scenario: number; target: string; result: string; verdict: string }[];
}

let redis: TestRedis;
let dir: string;

beforeAll(async () => {
  redis = await startRedis();
  dir = await mkdtemp(join(tmpdir(), 'agentgw-bench-smoke-idle-'));
});

afterAll(async () => {
  await redis?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('npm run bench -- --scenarios 4 (smoke)', () => {
  it('holds the idle streams on the harness, the floor and the gateway, and writes its result file', async () => {
    const out = join(dir, 'result.json');
    const { code, output } = await runNodeScript('bench/run.mjs', [
      '--quick',
      '--no-wrk',
      '--no-nginx',
      // The peers are measured by scenarios 1–3 only (the other file).
      '--no-peers',
      '--scenarios', '4',
      '--idle-streams', '50',
      '--idle-hold-s', '2',
      // Two processes as 10,000 streams need here, as two reuse_port instances (decision 0030).
      '--idle-workers', '2',
      '--idle-topology', 'reuseport',
      '--timeout-s', '360',
      '--out', out,
    ], { ...process.env, REDIS_URL: redis.url });
    expect(code, output.slice(-3000)).toBe(0);
    const result = JSON.parse(await readFile(out, 'utf8')) as IdleStreamsResult;
    expect(result.options.scenarios).toEqual([4]);

    expect(result.idleStreams.direct.open).toBe(50);
    // Two standalone instances on one port (--idle-topology reuseport): both counted.
    expect(result.idleStreams.attempts[0]).toMatchObject({ count: 50, peakOpen: 50, errors: 0, processes: 2, topology: 'reuseport' });
    expect(result.idleStreams.attempts[0]!.gatewayVmHwmKb).toBeGreaterThan(0);
    // The floor held the same streams on as many processes, just before and just after the gateway.
    expect(result.idleStreams.floor.map((f) => [f.label, f.count, f.peakOpen, f.errors, f.processes])).toEqual([
      ['before', 50, 50, 0, 2],
      ['after', 50, 50, 0, 2],
    ]);
    for (const f of result.idleStreams.floor) expect(f.hwmKb).toBeGreaterThan(0);
    // Scenario 4's one target, checked: n/a, as this toy run cannot speak for 10,000 streams.
    expect(result.targets.map((t) => [t.scenario, t.verdict])).toEqual([[4, 'n/a']]);
    expect(result.targets[0]!.target).toMatch(/the floor's/);
    expect(output).toMatch(/^verdicts: \d+ PASS, \d+ FAIL, \d+ UNJUDGED \(the floor moved more than the margin\), \d+ n\/a; load average /m);
  }, 420_000);
});
