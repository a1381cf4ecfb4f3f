// What the usage audit costs the request path (docs/design.md, "Usage audit records": "writes
// are batched off the request path"). The built gateway (`dist/cli/main.js serve`) runs as
// its own process in front of the stub runner (bench/reference/stub-runner.mjs, another
// process); autocannon drives POST /chat from this process. Three audit set-ups, everything else identical
// (same redis block, file key store, a `scale` key with no rate limits, log level warn):
//
//   redis+file  audit.redis_stream + audit.file      both sinks on (a typical shared deployment)
//   file        audit.file only                      the embedded default
//   no-journal  redis+file with audit.journal: false the write-ahead journal's cost (decision 0022)
//   devnull     audit.file: /dev/null                baseline: records are still built, batched
//                                                    and written, but the write costs nothing
//
// There is no "audit off" switch in the product (every authenticated request is audited),
// so /dev/null is the closest honest baseline: the difference to it is the cost of the real
// sinks, not of the audit machinery as a whole.
//
//   npx tsc -p tsconfig.build.json && node bench/audit-overhead.mjs
//        [--duration-s 8] [--runs 3] [--connections 32] [--warmup-s 1]
//
// Rounds interleave the set-ups (redis+file, file, devnull, redis+file, ...) so drift on a
// shared machine spreads over all of them. Each figure is the median of the runs. The
// gateway's own CPU time per 1k requests is printed too: it is less sensitive to
// neighbours than req/s.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { Redis } from 'ioredis';
import { stringify } from 'yaml';
import { openCliKeyStore } from '../dist/cli/keys.js';
import { KeyService } from '../dist/keys/key-service.js';
import { spoolPathFor } from '../dist/audit/audit-spool.js';
import { parseConfig } from '../dist/config/load-config.js';
import { readOption } from './reference/cli-args.mjs';
import { spawnReference } from './reference/spawn-reference.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const cliPath = join(here, '..', 'dist', 'cli', 'main.js');
const argv = process.argv.slice(2);
const durationS = Number(readOption(argv, 'duration-s', undefined, '8'));
const runs = Number(readOption(argv, 'runs', undefined, '3'));
const connections = Number(readOption(argv, 'connections', undefined, '32'));
const warmupS = Number(readOption(argv, 'warmup-s', undefined, '1'));

const STREAM_KEY = 'agentgw:bench-audit';
const BODY = JSON.stringify({ message: 'Hello, what can you do?', context: { user_id: 'u-1', session_id: 's-1' }, max_tokens: 256 });
const SETUPS = ['redis+file', 'no-journal', 'file', 'devnull'];

const children = new Set();
async function stopAll() {
  await Promise.all([...children].map((stop) => stop()));
  children.clear();
}
for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => stopAll().finally(() => process.exit(130)));

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

function stopChild(child, signal = 'SIGTERM') {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  const exited = once(child, 'exit');
  const killTimer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  child.kill(signal);
  return exited.then(() => clearTimeout(killTimer));
}

// utime + stime of one process from /proc (100 Hz clock ticks on Linux).
function cpuMs(pid) {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return null;
  }
}

const median = (values) => {
  const xs = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (xs.length === 0) return NaN;
  const mid = xs.length >> 1;
  return xs.length % 2 ? xs[mid] : (xs[mid - 1] + xs[mid]) / 2;
};

async function startRedisServer(dir) {
  const port = await freePort();
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: 'ignore' });
  children.add(() => stopChild(child));
  const url = `redis://127.0.0.1:${port}/0`;
  const client = new Redis(url, { maxRetriesPerRequest: 1, retryStrategy: (n) => (n > 100 ? null : 50) });
  client.on('error', () => {});
  // On a loaded machine redis-server can take a while to listen: retry the first ping for 20 s.
  for (const deadline = Date.now() + 20_000; ; ) {
    try {
      await client.ping();
      break;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  return { url, client, stop: () => stopChild(child) };
}

async function startGatewayProcess(dir, name, document) {
  const port = await freePort();
  const adminPort = await freePort();
  const configPath = join(dir, `${name}.yaml`);
  await writeFile(configPath, stringify({ ...document, listen: { host: '127.0.0.1', port }, admin: { host: '127.0.0.1', port: adminPort } }));
  const child = spawn(process.execPath, [cliPath, 'serve', '--config', configPath], {
    env: { ...process.env, REDIS_URL: '', PORT: '' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let output = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (text) => (output += text));
  const deadline = Date.now() + 15_000;
  while (!output.includes('agent-gateway listening')) {
    if (child.exitCode !== null) throw new Error(`gateway (${name}) exited early:\n${output}`);
    if (Date.now() > deadline) throw new Error(`gateway (${name}) did not start:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  const stop = () => stopChild(child);
  children.add(stop);
  return {
    url: `http://127.0.0.1:${port}`,
    pid: child.pid,
    output: () => output,
    stop: async () => {
      children.delete(stop);
      await stop();
    },
  };
}

function load(url, key, seconds) {
  return autocannon({
    url: `${url}/agents/support/api/v1/chat`,
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: BODY,
    connections,
    pipelining: 1,
    duration: seconds,
  });
}

async function lineCount(path) {
  try {
    const text = await readFile(path, 'utf8');
    return text.length === 0 ? 0 : text.split('\n').length - 1;
  } catch {
    return 0;
  }
}

const sizeOf = (path) => stat(path).then((s) => s.size, () => 0);

const dir = await mkdtemp(join(tmpdir(), 'agentgw-bench-audit-'));
let redis;
try {
  redis = await startRedisServer(dir);
  const stub = await spawnReference(join(here, 'reference', 'stub-runner.mjs'), ['--port', '0']);
  children.add(() => stub.stop());

  const base = {
    redis: { url: redis.url, prefix: 'agentgw-bench:' },
    keys: { store: 'file', file: join(dir, 'keys.json') },
    plans: { scale: { windows: [] } },
    agents: { support: { upstream: `${stub.url}/api/v1` } },
    log: { level: 'warn' },
    shutdown_grace: '5s',
  };
  const documents = {
    'redis+file': { ...base, audit: { redis_stream: STREAM_KEY, file: join(dir, 'audit.jsonl'), spool: join(dir, 'spool-redis-file.jsonl') } },
    // The same without the write-ahead journal (decision 0022): the difference is the journal's cost.
    'no-journal': { ...base, audit: { redis_stream: STREAM_KEY, file: join(dir, 'audit.jsonl'), spool: join(dir, 'spool-no-journal.jsonl'), journal: false } },
    file: { ...base, audit: { file: join(dir, 'audit.jsonl'), spool: join(dir, 'spool-file.jsonl') } },
    devnull: { ...base, audit: { file: '/dev/null', spool: join(dir, 'spool-devnull.jsonl') } },
  };

  const config = parseConfig({ ...base, listen: { port: 0 }, admin: { port: 0 } }, 'bench', {});
  const store = await openCliKeyStore(config);
  const { rawKey } = await new KeyService({ store, config }).createKey({ account: 'bench', plan: 'scale', agents: ['support'] });
  await store.close();

  console.log(`node ${process.version}, ${connections} connections, ${durationS} s per run (+${warmupS} s warm-up), ${runs} runs per set-up, POST /chat`);
  const rows = Object.fromEntries(SETUPS.map((s) => [s, []]));
  for (let round = 1; round <= runs; round += 1) {
    for (const setup of SETUPS) {
      await redis.client.del(STREAM_KEY);
      await rm(join(dir, 'audit.jsonl'), { force: true });
      const gateway = await startGatewayProcess(dir, setup.replace('+', '-'), documents[setup]);
      await load(gateway.url, rawKey, warmupS);
      // The warm-up's last batch lands before the counts are taken.
      await new Promise((resolve) => setTimeout(resolve, 300));
      const streamBefore = await redis.client.xlen(STREAM_KEY);
      const fileBefore = await lineCount(join(dir, 'audit.jsonl'));
      const cpuBefore = cpuMs(gateway.pid);
      const result = await load(gateway.url, rawKey, durationS);
      const cpu = cpuMs(gateway.pid) - cpuBefore;
      // Let the last batch land, then see whether the sinks kept up (nothing left spooled).
      await new Promise((resolve) => setTimeout(resolve, 300));
      let spooled = 0;
      for (const sink of ['redis', 'file']) {
        const path = spoolPathFor(documents[setup].audit.spool, sink);
        spooled += (await sizeOf(path)) + (await sizeOf(`${path}.replaying`));
      }
      const row = {
        reqPerSec: result.requests.average,
        p50Ms: result.latency.p50,
        p99Ms: result.latency.p99,
        ok: result['2xx'],
        errors: result.errors + result.timeouts + result.non2xx,
        cpuMsPer1k: (cpu / Math.max(1, result.requests.total)) * 1000,
        streamRecords: setup === 'redis+file' || setup === 'no-journal' ? (await redis.client.xlen(STREAM_KEY)) - streamBefore : null,
        fileRecords: setup === 'devnull' ? null : (await lineCount(join(dir, 'audit.jsonl'))) - fileBefore,
        spoolBytes: spooled,
      };
      rows[setup].push(row);
      await gateway.stop();
      console.log(
        `  round ${round} ${setup.padEnd(10)} ${row.reqPerSec.toFixed(0).padStart(6)} req/s  p50 ${row.p50Ms} ms  p99 ${row.p99Ms} ms  ` +
          `cpu ${row.cpuMsPer1k.toFixed(1)} ms/1k  2xx ${row.ok}  errors ${row.errors}` +
          (row.streamRecords === null ? '' : `  stream +${row.streamRecords}`) +
          (row.fileRecords === null ? '' : `  file +${row.fileRecords}`) +
          `  spool ${row.spoolBytes} B`,
      );
    }
  }

  const baseline = median(rows.devnull.map((r) => r.reqPerSec));
  console.log('');
  console.log(`median of ${runs} runs`);
  console.log('set-up       req/s   vs devnull   p50 ms   p99 ms   gateway CPU ms/1k req');
  for (const setup of SETUPS) {
    const rps = median(rows[setup].map((r) => r.reqPerSec));
    const ratio = `${(((rps - baseline) / baseline) * 100).toFixed(1)}%`;
    console.log(
      `${setup.padEnd(10)} ${rps.toFixed(0).padStart(7)} ${ratio.padStart(12)} ${String(median(rows[setup].map((r) => r.p50Ms))).padStart(8)} ` +
        `${String(median(rows[setup].map((r) => r.p99Ms))).padStart(8)} ${median(rows[setup].map((r) => r.cpuMsPer1k)).toFixed(1).padStart(12)}`,
    );
  }
} finally {
  redis?.client.disconnect();
  await stopAll();
  await rm(dir, { recursive: true, force: true });
}
