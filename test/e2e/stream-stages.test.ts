// `node bench/run.mjs stream-stages` with the hand-off probe (decision 0031) runs end to end against
// bare undici and the gateway and reports every stream's stages and the probe's counts. No
// timing is asserted (speed is the tool's report, never a test's verdict on a shared machine):
// only that the numbers are there, add up, and came from the process under test.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runNodeScript } from '../helpers/run-node-script.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';

interface ProbeSummary {
  requests: number;
  writtenInSameCall: number;
  withOtherImmediateBefore: number;
  newConnections: number;
  handOffToWriteMs: { p50: number; p90: number };
  immediates: Record<string, { count: number; ms: number }>;
  cpuMs: number;
  scavengesAndOtherGc: { count: number };
  newSpaceKiB: number;
}

interface StagesLine {
  target: string;
  bodyRead: number;
  dispatched: number;
  sent: number;
  runnerHead: number;
  clientHead: number;
  probe: ProbeSummary | null;
}

// Fewer than the tool's 256: the test checks the report, not the figures.
const STREAMS = 64;

let redis: TestRedis;

beforeAll(async () => {
  redis = await startRedis();
});

afterAll(async () => {
  await redis?.close();
});

function runStages(args: string[], env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  return runNodeScript('bench/run.mjs', ['stream-stages', ...args], { ...process.env, REDIS_URL: redis.url, STAGES_JSON: '1', STAGES_STREAMS: String(STREAMS), ...env });
}

function stagesLine(output: string): StagesLine {
  const line = output.split('\n').find((l) => l.startsWith('{"target"'));
  if (line === undefined) throw new Error(`no JSON line in:\n${output}`);
  return JSON.parse(line) as StagesLine;
}

describe('bench/run.mjs stream-stages with the hand-off probe', () => {
  it.each([
    ['bare-undici', []],
    ['gateway', ['no-limits,no-request-log']],
  ])('reports the stages and the probe for %s', async (target, variation) => {
    const { code, output } = await runStages([target, ...variation], { STAGES_PROBE: '1' });
    expect(code, output).toBe(0);
    const line = stagesLine(output);
    expect(line.target).toBe(variation.length > 0 ? `${target} (${variation[0]})` : target);
    for (const stage of [line.bodyRead, line.dispatched, line.sent, line.runnerHead, line.clientHead]) {
      expect(Number.isFinite(stage) && stage >= 0, String(stage)).toBe(true);
    }
    // The client sees the head after the process under test asked the runner for it.
    expect(line.clientHead).toBeGreaterThan(line.sent);
    const probe = line.probe!;
    // Every measured stream's request went through undici in the process under test, on the
    // pool's warm connections (the warm-up opened them).
    expect(probe.requests).toBe(STREAMS);
    expect(probe.newConnections).toBeLessThan(probe.requests);
    expect(probe.handOffToWriteMs.p90).toBeGreaterThanOrEqual(probe.handOffToWriteMs.p50);
    expect(probe.cpuMs).toBeGreaterThan(0);
    expect(probe.newSpaceKiB).toBeGreaterThan(0);
    // Each immediate is counted under its callback's name; the process ran some.
    const counted = Object.values(probe.immediates).reduce((n, e) => n + e.count, 0);
    expect(counted).toBeGreaterThan(0);
    expect(output).toContain('hand-off probe:');
  }, 120_000);

  it('runs without the probe as before', async () => {
    const { code, output } = await runStages(['bare-undici'], {});
    expect(code, output).toBe(0);
    const line = stagesLine(output);
    expect(line.probe).toBeNull();
    expect(output).not.toContain('hand-off probe:');
  }, 120_000);
});
