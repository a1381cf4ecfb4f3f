// The Redis rollup script and the embedded mode's day files count the same batch into the
// same buckets (the Lua and the TypeScript latency buckets agree), in the audit stream's one
// script call per batch, with the retention as the buckets' TTL; lines that are not usage
// records are appended to the stream and not counted.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toAuditLine, type AuditRecord } from '../../src/audit/audit-record.js';
import { FileUsageRollup } from '../../src/audit/file-usage-rollup.js';
import { FileUsageSource } from '../../src/audit/file-usage-source.js';
import { RedisStreamAuditSink } from '../../src/audit/redis-stream-audit-sink.js';
import { RedisUsageSource } from '../../src/audit/redis-usage-source.js';
import { USAGE_FAMILIES, type UsageFamily } from '../../src/audit/usage-buckets.js';
import { silentLogger } from '../../src/logger.js';
import { createRedisClient, type RedisClient } from '../../src/redis/redis-client.js';
import { lcg } from '../helpers/lcg.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';

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

function records(count: number): AuditRecord[] {
  const random = lcg(7);
  const latencies = [0, 0.5, 1, 1.01, 2, 4, 8, 3.99, 16.01, 1024, 1_000_000_000];
  const outcomes = ['ok', 'ok', 'ok', 'invalid_request', 'rate_limited', 'upstream_error', 'client_closed', 'timeout', 'error'] as const;
  return Array.from({ length: count }, (_, i) => ({
    id: randomUUID(),
    request_id: `client-${i}`,
    ts: `2026-03-0${1 + (i % 2)}T${String(10 + (i % 3)).padStart(2, '0')}:15:00.000Z`,
    key_id: `key_${String(i % 4).padStart(16, '0')}`,
    account: i % 4 < 2 ? 'acme:eu' : 'globex',
    plan: 'pro',
    agent: i % 3 === 0 ? 'sales' : 'support',
    route: 'chat',
    status: 200,
    outcome: outcomes[i % outcomes.length]!,
    tokens_used: i % 5 === 0 ? null : Math.floor(random() * 1000),
    latency_ms: i < latencies.length ? latencies[i]! : Math.round(random() * 500_000) / 100,
    upstream_latency_ms: null,
    bytes_in: 10,
    bytes_out: 20,
    client_ip: '127.0.0.1',
    user_id: null,
    session_id: null,
  }));
}

describe('usage rollups', () => {
  it('Redis script and day files hold the same buckets; one script call per batch; TTL = retention from the first record of a bucket', async () => {
    const prefix = `roll${randomUUID().slice(0, 6)}:usage:`;
    const stream = `${prefix}stream`;
    const retentionSeconds = 7 * 86_400;
    const sink = new RedisStreamAuditSink({ redis: client, streamKey: stream, maxLen: 10_000, commandTimeoutMs: 5_000, usage: { keyPrefix: prefix, retentionSeconds } });
    const rollup = new FileUsageRollup({ dir, retentionMs: retentionSeconds * 1000, logger: silentLogger, now: () => Date.parse('2026-03-02T00:00:00Z') });
    const lines = records(300).map(toAuditLine);
    // An admin-trail-like line: appended, not counted.
    lines.splice(5, 0, JSON.stringify({ id: 'x', ts: '2026-03-01T10:00:00.000Z', action: 'key.create' }));
    const before = Number(((await client.info('commandstats')).match(/cmdstat_evalsha:calls=(\d+)/) ?? [])[1] ?? 0) + Number(((await client.info('commandstats')).match(/cmdstat_eval:calls=(\d+)/) ?? [])[1] ?? 0);
    await sink.write(lines.slice(0, 150));
    await sink.write(lines.slice(150));
    const stats = await client.info('commandstats');
    const scriptCalls = Number((stats.match(/cmdstat_evalsha:calls=(\d+)/) ?? [])[1] ?? 0) + Number((stats.match(/cmdstat_eval:calls=(\d+)/) ?? [])[1] ?? 0) - before;
    expect(scriptCalls).toBeLessThanOrEqual(3); // one per batch (plus one EVAL if the script was not cached yet)
    expect(await client.xlen(stream)).toBe(lines.length);
    rollup.add(lines.slice(0, 150));
    rollup.add(lines.slice(150));
    await rollup.close();

    const redisSource = new RedisUsageSource(client, prefix);
    const fileSource = new FileUsageSource(dir);
    const days = ['2026-03-01', '2026-03-02'];
    const redisIndex = await redisSource.indexMembers(days);
    const fileIndex = await fileSource.indexMembers(days);
    expect([...redisIndex.keys()].sort()).toEqual(days);
    for (const day of days) expect([...redisIndex.get(day)!].sort()).toEqual([...fileIndex.get(day)!].sort());

    const refs: { family: UsageFamily; group: string; hour: string }[] = [];
    for (const day of days) {
      for (const hour of ['10', '11', '12']) {
        for (const member of redisIndex.get(day)!) {
          const [keyId, account, agent] = member.split('\t') as [string, string, string];
          const groups: Record<UsageFamily, string> = { key: keyId, account, agent, 'key-agent': `${keyId}/${agent}` };
          for (const family of USAGE_FAMILIES) refs.push({ family, group: groups[family], hour: `${day}T${hour}` });
        }
      }
    }
    const fromRedis = await redisSource.readMerged(refs.map((ref) => [ref]));
    const fromFile = await fileSource.readMerged(refs.map((ref) => [ref]));
    expect(fromRedis.map((m) => Object.fromEntries([...m].sort()))).toEqual(fromFile.map((m) => Object.fromEntries([...m].sort())));
    // Every usage record counted once in each family.
    for (const family of USAGE_FAMILIES) {
      const total = fromRedis.filter((_, i) => refs[i]!.family === family).reduce((n, m) => n + (m.get('requests') ?? 0), 0);
      // refs repeat a group once per member that maps to it: count distinct refs only.
      const seen = new Set<string>();
      const distinct = fromRedis.filter((_, i) => {
        const id = `${refs[i]!.family}:${refs[i]!.group}:${refs[i]!.hour}`;
        if (refs[i]!.family !== family || seen.has(id)) return false;
        seen.add(id);
        return true;
      });
      expect(distinct.reduce((n, m) => n + (m.get('requests') ?? 0), 0), family).toBe(300);
      expect(total).toBeGreaterThanOrEqual(300);
    }
    // Read in groups (a day's hours added up where they are read): the same sums either way.
    const byDay = days.map((day) => refs.filter((ref) => ref.family === 'agent' && ref.hour.startsWith(day)));
    const mergedRedis = await redisSource.readMerged(byDay);
    const mergedFile = await fileSource.readMerged(byDay);
    expect(mergedRedis.map((m) => Object.fromEntries([...m].sort()))).toEqual(mergedFile.map((m) => Object.fromEntries([...m].sort())));
    expect(mergedRedis.reduce((n, m) => n + (m.get('requests') ?? 0), 0)).toBeGreaterThanOrEqual(300);
    const ttl = await client.ttl(`${prefix}key:key_0000000000000000:2026-03-01T10`);
    expect(ttl).toBeGreaterThan(retentionSeconds - 60);
    expect(ttl).toBeLessThanOrEqual(retentionSeconds);
  });
});
