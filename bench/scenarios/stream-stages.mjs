// Where a stream's start spends its time, inside the process under test: the gateway (the
// bench's production config, optionally with config variations of bench/lib/build-specs.mjs)
// or bare undici (bench/reference/bare-undici-proxy.mjs). 32 streams at a time by default (20
// events 10 ms apart, like scenario 3), each with its own x-request-id;
// bench/lib/stage-timestamps.mjs, preloaded into the target, stamps each stage, and this prints
// the p50 / p90 of each step and of the client's time to the response head
// (docs/decisions/0028-worker-runtime-memory.md). The steps are measured inside one process,
// so they name the stage a wait happens in; their size still depends on the machine's load.
import http from 'node:http';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startBenchRedis } from '../lib/bench-redis.mjs';
import { applyConfigVariations } from '../lib/build-specs.mjs';
import { BENCH_AGENT, createBenchKey, startGatewayProcess, writeGatewayConfig } from '../lib/gateway.mjs';
import { startNodeProgram, startStubRunner, stopAll } from '../lib/processes.mjs';

const toolRoot = resolve(import.meta.dirname, '..', '..');

export const USAGE = `node bench/run.mjs stream-stages [gateway [variation[,variation...]] | bare-undici]

  node bench/run.mjs stream-stages gateway no-limits
  node bench/run.mjs stream-stages gateway no-limits,no-journal
  node bench/run.mjs stream-stages bare-undici

  Options (environment, so the positional arguments stay as they were):
  STAGES_PROBE=1          preload bench/lib/hand-off-probe.mjs too: what runs between the
                          hand-off to undici and the request's first byte (decision 0031)
  STAGES_STREAMS=N        streams measured (default 256; the test uses fewer)
  STAGES_CONCURRENCY=N    streams at a time (default 32; 1 shows a stage on an idle loop)
  STAGES_NODE_ARGS="…"    extra node flags for the process under test (e.g. --trace-gc-nvp;
                          its output stays in the temp dir, printed at the end)
  STAGES_REPO=DIR         measure another checkout's build (its dist/) with this tool
  STAGES_JSON=1           also print one JSON line of the p50s, for scripts taking medians
`;

export async function run(argv) {
  const repoRoot = process.env.STAGES_REPO ? resolve(process.env.STAGES_REPO) : toolRoot;
  const [targetName = 'gateway', variation] = argv;
  const STREAMS = Number(process.env.STAGES_STREAMS ?? 256);
  const CONCURRENCY = Number(process.env.STAGES_CONCURRENCY ?? 32);
  const probe = process.env.STAGES_PROBE === '1';
  const preload = join(toolRoot, 'bench', 'lib', probe ? 'hand-off-probe.mjs' : 'stage-timestamps.mjs');
  const tmpDir = mkdtempSync(join(tmpdir(), 'agentgw-stages-'));

  const extraNodeArgs = process.env.STAGES_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
  const stub = await startStubRunner({ tmpDir });
  let target;
  if (targetName === 'gateway') {
    const redis = await startBenchRedis({ tmpDir });
    const configPath = writeGatewayConfig({ tmpDir, redisUrl: redis.url, prefix: 'stages:', stubUrl: stub.url, heartbeat: '5s' });
    if (variation) applyConfigVariations(configPath, variation.split(','));
    const { rawKey } = await createBenchKey({ repoRoot, configPath });
    const gateway = await startGatewayProcess({ repoRoot, configPath, redisUrl: redis.url, tmpDir, nodeArgs: ['--import', preload, ...extraNodeArgs] });
    target = { pid: gateway.pid, url: `${gateway.url}/agents/${BENCH_AGENT}/api/v1/chat/stream`, headers: { authorization: `Bearer ${rawKey}` } };
  } else if (targetName === 'bare-undici') {
    const proxy = await startNodeProgram({
      name: 'bare-undici',
      script: join(toolRoot, 'bench', 'reference', 'bare-undici-proxy.mjs'),
      args: ['--upstream', stub.url, '--port', '0'],
      nodeArgs: ['--import', preload, ...extraNodeArgs],
      tmpDir,
    });
    target = { pid: proxy.pid, url: `${proxy.url}/api/v1/chat/stream`, headers: {} };
  } else {
    throw new Error(`unknown target ${targetName}: gateway [variation] or bare-undici`);
  }

  const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const body = JSON.stringify({ message: 'hi' });
  const clientHeadMs = [];
  let next = 0;

  function oneStream() {
    return new Promise((resolveStream, reject) => {
      const id = `stages-${process.pid}-${next++}`;
      const t0 = performance.now();
      const req = http.request(target.url, {
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'x-bench-stream': 'tokens=20&intervalMs=10', 'x-request-id': id, ...target.headers },
      });
      req.on('response', (res) => {
        clientHeadMs.push(performance.now() - t0);
        res.resume();
        res.on('end', resolveStream);
      });
      req.on('error', reject);
      req.end(body);
    });
  }

  async function streamsOf(count) {
    let started = 0;
    const lane = async () => {
      while (started < count) {
        started += 1;
        await oneStream();
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, lane));
  }

  async function readWhenWritten(file) {
    for (let i = 0; i < 50; i += 1) {
      try {
        return JSON.parse(readFileSync(file, 'utf8'));
      } catch {
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    throw new Error(`no ${file} from ${target.pid}`);
  }

  /** The stage rows (and, with the probe, its summary) since the last collect. */
  async function collect() {
    const file = `/tmp/agentgw-stages-${target.pid}.json`;
    const probeFile = `/tmp/agentgw-handoff-${target.pid}.json`;
    rmSync(file, { force: true });
    rmSync(probeFile, { force: true });
    process.kill(target.pid, 'SIGUSR2');
    const rows = await readWhenWritten(file);
    const probed = probe ? await readWhenWritten(probeFile) : null;
    rmSync(file, { force: true });
    rmSync(probeFile, { force: true });
    return { rows, probed };
  }

  // Warm-up: the pool's connections, the key cache, the lease, the JIT.
  await streamsOf(64);
  await collect();
  clientHeadMs.length = 0;
  await streamsOf(STREAMS);
  const collected = await collect();
  const rows = collected.rows.filter((r) => r.requestStart && r.bodyRead && r.dispatched && r.sentToRunner && r.runnerHead);

  const quantile = (values, q) => {
    const sorted = [...values].sort((a, b) => a - b);
    return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))];
  };
  const show = (label, values) => `${label} ${quantile(values, 0.5).toFixed(3)} / ${quantile(values, 0.9).toFixed(3)}`;
  const step = (from, to) => rows.map((r) => r[to] - r[from]);
  console.log(`${targetName}${variation ? ` (${variation})` : ''}: ${rows.length} of ${STREAMS} streams, ${CONCURRENCY} at a time; p50 / p90 ms`);
  console.log(
    [
      show('request → body read', step('requestStart', 'bodyRead')),
      show('body read → dispatched', step('bodyRead', 'dispatched')),
      show('dispatched → head written to the runner', step('dispatched', 'sentToRunner')),
      show('→ runner head', step('sentToRunner', 'runnerHead')),
      show('client has the head', clientHeadMs),
    ].join('\n'),
  );
  // One JSON line for scripts that alternate builds and take medians over rounds.
  if (process.env.STAGES_JSON) {
    const p50 = (values) => quantile(values, 0.5);
    console.log(JSON.stringify({
      target: `${targetName}${variation ? ` (${variation})` : ''}`,
      bodyRead: p50(step('requestStart', 'bodyRead')),
      dispatched: p50(step('bodyRead', 'dispatched')),
      sent: p50(step('dispatched', 'sentToRunner')),
      runnerHead: p50(step('sentToRunner', 'runnerHead')),
      clientHead: p50(clientHeadMs),
      probe: collected.probed,
    }));
  }
  if (collected.probed) console.log(`hand-off probe: ${JSON.stringify(collected.probed, null, 1)}`);
  await stopAll();
  // Kept when extra node flags were given: their output (a GC trace, a profile) is the point.
  if (extraNodeArgs.length > 0) console.log(`the target's output: ${tmpDir}`);
  else rmSync(tmpDir, { recursive: true, force: true });
}
