// What one rate-limit decision costs on Redis: RedisRateLimiter.consume() latency (median,
// p99) over sequential calls, throughput with N calls in flight, and the Redis commands per
// request from `INFO commandstats` deltas (expected: one EVALSHA round trip; the commands
// the script runs inside Redis are listed too). The in-memory limiter is timed alongside
// for scale. Imports the built code: run `npx tsc -p tsconfig.build.json` first.
// Then the same for streams under a concurrency cap (docs/decisions/0020): each call takes a
// slot in the script and gives it back when its "stream" ends (at once), so the figures are
// a capped stream's whole cost: admission, release, and the refreshes of the run.
//
//   node bench/ratelimit-cost.mjs [--calls 20000] [--concurrency 32] [--subjects 100]
//
// Redis: a throwaway redis-server on a free port (like test/helpers/redis.ts), else REDIS_URL.
// The machine may be shared: absolute figures drift between runs; commands per request do not.
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { once } from 'node:events';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { startBenchRedis } from './lib/bench-redis.mjs';
import { readOption } from './reference/cli-args.mjs';

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = (path) => pathToFileURL(join(repoRoot, 'dist', path)).href;
if (!existsSync(join(repoRoot, 'dist/ratelimit/redis-rate-limiter.js'))) {
  process.stderr.write('dist/ is missing: run `npx tsc -p tsconfig.build.json` first\n');
  process.exit(1);
}
const { RedisRateLimiter } = await import(dist('ratelimit/redis-rate-limiter.js'));
const { MemoryRateLimiter } = await import(dist('ratelimit/memory-rate-limiter.js'));
const { createRedisClient } = await import(dist('redis/redis-client.js'));
const { silentLogger } = await import(dist('logger.js'));

const argv = process.argv.slice(2);
const calls = Number(readOption(argv, 'calls', undefined, '20000'));
const concurrency = Number(readOption(argv, 'concurrency', undefined, '32'));
const subjects = Number(readOption(argv, 'subjects', undefined, '100'));
const PREFIX = 'bench:';
// Two windows, as the default plans have; limits high enough that every call is admitted,
// so each one takes the write path (HINCRBY + PEXPIRE per window), the dearer one.
const WINDOWS = [
  { name: 'minute', limit: 1_000_000_000, windowMs: 60_000 },
  { name: 'day', limit: 1_000_000_000, windowMs: 86_400_000 },
];

async function connect(url) {
  const deadline = Date.now() + 10_000;
  for (;;) {
    // The gateway's own client settings (fail fast while disconnected), with a roomy timeout.
    const client = createRedisClient({ url, prefix: PREFIX, commandTimeoutMs: 5_000 }, silentLogger, 'bench');
    try {
      if (client.status !== 'ready') await once(client, 'ready');
      await client.ping();
      return client;
    } catch (error) {
      client.disconnect();
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

/** `INFO commandstats` → Map(command → { calls, usec }). */
async function commandStats(client) {
  const stats = new Map();
  for (const line of (await client.info('commandstats')).split('\n')) {
    const match = /^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/.exec(line.trim());
    if (match) stats.set(match[1], { calls: Number(match[2]), usec: Number(match[3]) });
  }
  return stats;
}

/** Calls per command between two snapshots (and the usec Redis spent on EVALSHA, which includes the script). */
function delta(before, after) {
  const result = new Map();
  let scriptUsec = 0;
  for (const [command, now] of after) {
    // The bench's own bookkeeping commands are not part of a decision.
    if (command === 'info' || command === 'config' || command === 'ping') continue;
    const then = before.get(command) ?? { calls: 0, usec: 0 };
    if (now.calls > then.calls) result.set(command, now.calls - then.calls);
    if (command === 'evalsha' || command === 'eval') scriptUsec += now.usec - then.usec;
  }
  return { calls: result, scriptUsec };
}

function percentile(sortedMs, p) {
  return sortedMs[Math.min(sortedMs.length - 1, Math.floor((p / 100) * sortedMs.length))];
}

const subjectName = (i) => `account:bench-${i % subjects}`;

/** A cap no run reaches: every stream is admitted, takes a slot and releases it. */
const CAP = { streams: 1_000_000, leaseMs: 30_000 };

async function sequential(limiter, count, offset, cap) {
  const latencies = new Float64Array(count);
  const startedMs = performance.now();
  for (let i = 0; i < count; i += 1) {
    const t0 = performance.now();
    const decision = await limiter.consume(subjectName(offset + i), WINDOWS, cap);
    decision.slot?.release();
    latencies[i] = performance.now() - t0;
  }
  const elapsedMs = performance.now() - startedMs;
  latencies.sort();
  return { median: percentile(latencies, 50), p99: percentile(latencies, 99), perSecond: (count / elapsedMs) * 1000 };
}

async function concurrent(limiter, count, inFlight, offset, cap) {
  const latencies = new Float64Array(count);
  let next = 0;
  const startedMs = performance.now();
  const worker = async () => {
    for (let i = next++; i < count; i = next++) {
      const t0 = performance.now();
      const decision = await limiter.consume(subjectName(offset + i), WINDOWS, cap);
      decision.slot?.release();
      latencies[i] = performance.now() - t0;
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  const elapsedMs = performance.now() - startedMs;
  latencies.sort();
  return { median: percentile(latencies, 50), p99: percentile(latencies, 99), perSecond: (count / elapsedMs) * 1000 };
}

const fmtMs = (ms) => `${(ms * 1000).toFixed(ms < 0.01 ? 1 : 0)} µs`;
const fmtRate = (n) => `${Math.round(n).toLocaleString('en-US')}/s`;

const tmpDir = await mkdtemp(join(tmpdir(), 'agentgw-ratelimit-bench-'));
const redis = await startBenchRedis({ tmpDir });
const client = await connect(redis.url);
try {
  const limiter = new RedisRateLimiter({ client, prefix: PREFIX, commandTimeoutMs: 5_000 });
  const memory = new MemoryRateLimiter();
  const server = (await client.info('server')).match(/redis_version:(\S+)/)?.[1] ?? '?';

  // Warm-up: loads the script (one NOSCRIPT → EVAL), compiles the hot paths.
  await sequential(limiter, 1_000, 0);
  await sequential(memory, 1_000, 0);

  const before = await commandStats(client);
  const seq = await sequential(limiter, calls, 1_000);
  const afterSeq = await commandStats(client);
  const conc = await concurrent(limiter, calls, concurrency, 1_000 + calls);
  const afterConc = await commandStats(client);
  const mem = await sequential(memory, calls, 1_000);
  const memConc = await concurrent(memory, calls, concurrency, 1_000 + calls);
  // Capped streams: the releases of the last calls go out in the next turn; wait for them.
  const beforeCap = await commandStats(client);
  const capSeq = await sequential(limiter, calls, 1_000 + 2 * calls, CAP);
  await new Promise((resolve) => setTimeout(resolve, 50));
  const afterCapSeq = await commandStats(client);
  const capConc = await concurrent(limiter, calls, concurrency, 1_000 + 3 * calls, CAP);
  await new Promise((resolve) => setTimeout(resolve, 50));
  const afterCapConc = await commandStats(client);

  const rows = [
    ['limiter', 'mode', 'median', 'p99', 'throughput'],
    ['RedisRateLimiter', 'sequential', fmtMs(seq.median), fmtMs(seq.p99), fmtRate(seq.perSecond)],
    ['RedisRateLimiter', `${concurrency} in flight`, fmtMs(conc.median), fmtMs(conc.p99), fmtRate(conc.perSecond)],
    ['MemoryRateLimiter', 'sequential', fmtMs(mem.median), fmtMs(mem.p99), fmtRate(mem.perSecond)],
    ['MemoryRateLimiter', `${concurrency} in flight`, fmtMs(memConc.median), fmtMs(memConc.p99), fmtRate(memConc.perSecond)],
    ['RedisRateLimiter, capped stream', 'sequential', fmtMs(capSeq.median), fmtMs(capSeq.p99), fmtRate(capSeq.perSecond)],
    ['RedisRateLimiter, capped stream', `${concurrency} in flight`, fmtMs(capConc.median), fmtMs(capConc.p99), fmtRate(capConc.perSecond)],
  ];
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  const line = (r) => r.map((cell, c) => (c < 2 ? cell.padEnd(widths[c]) : cell.padStart(widths[c]))).join('  ');

  const out = [];
  out.push(`rate-limit cost: ${calls.toLocaleString('en-US')} calls per mode, ${WINDOWS.length} windows (${WINDOWS.map((w) => w.name).join(' + ')}), ${subjects} subjects, every call admitted`);
  out.push(`redis ${server} at ${redis.url}${redis.shared ? ' (REDIS_URL, shared)' : ' (throwaway)'}; node ${process.version}`);
  out.push('');
  out.push(line(rows[0]));
  out.push(line(widths.map((w) => '-'.repeat(w))));
  for (const row of rows.slice(1)) out.push(line(row));
  out.push('');
  out.push('Redis commands per request (INFO commandstats deltas):');
  for (const [label, { calls: stats, scriptUsec }, count] of [
    ['sequential', delta(before, afterSeq), calls],
    [`${concurrency} in flight`, delta(afterSeq, afterConc), calls],
    ['capped, seq.', delta(beforeCap, afterCapSeq), calls],
    [`capped, ${concurrency}`, delta(afterCapSeq, afterCapConc), calls],
  ]) {
    const roundTrips = (stats.get('evalsha') ?? 0) + (stats.get('eval') ?? 0);
    // ZREM (the batched release) is sent by the limiter, not run by a script.
    if (stats.has('zrem')) out.push(`  ${label.padEnd(14)} release: zrem ${((stats.get('zrem') ?? 0) / count).toFixed(3)} per stream`);
    const inside = [...stats].filter(([command]) => command !== 'evalsha' && command !== 'eval' && command !== 'zrem');
    out.push(
      `  ${label.padEnd(14)} round trips ${(roundTrips / count).toFixed(3)} (evalsha ${((stats.get('evalsha') ?? 0) / count).toFixed(3)}, eval ${((stats.get('eval') ?? 0) / count).toFixed(3)})` +
        `; Redis time ${(scriptUsec / count).toFixed(1)} µs/request` +
        `; run by the script: ${inside.map(([command, n]) => `${command} ${(n / count).toFixed(2)}`).join(', ')}`,
    );
  }
  if (redis.shared) out.push('  (shared Redis: other clients\' commands may be included)');
  process.stdout.write(`${out.join('\n')}\n`);
} finally {
  await client.quit().catch(() => client.disconnect());
  await redis.close();
  await rm(tmpDir, { recursive: true, force: true });
}
