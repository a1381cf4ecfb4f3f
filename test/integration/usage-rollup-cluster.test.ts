// Usage rollups on a real 3-master Redis Cluster: the audit stream's batch script writes the
// rollup keys it builds from its prefix, and the prefix carries the stream's hash tag
// (usageKeyPrefix), so every key the script touches is in the stream's slot and the one
// script call per batch runs on a cluster; the report reads them back there.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toAuditLine, type AuditRecord } from '../../src/audit/audit-record.js';
import { usageKeyPrefix } from '../../src/audit/open-audit-log.js';
import { RedisStreamAuditSink } from '../../src/audit/redis-stream-audit-sink.js';
import { RedisUsageSource } from '../../src/audit/redis-usage-source.js';
import { USAGE_FAMILIES } from '../../src/audit/usage-buckets.js';
import { silentLogger } from '../../src/logger.js';
import { createRedisClient, type RedisClient } from '../../src/redis/redis-client.js';
import { startRedisCluster, type TestRedisCluster } from '../helpers/redis-cluster.js';
import { waitFor } from '../helpers/redis-process.js';

let cluster: TestRedisCluster;
let client: RedisClient;

beforeAll(async () => {
  cluster = await startRedisCluster({ masters: 3 });
  client = createRedisClient({ mode: 'cluster', nodes: cluster.seeds, prefix: 'agentgw:', commandTimeoutMs: 5_000 }, silentLogger, 'rollup-cluster-test');
  await waitFor('the cluster client', async () => (await client.ping()) === 'PONG');
});

afterAll(async () => {
  client?.disconnect();
  await cluster?.close();
});

function records(count: number): AuditRecord[] {
  return Array.from({ length: count }, (_, i) => ({
    id: randomUUID(),
    request_id: `client-${i}`,
    ts: `2026-03-01T1${i % 3}:15:00.000Z`,
    key_id: `key_${String(i % 4).padStart(16, '0')}`,
    account: i % 4 < 2 ? 'acme' : 'globex',
    plan: 'pro',
    agent: i % 2 === 0 ? 'sales' : 'support',
    route: 'chat',
    status: 200,
    outcome: 'ok',
    tokens_used: 10,
    latency_ms: 5,
    upstream_latency_ms: null,
    bytes_in: 10,
    bytes_out: 20,
    client_ip: '127.0.0.1',
    user_id: null,
    session_id: null,
  }));
}

describe('usage rollups on Redis Cluster', () => {
  it('the stream and its rollup keys share one slot; the batch script writes both and the report reads them back', async () => {
    const stream = `agentgw:audit-${randomUUID().slice(0, 6)}`;
    const prefix = usageKeyPrefix(stream);
    expect(prefix).toBe(`{${stream}}:usage:`);
    expect(await cluster.masterFor(`${prefix}account:acme:2026-03-01T10`)).toBe(await cluster.masterFor(stream));

    const sink = new RedisStreamAuditSink({ redis: client, streamKey: stream, maxLen: 10_000, commandTimeoutMs: 5_000, usage: { keyPrefix: prefix, retentionSeconds: 86_400 } });
    const lines = records(120).map(toAuditLine);
    await sink.write(lines.slice(0, 60));
    await sink.write(lines.slice(60));
    expect(await client.xlen(stream)).toBe(120);

    const source = new RedisUsageSource(client, prefix);
    const index = await source.indexMembers(['2026-03-01']);
    expect([...index.get('2026-03-01')!].sort()).toEqual(
      ['key_0000000000000000\tacme\tsales', 'key_0000000000000001\tacme\tsupport', 'key_0000000000000002\tglobex\tsales', 'key_0000000000000003\tglobex\tsupport'],
    );
    const hours = ['2026-03-01T10', '2026-03-01T11', '2026-03-01T12'];
    const groups = { key: ['key_0000000000000000', 'key_0000000000000001', 'key_0000000000000002', 'key_0000000000000003'], account: ['acme', 'globex'], agent: ['sales', 'support'] };
    for (const family of USAGE_FAMILIES) {
      if (family === 'key-agent') continue;
      const refs = groups[family].flatMap((group) => hours.map((hour) => ({ family, group, hour })));
      const merged = await source.readMerged(refs.map((ref) => [ref]));
      expect(merged.reduce((n, m) => n + (m.get('requests') ?? 0), 0), family).toBe(120);
      expect(merged.reduce((n, m) => n + (m.get('tokens') ?? 0), 0), family).toBe(1_200);
    }
  });
});
