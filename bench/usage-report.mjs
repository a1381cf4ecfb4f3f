// Usage reports over 30 days of hourly rollups (docs/admin-api.md "Usage"): writes 30 days
// of synthetic rollups for --keys keys (every key active every hour: the worst case for a
// report) into a redis-server of its own, then times reports through the built gateway's
// own code (dist/audit/usage-report.js over RedisUsageSource), each --runs times (median),
// and the rollup script's cost per audit batch inside Redis. Not part of `npm run bench`.
//
//   npm run build && node bench/usage-report.mjs [--keys 1000] [--accounts 100] [--days 30] [--runs 5]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { startBenchRedis } from './lib/bench-redis.mjs';
import { median } from './lib/stats.mjs';

const { values } = parseArgs({
  options: {
    keys: { type: 'string', default: '1000' },
    accounts: { type: 'string', default: '100' },
    days: { type: 'string', default: '30' },
    runs: { type: 'string', default: '5' },
    'all-keys': { type: 'boolean', default: false },
  },
});
const KEYS = Number(values.keys);
const ACCOUNTS = Number(values.accounts);
const DAYS = Number(values.days);
const RUNS = Number(values.runs);
const AGENTS = ['support', 'sales', 'billing'];
const PREFIX = 'bench:usage:';

const dist = (path) => new URL(`../dist/${path}`, import.meta.url).href;
const { usageReport } = await import(dist('audit/usage-report.js'));
const { RedisUsageSource } = await import(dist('audit/redis-usage-source.js'));
const { auditAppendWithUsageLua } = await import(dist('audit/usage-rollup.lua.js'));
const { toAuditLine } = await import(dist('audit/audit-record.js'));

// Always a server of its own: this writes millions of keys.
delete process.env.REDIS_URL;
const tmpDir = mkdtempSync(join(tmpdir(), 'agentgw-usage-bench-'));
const server = await startBenchRedis({ tmpDir, fdLimit: 4096 });
const redis = new Redis(server.url, { maxRetriesPerRequest: 2 });

const keyId = (k) => `key_${String(k).padStart(16, '0')}`;
const accountOf = (k) => `account-${k % ACCOUNTS}`;
const agentOf = (k) => AGENTS[k % AGENTS.length];
const endMs = Math.floor(Date.now() / 3_600_000) * 3_600_000;
const startMs = endMs - DAYS * 86_400_000;
const hours = [];
for (let t = startMs; t < endMs; t += 3_600_000) hours.push(new Date(t).toISOString().slice(0, 13));

/** One synthetic bucket: 40 requests an hour, a few errors, latencies over four buckets. */
function bucket(seed) {
  return ['requests', 40, 'tokens', 4000 + (seed % 997), 'e:rate_limited', 1 + (seed % 3), 'l:30', 10, 'l:34', 20, 'l:38', 8, 'l:44', 2];
}

let started = performance.now();
let written = 0;
let pipeline = redis.pipeline();
const flush = async () => {
  await pipeline.exec();
  pipeline = redis.pipeline();
};
for (const [h, hour] of hours.entries()) {
  const day = hour.slice(0, 10);
  const accountsSeen = new Set();
  for (let k = 0; k < KEYS; k++) {
    pipeline.hset(`${PREFIX}key:${keyId(k)}:${hour}`, ...bucket(k + h));
    pipeline.hset(`${PREFIX}key-agent:${keyId(k)}/${agentOf(k)}:${hour}`, ...bucket(k + h));
    pipeline.sadd(`${PREFIX}index:${day}`, `${keyId(k)}\t${accountOf(k)}\t${agentOf(k)}`);
    accountsSeen.add(accountOf(k));
    written += 2;
  }
  for (const account of accountsSeen) pipeline.hset(`${PREFIX}account:${account}:${hour}`, ...bucket(h));
  for (const agent of AGENTS) pipeline.hset(`${PREFIX}agent:${agent}:${hour}`, ...bucket(h));
  written += accountsSeen.size + AGENTS.length;
  await flush();
}
const memory = /used_memory_human:(\S+)/.exec(await redis.info('memory'))?.[1];
console.log(`wrote ${written.toLocaleString('en')} hourly buckets (${KEYS} keys, ${ACCOUNTS} accounts, ${AGENTS.length} agents, ${DAYS} days) in ${((performance.now() - started) / 1000).toFixed(1)} s; redis used_memory ${memory}`);

const source = new RedisUsageSource(redis, PREFIX);
const queries = [
  ['one key, per day', { groupBy: 'key', granularity: 'day', keyId: keyId(7) }],
  ['one key, per hour', { groupBy: 'key', granularity: 'hour', keyId: keyId(7) }],
  ['one account, per day', { groupBy: 'account', granularity: 'day', account: accountOf(7) }],
  ['one key per agent (cross filter)', { groupBy: 'agent', granularity: 'day', keyId: keyId(7) }],
  [`keys of one account (${KEYS / ACCOUNTS}), per day`, { groupBy: 'key', granularity: 'day', account: accountOf(7) }],
  ['every agent, per day', { groupBy: 'agent', granularity: 'day' }],
  [`every account (${ACCOUNTS}), per day`, { groupBy: 'account', granularity: 'day' }],
];
if (values['all-keys']) queries.push([`every key (${KEYS}), per day`, { groupBy: 'key', granularity: 'day' }]);
console.log(`\n${DAYS}-day reports, median of ${RUNS} runs:`);
for (const [label, query] of queries) {
  const times = [];
  let rows = 0;
  for (let run = 0; run < RUNS; run++) {
    started = performance.now();
    rows = (await usageReport(source, { ...query, fromMs: startMs, toMs: endMs })).length;
    times.push(performance.now() - started);
  }
  console.log(`  ${label.padEnd(40)} ${median(times).toFixed(1).padStart(8)} ms  (${rows} rows)`);
}

// The rollup script's cost inside Redis per audit batch of 256 records, by how many keys
// the batch holds (each key's account distinct, one agent): Redis's own time per call
// (INFO commandstats), each script alone.
redis.defineCommand('appendUsage', { lua: auditAppendWithUsageLua('record') });
redis.defineCommand('appendPlain', { lua: 'for i = 2, #ARGV do redis.call("XADD", KEYS[1], "MAXLEN", "~", ARGV[1], "*", "record", ARGV[i]) end return #ARGV - 1' });
const timeKind = async (call) => {
  await redis.config('RESETSTAT');
  for (let i = 0; i < 200; i++) await call();
  const m = /cmdstat_evalsha:calls=(\d+),usec=(\d+)/.exec(await redis.info('commandstats'));
  return Number(m[2]) / Number(m[1]);
};
console.log('\naudit batch of 256 records, time inside Redis per batch:');
for (const keysInBatch of [1, 10, 50]) {
  const lines = Array.from({ length: 256 }, (_, i) =>
    toAuditLine({
      id: `id-${i}`, ts: new Date().toISOString(), key_id: keyId(i % keysInBatch), account: `batch-account-${i % keysInBatch}`, plan: 'pro', agent: 'support',
      route: 'chat', status: 200, outcome: i % 20 === 0 ? 'rate_limited' : 'ok', tokens_used: 100 + i, latency_ms: 100 + i * 3.7,
      upstream_latency_ms: 90, bytes_in: 100, bytes_out: 400, client_ip: '127.0.0.1', user_id: null, session_id: null,
    }),
  );
  const without = await timeKind(() => redis.appendPlain(1, 'bench:stream:plain', 100000, ...lines));
  const withUsage = await timeKind(() => redis.appendUsage(1, 'bench:stream:usage', 100000, PREFIX, 86400, ...lines));
  console.log(`  ${String(keysInBatch).padStart(2)} keys: ${without.toFixed(0).padStart(5)} µs without rollups, ${withUsage.toFixed(0).padStart(5)} µs with (${((withUsage - without) / 256).toFixed(1)} µs a record more)`);
}

redis.disconnect();
await server.close();
rmSync(tmpDir, { recursive: true, force: true });
