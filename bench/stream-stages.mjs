// Where a stream's start spends its time, inside the process under test: the gateway (the
// bench's production config, optionally with one config variation of bench/lib/build-specs.mjs)
// or bare undici (bench/reference/bare-undici-proxy.mjs). 32 streams at a time (20 events 10 ms
// apart, like scenario 3), each with its own x-request-id; bench/lib/stage-timestamps.mjs,
// preloaded into the target, stamps each stage, and this prints the p50 / p90 of each step and
// of the client's time to the response head (docs/decisions/0028-worker-runtime-memory.md).
// The steps are measured inside one process, so they name the stage a wait happens in; their
// size still depends on the machine's load. Not part of `npm run bench`.
//
//   node bench/stream-stages.mjs gateway [variation]     e.g. gateway no-limits
//   node bench/stream-stages.mjs bare-undici
import http from 'node:http';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startBenchRedis } from './lib/bench-redis.mjs';
import { applyConfigVariations } from './lib/build-specs.mjs';
import { BENCH_AGENT, createBenchKey, startGatewayProcess, writeGatewayConfig } from './lib/gateway.mjs';
import { spawnProcess, startStubRunner, stopAll } from './lib/processes.mjs';

const repoRoot = resolve(import.meta.dirname, '..');
const [targetName = 'gateway', variation] = process.argv.slice(2);
const STREAMS = 256;
const CONCURRENCY = 32;
const preload = join(repoRoot, 'bench', 'lib', 'stage-timestamps.mjs');
const tmpDir = mkdtempSync(join(tmpdir(), 'agentgw-stages-'));

const stub = await startStubRunner({ tmpDir });
let target;
if (targetName === 'gateway') {
  const redis = await startBenchRedis({ tmpDir });
  const configPath = writeGatewayConfig({ tmpDir, redisUrl: redis.url, prefix: 'stages:', stubUrl: stub.url, heartbeat: '5s' });
  if (variation) applyConfigVariations(configPath, [variation]);
  const { rawKey } = await createBenchKey({ repoRoot, configPath });
  const gateway = await startGatewayProcess({ repoRoot, configPath, redisUrl: redis.url, tmpDir, nodeArgs: ['--import', preload] });
  target = { pid: gateway.pid, url: `${gateway.url}/agents/${BENCH_AGENT}/api/v1/chat/stream`, headers: { authorization: `Bearer ${rawKey}` } };
} else if (targetName === 'bare-undici') {
  const handle = await spawnProcess({
    name: 'bare-undici',
    command: process.execPath,
    args: ['--import', preload, join(repoRoot, 'bench', 'reference', 'bare-undici-proxy.mjs'), '--upstream', stub.url, '--port', '0'],
    readyPattern: /^listening (\d+)$/m,
    logFile: join(tmpDir, 'bare-undici.out'),
  });
  target = { pid: handle.pid, url: `http://127.0.0.1:${handle.match[1]}/api/v1/chat/stream`, headers: {} };
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

async function run(count) {
  let started = 0;
  const lane = async () => {
    while (started < count) {
      started += 1;
      await oneStream();
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, lane));
}

async function collect() {
  const file = `/tmp/agentgw-stages-${target.pid}.json`;
  rmSync(file, { force: true });
  process.kill(target.pid, 'SIGUSR2');
  for (let i = 0; i < 50; i += 1) {
    try {
      return JSON.parse(readFileSync(file, 'utf8'));
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  throw new Error(`no stage file from ${target.pid}`);
}

// Warm-up: the pool's connections, the key cache, the lease, the JIT.
await run(64);
await collect();
clientHeadMs.length = 0;
await run(STREAMS);
const rows = (await collect()).filter((r) => r.requestStart && r.bodyRead && r.dispatched && r.sentToRunner && r.runnerHead);

const quantile = (values, q) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))];
};
const show = (label, values) => `${label} ${quantile(values, 0.5).toFixed(3)} / ${quantile(values, 0.9).toFixed(3)}`;
const step = (from, to) => rows.map((r) => r[to] - r[from]);
console.log(`${targetName}${variation ? ` (${variation})` : ''}: ${rows.length} of ${STREAMS} streams; p50 / p90 ms`);
console.log(
  [
    show('request → body read', step('requestStart', 'bodyRead')),
    show('body read → dispatched', step('bodyRead', 'dispatched')),
    show('dispatched → head written to the runner', step('dispatched', 'sentToRunner')),
    show('→ runner head', step('sentToRunner', 'runnerHead')),
    show('client has the head', clientHeadMs),
  ].join('\n'),
);
await stopAll();
process.exit(0);
