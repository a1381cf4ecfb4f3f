// Usage reports over 30 days of rollups (docs/admin-api.md "Usage", decision 0024). Writes
// 30 days of audit records for --keys keys (every key active every hour, --per-hour records
// each: the worst case for a report) through the real writers — the audit stream's batch
// script into a redis-server of its own, and the embedded mode's FileUsageRollup into a
// temporary directory — then times every report shape (group_by × granularity × no filter,
// its own group named, another dimension filtered) through the built gateway's own code
// (dist/audit/usage-report.js), one page of the largest size the API allows, each --runs
// times (median), on both sources; then the rollup script's cost and commands per audit
// batch inside Redis, beside an older build's script when --compare names its dist/.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { startBenchRedis } from '../lib/bench-redis.mjs';
import { median } from '../lib/stats.mjs';

export const USAGE = `node bench/run.mjs usage-report [--keys 1000] [--accounts 100] [--days 30] [--per-hour 3] [--runs 5] [--compare DIST] [--writers]

  Build first (npm run build): the reports run through dist/audit/usage-report.js.
  --keys N        keys, every one active every hour (default 1000)
  --accounts N    accounts the keys belong to (default 100)
  --days N        days of records (default 30)
  --per-hour N    records a key an hour (default 3)
  --runs N        runs of each report shape; figures are medians (default 5)
  --compare DIST  an older build's dist/: its rollup script timed beside this one's
  --writers       write through the real writers (many minutes) instead of writing the
                  buckets directly in both layouts (the same counts, in seconds)
`;

export async function run(argv) {
  const { values } = parseArgs({
    args: argv,
    options: {
      keys: { type: 'string', default: '1000' },
      accounts: { type: 'string', default: '100' },
      days: { type: 'string', default: '30' },
      'per-hour': { type: 'string', default: '3' },
      runs: { type: 'string', default: '5' },
      compare: { type: 'string' },
      writers: { type: 'boolean', default: false },
    },
  });
  const KEYS = Number(values.keys);
  const ACCOUNTS = Number(values.accounts);
  const DAYS = Number(values.days);
  const PER_HOUR = Number(values['per-hour']);
  const RUNS = Number(values.runs);
  const AGENTS = ['support', 'sales', 'billing'];
  const PREFIX = '{bench:audit}:usage:';
  const STREAM = 'bench:audit';

  const dist = (path) => new URL(`../../dist/${path}`, import.meta.url).href;
  const { usageReportPage } = await import(dist('audit/usage-report.js'));
  const { RedisUsageSource } = await import(dist('audit/redis-usage-source.js'));
  const { FileUsageSource } = await import(dist('audit/file-usage-source.js'));
  const { FileUsageRollup } = await import(dist('audit/file-usage-rollup.js'));
  const { RedisStreamAuditSink } = await import(dist('audit/redis-stream-audit-sink.js'));
  const { AUDIT_APPEND_WITH_USAGE } = await import(dist('audit/audit-stream-operations.js'));
  const { toAuditLine } = await import(dist('audit/audit-record.js'));
  const { MAX_USAGE_LIMIT } = await import(dist('admin/admin-usage.js'));
  const { packFields, USAGE_HASH_MARKER } = await import(dist('audit/usage-buckets.js'));
  const { serializeUsageFile, usageFilePath } = await import(dist('audit/usage-files.js'));
  const { usageHashKey } = await import(dist('audit/redis-usage-source.js'));

  // Always a server of its own: this writes millions of fields.
  delete process.env.REDIS_URL;
  const tmpDir = mkdtempSync(join(tmpdir(), 'agentgw-usage-bench-'));
  const usageDir = join(tmpDir, 'usage');
  const server = await startBenchRedis({ tmpDir, fdLimit: 4096 });
  const redis = new Redis(server.url, { maxRetriesPerRequest: 2 });
  const silent = { error() {}, warn() {}, info() {}, debug() {}, child() { return silent; } };

  const keyId = (k) => `key_${String(k).padStart(16, '0')}`;
  const accountOf = (k) => `account-${k % ACCOUNTS}`;
  const agentOf = (k) => AGENTS[k % AGENTS.length];
  const endMs = Math.floor(Date.now() / 3_600_000) * 3_600_000;
  const startMs = endMs - DAYS * 86_400_000;
  const OUTCOMES = ['ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'rate_limited', 'upstream_error'];

  function record(k, t, i, n) {
    return {
      id: `r-${n}`, request_id: `c-${n}`, ts: new Date(t + ((k * 7 + i * 13) % 3_600) * 1000).toISOString(), key_id: keyId(k), account: accountOf(k), plan: 'pro', agent: agentOf(k),
      route: 'chat', status: 200, outcome: OUTCOMES[(k + i + n) % OUTCOMES.length], tokens_used: 50 + ((k * 31 + n) % 900), latency_ms: 40 + ((k * 97 + n * 13) % 4_000) / 3,
      upstream_latency_ms: 30, bytes_in: 100, bytes_out: 400, client_ip: '127.0.0.1', user_id: null, session_id: null,
    };
  }

  let started = performance.now();
  let n = 0;
  let fileMs = 0;
  if (values.writers) {
    const sink = new RedisStreamAuditSink({ redis, streamKey: STREAM, maxLen: 1_000, commandTimeoutMs: 60_000, usage: { keyPrefix: PREFIX, retentionSeconds: 90 * 86_400 } });
    const rollup = new FileUsageRollup({ dir: usageDir, retentionMs: 90 * 86_400_000, logger: silent, flushIntervalMs: 3_600_000, now: () => endMs });
    await import('node:fs/promises').then(({ mkdir }) => mkdir(usageDir, { recursive: true }));
    for (let t = startMs; t < endMs; t += 3_600_000) {
      const lines = [];
      for (let i = 0; i < PER_HOUR; i++) for (let k = 0; k < KEYS; k++) lines.push(toAuditLine(record(k, t, i, n++)));
      const writes = [];
      for (let from = 0; from < lines.length; from += 256) writes.push(sink.write(lines.slice(from, from + 256)));
      await Promise.all(writes);
      const fileStarted = performance.now();
      for (let from = 0; from < lines.length; from += 256) rollup.add(lines.slice(from, from + 256));
      if ((t + 3_600_000) % 86_400_000 === 0 || t + 3_600_000 >= endMs) await rollup.flush();
      fileMs += performance.now() - fileStarted;
    }
    await rollup.close();
  } else {
    // Synthetic buckets in both layouts, the same counts the writers would make for PER_HOUR
    // records a key an hour (the writers' agreement is tested in usage-rollup-redis.test.ts).
    const { mkdir, writeFile } = await import('node:fs/promises');
    await mkdir(usageDir, { recursive: true });
    const families = { key: keyId, account: accountOf, agent: agentOf, tuple: (k) => `${keyId(k)} ${accountOf(k)} ${agentOf(k)}` };
    const dayBuckets = new Map(); // family → group → fields, for the current day
    const hourLines = new Map(); // family → group → 24 packed
    let pipeline = redis.pipeline();
    for (let t = startMs; t < endMs; t += 3_600_000) {
      const hour = new Date(t).toISOString().slice(0, 13);
      const day = hour.slice(0, 10);
      const hourBuckets = new Map();
      for (let k = 0; k < KEYS; k++) {
        const fields = new Map();
        for (let i = 0; i < PER_HOUR; i++) {
          const r = record(k, t, i, n++);
          fields.set('requests', (fields.get('requests') ?? 0) + 1);
          fields.set('tokens', (fields.get('tokens') ?? 0) + r.tokens_used);
          if (r.outcome !== 'ok') fields.set(`e:${r.outcome}`, (fields.get(`e:${r.outcome}`) ?? 0) + 1);
          const li = Math.min(80, Math.ceil((4 * Math.log(r.latency_ms)) / Math.log(2) - 1e-9));
          fields.set(`l:${li}`, (fields.get(`l:${li}`) ?? 0) + 1);
        }
        for (const [family, groupOf] of Object.entries(families)) {
          for (const into of [hourBuckets, dayBuckets]) {
            let groups = into.get(family);
            if (groups === undefined) into.set(family, (groups = new Map()));
            const group = groupOf(k);
            const sum = groups.get(group) ?? new Map();
            for (const [f, c] of fields) sum.set(f, (sum.get(f) ?? 0) + c);
            groups.set(group, sum);
          }
        }
      }
      for (const [family, groups] of hourBuckets) {
        const args = ['#', USAGE_HASH_MARKER];
        let lines = hourLines.get(family);
        if (lines === undefined) hourLines.set(family, (lines = new Map()));
        for (const [group, fields] of groups) {
          args.push(group, packFields(fields));
          const columns = lines.get(group) ?? new Array(24).fill('');
          columns[Number(hour.slice(11, 13))] = packFields(fields);
          lines.set(group, columns);
        }
        pipeline.hset(usageHashKey(PREFIX, 'h', family, hour), ...args);
      }
      await pipeline.exec();
      pipeline = redis.pipeline();
      if (hour.endsWith('T23') || t + 3_600_000 >= endMs) {
        for (const [family, groups] of dayBuckets) {
          const args = ['#', USAGE_HASH_MARKER];
          const lines = new Map();
          for (const [group, fields] of groups) {
            args.push(group, packFields(fields));
            lines.set(group, [packFields(fields)]);
          }
          pipeline.hset(usageHashKey(PREFIX, 'd', family, day), ...args);
          await writeFile(usageFilePath(usageDir, day, family, 'd'), serializeUsageFile(lines));
          await writeFile(usageFilePath(usageDir, day, family, 'h'), serializeUsageFile(hourLines.get(family)));
        }
        await pipeline.exec();
        pipeline = redis.pipeline();
        dayBuckets.clear();
        hourLines.clear();
      }
    }
  }
  const memory = /used_memory_human:(\S+)/.exec(await redis.info('memory'))?.[1];
  const redisKeys = await redis.dbsize();
  const { readdirSync, statSync } = await import('node:fs');
  const fileBytes = readdirSync(usageDir).reduce((sum, name) => sum + statSync(join(usageDir, name)).size, 0);
  console.log(
    `wrote ${n.toLocaleString('en')} audit records (${KEYS} keys, ${ACCOUNTS} accounts, ${AGENTS.length} agents, ${DAYS} days, ${PER_HOUR} a key an hour) in ${((performance.now() - started) / 1000).toFixed(1)} s` +
      `\n  redis: ${redisKeys.toLocaleString('en')} keys, used_memory ${memory}; files: ${readdirSync(usageDir).length} files, ${(fileBytes / 1e6).toFixed(1)} MB (FileUsageRollup.add + flush ${(fileMs / 1000).toFixed(1)} s)`,
  );

  const sources = { redis: new RedisUsageSource(redis, PREFIX), file: new FileUsageSource(usageDir) };
  const shapes = [];
  const named = { key: ['keyId', keyId(7)], account: ['account', accountOf(7)], agent: ['agent', agentOf(7)] };
  for (const groupBy of ['key', 'account', 'agent']) {
    for (const granularity of ['day', 'hour']) {
      shapes.push([`${groupBy} × ${granularity}, every group`, { groupBy, granularity }]);
      shapes.push([`${groupBy} × ${granularity}, ${groupBy} named`, { groupBy, granularity, [named[groupBy][0]]: named[groupBy][1] }]);
      for (const other of ['key', 'account', 'agent'].filter((d) => d !== groupBy)) {
        shapes.push([`${groupBy} × ${granularity}, ${other} filter`, { groupBy, granularity, [named[other][0]]: named[other][1] }]);
      }
    }
  }
  console.log(`\n${DAYS}-day reports, first page (limit=${MAX_USAGE_LIMIT}, the largest the API allows), median of ${RUNS} runs:`);
  console.log("  wall: the report's elapsed time; cpu: this process's CPU time (all threads) plus, for Redis, the Redis process's CPU time");
  console.log(`  ${'shape'.padEnd(36)} ${'redis wall'.padStart(10)} ${'cpu'.padStart(9)} ${'file wall'.padStart(10)} ${'cpu'.padStart(9)}   rows   more pages`);
  let worst = { redis: 0, file: 0 };
  const worstCpu = { redis: 0, file: 0 };
  /** The Redis process's CPU time so far (INFO cpu, user + system), µs: unlike commandstats' usec it does not grow while the process waits for a core. */
  async function redisCpuUsec() {
    const info = await redis.info('cpu');
    return Math.round((Number(/used_cpu_user:([\d.]+)/.exec(info)[1]) + Number(/used_cpu_sys:([\d.]+)/.exec(info)[1])) * 1e6);
  }
  for (const [label, query] of shapes) {
    const cells = [];
    let page;
    for (const [name, source] of Object.entries(sources)) {
      const times = [];
      const cpu = [];
      for (let run = 0; run < RUNS; run++) {
        const redisBefore = name === 'redis' ? await redisCpuUsec() : 0;
        const cpuBefore = process.cpuUsage();
        started = performance.now();
        page = await usageReportPage(source, { ...query, fromMs: startMs, toMs: endMs, limit: MAX_USAGE_LIMIT });
        times.push(performance.now() - started);
        const used = process.cpuUsage(cpuBefore);
        cpu.push((used.user + used.system) / 1000 + (name === 'redis' ? ((await redisCpuUsec()) - redisBefore) / 1000 : 0));
      }
      const m = median(times);
      worst[name] = Math.max(worst[name], m);
      worstCpu[name] = Math.max(worstCpu[name], median(cpu));
      cells.push(`${m.toFixed(1).padStart(6)} ms ${median(cpu).toFixed(1).padStart(6)} ms`);
      if (name === 'redis') var redisRows = JSON.stringify(page.rows);
      else if (JSON.stringify(page.rows) !== redisRows) throw new Error(`${label}: the file source rows differ from Redis`);
    }
    console.log(`  ${label.padEnd(36)} ${cells.join(' ')} ${String(page.rows.length).padStart(6)}   ${page.lastGroup === null ? 'no' : 'yes'}`);
  }
  console.log(`  worst: redis ${worst.redis.toFixed(1)} ms wall, ${worstCpu.redis.toFixed(1)} ms cpu; file ${worst.file.toFixed(1)} ms wall, ${worstCpu.file.toFixed(1)} ms cpu; load average ${(await import('node:os')).loadavg().map((l) => l.toFixed(1)).join(' ')}`);

  // The rollup script's cost inside Redis per audit batch of 256 records, by how many keys
  // the batch holds (each key's account distinct, one agent): Redis's own time per call
  // (INFO commandstats), and the commands the script ran per batch.
  const scripts = [['new', AUDIT_APPEND_WITH_USAGE.source]];
  // An older build's function takes the stream field only, and returns the bare count.
  if (values.compare) scripts.push(['compared', (await import(new URL(`${values.compare.replace(/\/$/, '')}/audit/usage-rollup.lua.js`, 'file://').href)).auditAppendWithUsageLua('record', (added) => added)]);
  redis.defineCommand('appendPlain', { lua: 'for i = 2, #ARGV do redis.call("XADD", KEYS[1], "MAXLEN", "~", ARGV[1], "*", "record", ARGV[i]) end return #ARGV - 1' });
  for (const [name, lua] of scripts) redis.defineCommand(`append_${name}`, { lua });
  const timeKind = async (call) => {
    await redis.config('RESETSTAT');
    const cpuBefore = await redisCpuUsec();
    for (let i = 0; i < 200; i++) await call();
    const cpuUs = ((await redisCpuUsec()) - cpuBefore) / 200;
    const stats = await redis.info('commandstats');
    const m = /cmdstat_evalsha:calls=(\d+),usec=(\d+)/.exec(stats);
    let commands = 0;
    for (const [, command, calls] of stats.matchAll(/cmdstat_(\w+):calls=(\d+)/g)) if (!['evalsha', 'config', 'info'].includes(command)) commands += Number(calls);
    return { us: cpuUs, wallUs: Number(m[2]) / Number(m[1]), commandsPerBatch: commands / Number(m[1]) };
  };
  console.log('\naudit batch of 256 records within one hour, Redis CPU time per batch (µs, INFO cpu over 200 batches; commands the script ran):');
  for (const keysInBatch of [1, 10, 50, 256]) {
    const lines = Array.from({ length: 256 }, (_, i) => toAuditLine({ ...record(i % keysInBatch, endMs, 0, i), account: `batch-account-${i % keysInBatch}`, ts: new Date(endMs + 1000 + i).toISOString() }));
    const plain = await timeKind(() => redis.appendPlain(1, 'bench:stream:plain', 100000, ...lines));
    const cells = [`${plain.us.toFixed(0).padStart(5)} µs without rollups`];
    for (const [name] of scripts) {
      const withUsage = await timeKind(() => redis[`append_${name}`](1, `bench:stream:${name}`, 100000, `{bench:${name}}:usage:`, 86400, ...lines));
      cells.push(`${name}: ${withUsage.us.toFixed(0).padStart(5)} µs, ${withUsage.commandsPerBatch.toFixed(0)} commands (${((withUsage.us - plain.us) / 256).toFixed(1)} µs a record more)`);
    }
    console.log(`  ${String(keysInBatch).padStart(3)} keys: ${cells.join('; ')}`);
  }

  redis.disconnect();
  await server.close();
  rmSync(tmpDir, { recursive: true, force: true });
}
