// `npm run bench` runs end to end at toy size and writes its result file: scenarios 1, 2, 3,
// 5 and 7 measured, every target answered without errors (scenario 4, the idle streams, is
// test/e2e/bench-smoke-idle-streams.test.ts: two files, so the two halves of the bench's
// mostly-waiting run overlap on two test workers). No timing is asserted here (issue 7:
// speed is the bench's report, never a test's pass/fail on a shared machine). The peer
// gateways (issue 26, bench/peers) either start and answer like the references, or are
// skipped with the reason printed: one or the other, for each of them.
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runNodeScript } from '../helpers/run-node-script.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';

interface BenchResult {
  options: { scenarios: number[] };
  peers: { name: string; ran: boolean; reason: string | null }[];
  throughput: { rows: { target: string; requests: number; errors: number; timeouts: number; non2xx: number }[] };
  fixedRate: { rows: { target: string; ok: number; errors: number; errorKinds: Record<string, number>; non2xx: number }[] };
  streamDelay: { rows: { target: string; streams: number; completed: number; errors: number; errorKinds: Record<string, number>; events: number; outOfOrder: number }[] };
  redisCommands: { perRequest: { command: string; perRequest: number; sentAs: string }[] };
  targets: { scenario: number; target: string; result: string; verdict: string }[];
  absoluteTargets: string[];
  nodeRuntimes: { name: string; version: string; path: string }[];
  nodeRuntimeSummary: { rows: { target: string; node: string; throughput: { cpuUsPerReq: number | null; p99Ms: number | null }[]; fixedRate: { p99Ms: number } | null }[] };
  redisCommandsByVariant: Record<string, { sentPerRequest: number } | null>;
  mcpCalls: { rows: { target: string; ok: number; errors: number; non2xx: number; cpuUsPerCall: number | null }[]; gatewayToolCalls: number };
}

// --node with a path (this runtime) runs one more gateway beside the default one, as
// `--node 22,24,26` does with fetched runtimes, without needing the registry here.
const RUNTIME_GATEWAY = `gateway-node${/^v(\d+)/.exec(process.version)![1]}`;
const REFERENCES = ['stub-direct', 'bare-undici', 'bare-http-proxy', 'gateway', RUNTIME_GATEWAY];
const PEERS = ['fastify-stack', 'portkey'];

let redis: TestRedis;
let dir: string;

beforeAll(async () => {
  redis = await startRedis();
  dir = await mkdtemp(join(tmpdir(), 'agentgw-bench-smoke-'));
});

afterAll(async () => {
  await redis?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

function runBench(args: string[]): Promise<{ code: number | null; output: string }> {
  return runNodeScript('bench/run.mjs', args, { ...process.env, REDIS_URL: redis.url });
}

describe('npm run bench (smoke)', () => {
  it('runs scenarios 1, 2, 3, 5 and 7 at toy size against every target and writes its result file', async () => {
    const out = join(dir, 'result.json');
    const { code, output } = await runBench([
      '--quick',
      '--no-wrk',
      '--no-nginx',
      '--scenarios', '1,2,3,5,7',
      '--connections', '4',
      '--duration-s', '1',
      '--warmup-s', '1',
      '--rate', '100',
      '--streams', '8',
      '--stream-concurrency', '4',
      '--timeout-s', '420',
      '--node', process.execPath,
      '--out', out,
    ]);
    expect(code, output.slice(-3000)).toBe(0);
    const result = JSON.parse(await readFile(out, 'utf8')) as BenchResult;
    expect(result.options.scenarios).toEqual([1, 2, 3, 5, 7]);

    // Each peer ran (then it is measured below like every other target), or was skipped
    // with its reason in the result file and on the bench's output.
    expect(result.peers.map((p) => p.name).sort()).toEqual([...PEERS].sort());
    const ran = result.peers.filter((p) => p.ran).map((p) => p.name);
    for (const peer of result.peers.filter((p) => !p.ran)) {
      expect(peer.reason, peer.name).toMatch(/\S/);
      expect(output).toContain(`peer ${peer.name}: SKIPPED — ${peer.reason}`);
    }
    const TARGETS = [...REFERENCES, ...ran];

    const answered = (rows: { target: string }[]) => [...new Set(rows.map((r) => r.target))].sort();
    // A peer is measured, not vouched for: one that is slower than the load (Portkey on a
    // busy machine) may leave requests unanswered in time, and those are reported as
    // timeouts. Every other error, a wrong status, a reordered event fails it like any target.
    const isPeer = (target: string) => PEERS.includes(target);
    const onlyTimeouts = (kinds: Record<string, number>) => Object.keys(kinds).filter((k) => k !== 'timeout');
    // Scenario 1 also drives the default --limit-variants gateway (a token budget and a stream cap).
    expect(answered(result.throughput.rows)).toEqual([...TARGETS, 'gateway-budgets-cap'].sort());
    expect(result.redisCommandsByVariant['gateway-budgets-cap']?.sentPerRequest).toBeGreaterThan(0);
    for (const row of result.throughput.rows) {
      expect(row.requests, row.target).toBeGreaterThan(0);
      expect(row.errors - (isPeer(row.target) ? row.timeouts : 0) + row.non2xx, row.target).toBe(0);
    }
    expect(answered(result.fixedRate.rows)).toEqual([...TARGETS].sort());
    for (const row of result.fixedRate.rows) {
      if (isPeer(row.target)) expect([row.ok > 0, onlyTimeouts(row.errorKinds), row.non2xx], row.target).toEqual([true, [], 0]);
      else expect([row.ok > 0, row.errors, row.non2xx], row.target).toEqual([true, 0, 0]);
    }
    expect(answered(result.streamDelay.rows)).toEqual([...TARGETS].sort());
    for (const row of result.streamDelay.rows) {
      if (isPeer(row.target)) expect([row.completed > 0, onlyTimeouts(row.errorKinds), row.outOfOrder], row.target).toEqual([true, [], 0]);
      else expect([row.completed, row.errors, row.outOfOrder], row.target).toEqual([row.streams, 0, 0]);
      expect(row.events, row.target).toBe(row.completed * 20);
    }
    expect(result).not.toHaveProperty('idleStreams');
    // Scenario 7: MCP tools/call at the MCP server direct, the floor in front of it and the
    // gateway, every call answered; the gateway forwarded them (its own counter), and the
    // floor's and the gateway's CPU per call were read (at 100 calls a 10 ms clock tick may read 0).
    expect(answered(result.mcpCalls.rows)).toEqual(['bare-undici', 'gateway', 'stub-direct']);
    for (const row of result.mcpCalls.rows) expect([row.ok > 0, row.errors, row.non2xx], row.target).toEqual([true, 0, 0]);
    const mcpGateway = result.mcpCalls.rows.find((r) => r.target === 'gateway')!;
    expect(result.mcpCalls.gatewayToolCalls).toBeGreaterThanOrEqual(mcpGateway.ok);
    for (const row of result.mcpCalls.rows) expect(row.cpuUsPerCall === null, row.target).toBe(row.target === 'stub-direct');
    expect(output).toContain('Scenario 7 — MCP tools/call');
    // The limiter's script was counted; audit records were never sent one XADD at a time.
    const sent = (command: string) => result.redisCommands.perRequest.find((c) => c.command === command && c.sentAs === 'client')?.perRequest ?? 0;
    expect(sent('evalsha')).toBeGreaterThan(0);
    expect(sent('xadd')).toBe(0);
    // The runtime table: the default gateway, then the --node one, each with CPU per request and p99.
    expect(result.nodeRuntimes).toEqual([{ name: RUNTIME_GATEWAY, version: process.version, path: process.execPath }]);
    expect(result.nodeRuntimeSummary.rows.map((r) => [r.target, r.node])).toEqual([['gateway', process.version], [RUNTIME_GATEWAY, process.version]]);
    for (const row of result.nodeRuntimeSummary.rows) {
      for (const t of row.throughput) expect([t.cpuUsPerReq! > 0, t.p99Ms! >= 0], row.target).toEqual([true, true]);
      expect(row.fixedRate!.p99Ms, row.target).toBeGreaterThan(0);
    }
    expect(output).toContain('Node runtimes');
    // Every target of the scenarios run was checked and given a verdict: n/a only where this
    // toy run cannot speak (no peer ran). A floor-relative target of one round cannot show the
    // floor held still, so it is UNJUDGED, and says why; the peer, held-back and Redis targets
    // are judged. Scenario 4's target is the other file's.
    expect(new Set(result.targets.map((t) => t.scenario))).toEqual(new Set([1, 2, 3, 5, 7]));
    const cannotSpeak = (t: { scenario: number; target: string }) => t.target.includes('Node peer') && ran.length === 0;
    const floorRelative = (t: { target: string }) => /the floor's/.test(t.target);
    for (const t of result.targets) {
      if (cannotSpeak(t)) expect(t.verdict, t.target).toBe('n/a');
      else if (floorRelative(t)) expect(t.result, t.target).toMatch(/^UNJUDGED \(noisy: 1 round of the floor: its spread is unknown; load [\d.–]+\)$/);
      else expect(['PASS', 'FAIL', 'UNJUDGED'], t.target).toContain(t.verdict);
    }
    expect(result.targets.filter((t) => t.target.includes('Node peer')).length).toBe(1);
    expect(result.targets.filter(floorRelative).map((t) => t.scenario)).toEqual([1, 2, 3, 3, 7, 7]);
    expect(output).toMatch(/^verdicts: \d+ PASS, \d+ FAIL, \d+ UNJUDGED \(the floor moved more than the margin\), \d+ n\/a; load average /m);
    expect(output).toContain("footnote, issue 26's absolute targets (not verdicts):");
    expect(result.absoluteTargets.some((line) => line.startsWith('first event added ≤ 1 ms: '))).toBe(true);
  }, 480_000);

  it('skips a peer that cannot be installed, with the reason, and starts nothing for it', async () => {
    // A bench/peers whose package has no lockfile: `npm ci` refuses it, as it would a
    // registry that cannot be reached.
    const root = join(dir, 'broken-peers');
    await mkdir(join(root, 'bench', 'peers'), { recursive: true });
    await writeFile(join(root, 'bench', 'peers', 'package.json'), JSON.stringify({ name: 'broken-peers', private: true, dependencies: { fastify: '5.12.8' } }));
    // A bench module in plain JavaScript: imported by URL, typed here by what is used.
    const peersModule = pathToFileURL(join(process.cwd(), 'bench', 'lib', 'peers.mjs')).href;
    const { startPeers } = (await import(peersModule)) as { startPeers: (o: object) => Promise<{ targets: unknown[]; handles: unknown[]; status: { name: string; ran: boolean; reason: string | null }[] }> };
    const lines: string[] = [];
    const peers = await startPeers({ repoRoot: root, tmpDir: dir, fdLimit: null, redis: { url: redis.url }, stubUrl: 'http://127.0.0.1:9', rawKey: 'k', prefix: 'p:', account: 'a', log: (line: string) => lines.push(line) });
    expect(peers.targets).toEqual([]);
    expect(peers.handles).toEqual([]);
    expect(peers.status.map((p) => [p.name, p.ran])).toEqual([
      ['fastify-stack', false],
      ['portkey', false],
    ]);
    for (const p of peers.status) {
      expect(p.reason).toMatch(/^npm ci --prefix bench\/peers failed: \S/);
      expect(lines).toContain(`peer ${p.name}: skipped — ${p.reason}`);
    }
  }, 120_000);
});
