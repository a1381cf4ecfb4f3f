// Usage rollups on a real 3-master Redis Cluster: the audit stream's batch script writes the
// period hashes it builds from its prefix, and the prefix carries the stream's hash tag
// (usageKeyPrefix), so every key the script touches is in the stream's slot and the one
// script call per batch runs on a cluster; the report's pipelines read them back there.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toAuditLine } from '../../src/audit/audit-record.js';
import { usageKeyPrefix } from '../../src/audit/open-audit-log.js';
import { RedisStreamAuditSink } from '../../src/audit/redis-stream-audit-sink.js';
import { RedisUsageSource, usageHashKey } from '../../src/audit/redis-usage-source.js';
import { usageReport } from '../../src/audit/usage-report.js';
import { silentLogger } from '../../src/logger.js';
import { createRedisClient, type RedisClient } from '../../src/redis/redis-client.js';
import { startRedisCluster, type TestRedisCluster } from '../helpers/redis-cluster.js';
import { waitFor } from '../helpers/redis-process.js';
import { workloadRecords, workloadTotals } from '../helpers/usage-workload.js';

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

describe('usage rollups on Redis Cluster', () => {
  it('the stream and its rollup keys share one slot; the batch script writes both and every report reads them back', async () => {
    const stream = `agentgw:audit-${randomUUID().slice(0, 6)}`;
    const prefix = usageKeyPrefix(stream);
    expect(prefix).toBe(`{${stream}}:usage:`);
    for (const key of [usageHashKey(prefix, 'h', 'account', '2026-03-01T10'), usageHashKey(prefix, 'd', 'tuple', '2026-03-02')]) {
      expect(await cluster.masterFor(key)).toBe(await cluster.masterFor(stream));
    }

    const sink = new RedisStreamAuditSink({ redis: client, streamKey: stream, maxLen: 10_000, commandTimeoutMs: 5_000, usage: { keyPrefix: prefix, retentionSeconds: 2_000 * 86_400 } });
    const records = workloadRecords(120);
    const lines = records.map(toAuditLine);
    await sink.write(lines.slice(0, 60));
    await sink.write(lines.slice(60));
    expect(await client.xlen(stream)).toBe(120);

    const source = new RedisUsageSource(client, prefix);
    const range = { fromMs: Date.parse('2026-03-01T00:00:00Z'), toMs: Date.parse('2026-03-03T00:00:00Z') };
    for (const groupBy of ['key', 'account', 'agent'] as const) {
      for (const granularity of ['hour', 'day'] as const) {
        const rows = await usageReport(source, { groupBy, granularity, ...range, agent: groupBy === 'agent' ? undefined : 'support' });
        const requests = new Map<string, number>();
        for (const row of rows) requests.set(row.group, (requests.get(row.group) ?? 0) + row.requests);
        const expected = workloadTotals(records, groupBy, (r) => groupBy === 'agent' || r.agent === 'support');
        expect(requests, `${groupBy} ${granularity}`).toEqual(new Map([...expected].map(([label, t]) => [label, t.requests])));
      }
    }
  });
});
