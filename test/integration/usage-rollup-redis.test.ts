// The Redis rollup script and the embedded mode's files count the same batches into the same
// buckets (the Lua and the TypeScript latency buckets agree, appended and compacted buckets
// add up alike), in the audit stream's one script call per batch, each period hash expiring
// the retention after its period ends; every report shape reads the same rows from both, and
// their totals are the records' own. Lines that are not usage records are appended to the
// stream and not counted.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toAuditLine } from '../../src/audit/audit-record.js';
import { FileUsageRollup } from '../../src/audit/file-usage-rollup.js';
import { FileUsageSource } from '../../src/audit/file-usage-source.js';
import { RedisStreamAuditSink } from '../../src/audit/redis-stream-audit-sink.js';
import { RedisUsageSource, usageHashKey } from '../../src/audit/redis-usage-source.js';
import { addPacked, USAGE_FAMILIES, USAGE_SPANS, type BucketFields } from '../../src/audit/usage-buckets.js';
import { usageReport, USAGE_SORTS, type UsageQuery } from '../../src/audit/usage-report.js';
import { silentLogger } from '../../src/logger.js';
import { createRedisClient, type RedisClient } from '../../src/redis/redis-client.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { totalsOfRows, WORKLOAD_DAYS, workloadRecords, workloadTotals } from '../helpers/usage-workload.js';

let redis: TestRedis;
let client: RedisClient;
let dir: string;

beforeAll(async () => {
  redis = await startRedis();
  client = createRedisClient({ url: redis.url, prefix: '', commandTimeoutMs: 1000 }, silentLogger, 'rollup-test');
  await new Promise((resolve) => client.once('ready', resolve));
  dir = await mkdtemp(join(tmpdir(), 'agentgw-rollup-'));
});

afterAll(async () => {
  client?.disconnect();
  await redis?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const sorted = (fields: BucketFields) => Object.fromEntries([...fields].sort(([a], [b]) => (a < b ? -1 : 1)));
const unpack = (packed: string | null) => {
  const fields: BucketFields = new Map();
  addPacked(fields, packed);
  return sorted(fields);
};
const scriptCalls = async () => {
  const stats = await client.info('commandstats');
  return Number((/cmdstat_evalsha:calls=(\d+)/.exec(stats) ?? [])[1] ?? 0) + Number((/cmdstat_eval:calls=(\d+)/.exec(stats) ?? [])[1] ?? 0);
};

describe('usage rollups', () => {
  it('Redis script and files hold the same buckets and answer every report shape alike, with the records\' totals', async () => {
    const prefix = `roll${randomUUID().slice(0, 6)}:usage:`;
    const stream = `${prefix}stream`;
    // Long enough that March 2026's periods have not expired yet.
    const retentionSeconds = 2_000 * 86_400;
    const sink = new RedisStreamAuditSink({ redis: client, streamKey: stream, maxLen: 10_000, commandTimeoutMs: 5_000, usage: { keyPrefix: prefix, retentionSeconds } });
    const rollup = new FileUsageRollup({ dir, retentionMs: retentionSeconds * 1000, logger: silentLogger, now: () => Date.parse('2026-03-02T00:00:00Z') });
    const records = workloadRecords(300);
    const lines = records.map(toAuditLine);
    // Not usage records: an admin-trail-like line, and a group name with a space. Appended, not counted.
    lines.splice(5, 0, JSON.stringify({ id: 'x', ts: '2026-03-01T10:00:00.000Z', action: 'key.create' }));
    lines.splice(9, 0, toAuditLine({ ...records[0]!, account: 'acme eu' }));
    // Small batches: buckets grow by appending past the compaction size many times over.
    const before = await scriptCalls();
    const batches: string[][] = [];
    for (let from = 0; from < lines.length; from += 7) batches.push(lines.slice(from, from + 7));
    for (const batch of batches) {
      await sink.write(batch);
      rollup.add(batch);
    }
    expect(await scriptCalls()).toBeLessThanOrEqual(before + batches.length + 1); // one per batch (and one EVAL loading the script)
    expect(await client.xlen(stream)).toBe(lines.length);
    await rollup.close();

    const redisSource = new RedisUsageSource(client, prefix);
    const fileSource = new FileUsageSource(dir);
    const hours = WORKLOAD_DAYS.flatMap((day) => Array.from({ length: 24 }, (_, h) => `${day}T${String(h).padStart(2, '0')}`));
    let appended = 0;
    for (const family of USAGE_FAMILIES) {
      const groups = await redisSource.groupNames(family, WORKLOAD_DAYS);
      expect([...groups].sort(), family).toEqual([...(await fileSource.groupNames(family, WORKLOAD_DAYS))].sort());
      const sessionGroups = new Set(records.filter((r) => r.session_id !== null).map((r) => `${r.key_id} ${r.account} ${r.agent} ${r.session_id}`)).size;
      expect(groups.size, family).toBe({ key: 4, account: 2, agent: 2, tuple: 8, session: sessionGroups }[family]);
      for (const span of USAGE_SPANS) {
        const periods = span === 'h' ? hours : [...WORKLOAD_DAYS];
        const fromRedis = await redisSource.readGroups(family, span, periods, [...groups]);
        const fromFile = await fileSource.readGroups(family, span, periods, [...groups]);
        expect(fromRedis.map((row) => row.map(unpack)), `${family} ${span}`).toEqual(fromFile.map((row) => row.map(unpack)));
        let requests = 0;
        for (const row of fromRedis) {
          for (const packed of row) {
            requests += Number(unpack(packed).requests ?? 0);
            if (packed) {
              // Compacted once past 400 bytes: never longer than that plus one batch's counts.
              expect(packed.length).toBeLessThan(800);
              const names = packed.split(/[ ;]/).map((pair) => pair.split('=')[0]);
              if (new Set(names).size < names.length) appended++;
            }
          }
        }
        expect(requests, `${family} ${span}`).toBe(family === 'session' ? records.filter((r) => r.session_id !== null).length : 300);
      }
    }
    expect(appended).toBeGreaterThan(0); // some buckets were read in their appended form

    const from = { fromMs: Date.parse('2026-03-01T00:00:00Z'), toMs: Date.parse('2026-03-03T00:00:00Z') };
    const filters = [{}, { keyId: 'key_0000000000000001' }, { account: 'globex' }, { agent: 'sales' }, { keyId: 'key_0000000000000002', agent: 'sales' }];
    for (const groupBy of ['key', 'account', 'agent', 'session'] as const) {
      for (const granularity of ['hour', 'day'] as const) {
        for (const filter of filters) {
          if (groupBy === 'session' && !('keyId' in filter) && !('account' in filter)) continue;
          const q: UsageQuery = { groupBy, granularity, ...from, ...filter };
          const rows = await usageReport(redisSource, q);
          expect(rows, JSON.stringify(q)).toEqual(await usageReport(fileSource, q));
          const totals = totalsOfRows(rows);
          const f = filter as { keyId?: string; account?: string; agent?: string };
          const expected = workloadTotals(records, groupBy, (r) => (f.keyId === undefined || r.key_id === f.keyId) && (f.account === undefined || r.account === f.account) && (f.agent === undefined || r.agent === f.agent));
          expect(totals, JSON.stringify(q)).toEqual(expected);
        }
      }
    }

    // Sorted: the same ranking from both sources, each group's measure no larger than the one before.
    for (const sort of USAGE_SORTS) {
      for (const q of [{ groupBy: 'session', account: 'globex' }, { groupBy: 'key' }] as const) {
        const query: UsageQuery = { ...q, granularity: 'day', ...from, sort };
        const rows = await usageReport(redisSource, query);
        expect(rows, JSON.stringify(query)).toEqual(await usageReport(fileSource, query));
        const totals = [...totalsOfRows(rows).values()].map((t) => ({ requests: t.requests, tokens: t.tokens, cost_usd: t.costMicro, tool_calls: t.toolCalls })[sort]);
        expect(totals.length, JSON.stringify(query)).toBeGreaterThan(1);
        expect(totals, JSON.stringify(query)).toEqual([...totals].sort((a, b) => b - a));
      }
    }

    // Each period hash expires the retention after its period ends, and is a hashtable (the marker field).
    const hourKey = usageHashKey(prefix, 'h', 'key', '2026-03-01T10');
    expect(await client.call('EXPIRETIME', hourKey)).toBe(Date.parse('2026-03-01T11:00:00Z') / 1000 + retentionSeconds);
    expect(await client.call('EXPIRETIME', usageHashKey(prefix, 'd', 'agent', '2026-03-02'))).toBe(Date.parse('2026-03-03T00:00:00Z') / 1000 + retentionSeconds);
    expect(await client.object('ENCODING', hourKey)).toBe('hashtable');
  });

  it('a period whose retention has already passed is not kept', async () => {
    const prefix = `old${randomUUID().slice(0, 6)}:usage:`;
    const sink = new RedisStreamAuditSink({ redis: client, streamKey: `${prefix}stream`, maxLen: 10_000, commandTimeoutMs: 5_000, usage: { keyPrefix: prefix, retentionSeconds: 86_400 } });
    await sink.write(workloadRecords(10).map(toAuditLine));
    expect(await client.exists(usageHashKey(prefix, 'h', 'key', '2026-03-01T10'), usageHashKey(prefix, 'd', 'key', '2026-03-01'))).toBe(0);
    expect(await client.xlen(`${prefix}stream`)).toBe(10);
  });
});
