// A rolling upgrade of the audit stream's scripts (docs/audit.md, "Stream scripts and
// upgrades"): gateways from before the scripts were versioned (bare counts as replies) beside
// gateways with agw_audit_append_v1 / agw_audit_append_usage_v1, on one real Redis. The
// arguments, the stream entries and the usage hashes did not change, only the replies (now
// tagged): both append to one stream and count into the same usage buckets; neither reads the
// other's reply.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toAuditLine } from '../../src/audit/audit-record.js';
import { AUDIT_APPEND, AUDIT_APPEND_WITH_USAGE, AUDIT_STREAM_FIELD } from '../../src/audit/audit-stream-operations.js';
import { RedisStreamAuditSink } from '../../src/audit/redis-stream-audit-sink.js';
import { usageHashKey } from '../../src/audit/redis-usage-source.js';
import { addPacked, type BucketFields } from '../../src/audit/usage-buckets.js';
import { auditAppendWithUsageLua } from '../../src/audit/usage-rollup.lua.js';
import { silentLogger } from '../../src/logger.js';
import { createRedisClient, type RedisClient } from '../../src/redis/redis-client.js';
import { UnexpectedReplyError } from '../../src/redis/redis-operation.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { workloadRecords } from '../helpers/usage-workload.js';

/** The plain append as gateways before decision 0080 register it, verbatim. */
const APPEND_BEFORE = `
local maxLen = ARGV[1]
for i = 2, #ARGV do
  redis.call('XADD', KEYS[1], 'MAXLEN', '~', maxLen, '*', '${AUDIT_STREAM_FIELD}', ARGV[i])
end
return #ARGV - 1
`;
/** The rollup script before decision 0080: the same Lua, its reply the bare count. */
const APPEND_USAGE_BEFORE = auditAppendWithUsageLua(AUDIT_STREAM_FIELD, (added) => added);

type Call = (...args: Array<string | number>) => Promise<unknown>;

let redis: TestRedis;
let client: RedisClient;
let before: { append: Call; appendUsage: Call };

beforeAll(async () => {
  redis = await startRedis();
  client = createRedisClient({ url: redis.url, prefix: '', commandTimeoutMs: 5_000 }, silentLogger, 'upgrade-test');
  await new Promise((resolve) => client.once('ready', resolve));
  client.defineCommand('agentgwAuditAppend', { lua: APPEND_BEFORE });
  client.defineCommand('agentgwAuditAppendUsage', { lua: APPEND_USAGE_BEFORE });
  const commands = client as unknown as Record<string, Call>;
  before = { append: commands['agentgwAuditAppend']!.bind(client), appendUsage: commands['agentgwAuditAppendUsage']!.bind(client) };
});
afterAll(async () => {
  client.disconnect();
  await redis.close();
});

describe('audit stream scripts: gateways before decision 0080 beside agw_audit_*_v1 ones, on one Redis', () => {
  it('both append to one stream, in order, each reading only its own reply', async () => {
    const stream = `upgrade:${randomUUID().slice(0, 6)}`;
    const sink = new RedisStreamAuditSink({ redis: client, streamKey: stream, maxLen: 10_000, commandTimeoutMs: 5_000 });
    const lines = workloadRecords(6).map(toAuditLine);
    for (let i = 0; i < lines.length; i += 2) {
      await sink.write([lines[i]!]);
      expect(await before.append(1, stream, 10_000, lines[i + 1]!)).toBe(1);
    }
    const entries = (await client.xrange(stream, '-', '+')) as Array<[string, string[]]>;
    expect(entries.map(([, fields]) => fields)).toEqual(lines.map((line) => [AUDIT_STREAM_FIELD, line]));
    // The bare count is no reply of the versioned append, nor is the versioned one a bare count.
    expect(() => AUDIT_APPEND.decode(1, { streamKey: stream, maxLen: 1, lines: [] })).toThrow(UnexpectedReplyError);
    const tagged = await client.eval(AUDIT_APPEND.source, 1, stream, 10_000, lines[0]!);
    expect(AUDIT_APPEND.decode(tagged, { streamKey: stream, maxLen: 10_000, lines: [lines[0]!] })).toBe(1);
    expect(typeof tagged).not.toBe('number');
  });

  it('with usage rollups, both count into the same buckets', async () => {
    const prefix = `{up${randomUUID().slice(0, 6)}}:usage:`;
    const stream = `${prefix}stream`;
    const retentionSeconds = 2_000 * 86_400;
    const sink = new RedisStreamAuditSink({ redis: client, streamKey: stream, maxLen: 10_000, commandTimeoutMs: 5_000, usage: { keyPrefix: prefix, retentionSeconds } });
    const records = workloadRecords(40).map((record) => ({ ...record, ts: '2026-03-01T10:15:00.000Z', key_id: 'key_upgrade' }));
    const lines = records.map(toAuditLine);
    await sink.write(lines.slice(0, 20));
    expect(await before.appendUsage(1, stream, 10_000, prefix, retentionSeconds, ...lines.slice(20))).toBe(20);
    const fields: BucketFields = new Map();
    addPacked(fields, await client.hget(usageHashKey(prefix, 'h', 'key', '2026-03-01T10'), 'key_upgrade'));
    expect(fields.get('requests')).toBe(40);
    expect(await client.xlen(stream)).toBe(40);
    expect(() => AUDIT_APPEND_WITH_USAGE.decode(20, { streamKey: stream, maxLen: 1, lines: [], usagePrefix: prefix, retentionSeconds })).toThrow(UnexpectedReplyError);
  });
});
