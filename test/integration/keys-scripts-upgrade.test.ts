// A rolling upgrade of the key store's scripts (docs/keys.md, "Store scripts and upgrades"):
// gateways from before the scripts were versioned (their scripts under agentgwKey* names,
// bare replies) beside gateways with the agw_key_*_v1 operations, on one real Redis. The
// arguments and the record layout did not change, only the replies (now tagged): each
// gateway runs its own scripts (their SHA1s differ) on the same records and indexes, reads
// the other's writes, and never reads the other's replies.
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { KeyRecord } from '../../src/keys/key-record.js';
import { indexEntries, indexFields, indexOps } from '../../src/keys/redis-key-index.js';
import { recordFields } from '../../src/keys/redis-key-fields.js';
import { KEY_CREATE, KEY_REVOKE, KEY_TOUCH, type CreateKeyRequest } from '../../src/keys/redis-key-operations.js';
import { createRedisKeyStore, keyStoreKeyHead, type RedisKeyStore } from '../../src/keys/redis-key-store.js';
import { silentLogger } from '../../src/logger.js';
import { createRedisClientFactory } from '../../src/redis/redis-client.js';
import { UnexpectedReplyError } from '../../src/redis/redis-operation.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';

const PREFIX = 'agentgw:';

/** The scripts as gateways before decision 0080 register them (bare replies), verbatim. */
const APPLY_INDEX_OPS = `
local nops = tonumber(ARGV[i])
for j = 0, nops - 1 do
  local at = i + 1 + j * 4
  if ARGV[at] == 'a' then redis.call('zadd', ARGV[at + 1], ARGV[at + 2], ARGV[at + 3])
  else redis.call('zrem', ARGV[at + 1], ARGV[at + 3]) end
end
i = i + 1 + nops * 4
`;
const CREATE_BEFORE = `
if redis.call('exists', KEYS[1]) == 1 then return 'hash_exists' end
if redis.call('exists', KEYS[2]) == 1 then return 'id_exists' end
local nfields = tonumber(ARGV[4])
redis.call('hset', KEYS[1], unpack(ARGV, 5, 4 + nfields * 2))
redis.call('set', KEYS[2], ARGV[1])
local i = 5 + nfields * 2
${APPLY_INDEX_OPS}
redis.call('publish', ARGV[3], ARGV[1])
return 'ok'
`;
const REVOKE_BEFORE = `
if redis.call('exists', KEYS[1]) == 0 then return nil end
if not redis.call('hget', KEYS[1], 'revoked_at') then
  redis.call('hset', KEYS[1], 'revoked_at', ARGV[1])
  redis.call('hincrby', KEYS[1], 'rev', 1)
  local member = redis.call('hget', KEYS[1], 'ix')
  if member then
    redis.call('zrem', ARGV[4] .. 'ix:status:active', member)
    redis.call('zrem', ARGV[4] .. 'ix:status:expired', member)
    redis.call('zrem', ARGV[4] .. 'ix:expiry', member)
    redis.call('zadd', ARGV[4] .. 'ix:status:revoked', 0, member)
  end
end
redis.call('publish', ARGV[2], ARGV[3])
return redis.call('hgetall', KEYS[1])
`;
const TOUCH_BEFORE = `
if redis.call('exists', KEYS[1]) == 0 then return 0 end
local current = redis.call('hget', KEYS[1], 'last_used_at')
if current and current >= ARGV[1] then return 0 end
redis.call('hset', KEYS[1], 'last_used_at', ARGV[1])
return 1
`;

type Call = (...args: Array<string | number>) => Promise<unknown>;

let redis: TestRedis;
let before: Redis;
let store: RedisKeyStore;
let createBefore: Call;
let revokeBefore: Call;
let touchBefore: Call;

beforeAll(async () => {
  redis = await startRedis();
  before = new Redis(redis.url, { maxRetriesPerRequest: 1 });
  before.defineCommand('agentgwKeyCreate', { numberOfKeys: 2, lua: CREATE_BEFORE });
  before.defineCommand('agentgwKeyRevoke', { numberOfKeys: 1, lua: REVOKE_BEFORE });
  before.defineCommand('agentgwKeyTouch', { numberOfKeys: 1, lua: TOUCH_BEFORE });
  const commands = before as unknown as Record<string, Call>;
  createBefore = commands['agentgwKeyCreate']!.bind(before);
  revokeBefore = commands['agentgwKeyRevoke']!.bind(before);
  touchBefore = commands['agentgwKeyTouch']!.bind(before);
});
beforeEach(async () => {
  await redis.flush();
  const clients = createRedisClientFactory({ url: redis.url, prefix: PREFIX, commandTimeoutMs: 5_000 }, silentLogger);
  store = await createRedisKeyStore({ redis: clients, prefix: PREFIX, commandTimeoutMs: 5_000, logger: silentLogger, subscribe: false, waitForConnectionMs: 5_000 });
});
afterEach(async () => {
  await store.close();
});
afterAll(async () => {
  before.disconnect();
  await redis.close();
});

function key(i: number, overrides: Partial<KeyRecord> = {}): KeyRecord {
  return {
    keyId: `key_${String(i).padStart(16, '0')}`,
    hash: i.toString(16).padStart(64, '0'),
    account: 'acct',
    plan: 'pro',
    agents: ['support'],
    name: `key ${i}`,
    createdAt: new Date(Date.parse('2029-01-01T00:00:00.000Z') + i).toISOString(),
    expiresAt: null,
    revokedAt: null,
    lastUsedAt: null,
    metadata: {},
    limits: null,
    tools: null,
    replaces: null,
    replacedBy: null,
    ...overrides,
  };
}

/** A create as every gateway lays it out: the arguments did not change with the version. */
function createRequest(record: KeyRecord): CreateKeyRequest {
  return {
    recordKey: store.keyName(record.hash),
    idKey: store.idName(record.keyId),
    hash: record.hash,
    keyId: record.keyId,
    channel: store.channel,
    fields: [...recordFields(record), ...indexFields(record)],
    indexOps: indexOps(indexEntries(store.indexes, record)),
  };
}

describe('key store scripts: gateways before decision 0080 beside agw_key_*_v1 ones, on one Redis', () => {
  it('each writes records and indexes the other reads, revokes and touches', async () => {
    const older = key(1);
    const newer = key(2);
    expect(await createBefore(...KEY_CREATE.encode(createRequest(older)))).toBe('ok');
    await store.create(newer);
    // The new gateway reads, lists and revokes what the older one wrote …
    expect(await store.findById(older.keyId)).toEqual(older);
    const page = await store.listPage({ limit: 10, nowMs: Date.now() });
    expect(page.records.map((record) => record.keyId)).toEqual([older.keyId, newer.keyId]);
    expect((await store.revoke(older.keyId, '2029-02-01T00:00:00.000Z'))?.revokedAt).toBe('2029-02-01T00:00:00.000Z');
    // … and the older one revokes and touches what the new one wrote, in the same indexes.
    const pairs = (await revokeBefore(store.keyName(newer.hash), '2029-02-02T00:00:00.000Z', store.channel, newer.hash, keyStoreKeyHead(PREFIX))) as string[];
    expect(pairs).toContain('2029-02-02T00:00:00.000Z');
    expect(await touchBefore(store.keyName(newer.hash), '2029-03-01T00:00:00.000Z')).toBe(1);
    await store.touchLastUsed([{ hash: newer.hash, atIso: '2029-02-15T00:00:00.000Z' }]);
    const read = await store.findById(newer.keyId);
    expect([read?.revokedAt, read?.lastUsedAt]).toEqual(['2029-02-02T00:00:00.000Z', '2029-03-01T00:00:00.000Z']);
    const revoked = await store.listPage({ status: 'revoked', limit: 10, nowMs: Date.now() });
    expect(revoked.records.map((record) => record.keyId)).toEqual([older.keyId, newer.keyId]);
    // Uniqueness holds across versions: the older gateway's create of a taken id is refused.
    expect(await createBefore(...KEY_CREATE.encode(createRequest(key(3, { keyId: newer.keyId }))))).toBe('id_exists');
  });

  it('neither reads the other\'s replies: a bare reply is refused by the new decoders', async () => {
    const record = key(4);
    const bare = await createBefore(...KEY_CREATE.encode(createRequest(record)));
    expect(() => KEY_CREATE.decode(bare, createRequest(record))).toThrow(UnexpectedReplyError);
    const revokeRequest = { recordKey: store.keyName(record.hash), atIso: '2029-02-01T00:00:00.000Z', channel: store.channel, hash: record.hash, keyHead: keyStoreKeyHead(PREFIX) };
    const bareRevoke = await revokeBefore(...KEY_REVOKE.encode(revokeRequest));
    expect(() => KEY_REVOKE.decode(bareRevoke, revokeRequest)).toThrow(UnexpectedReplyError);
    const bareTouch = await touchBefore(store.keyName(record.hash), '2029-03-01T00:00:00.000Z');
    expect(bareTouch).toBe(1);
    expect(() => KEY_TOUCH.decode(bareTouch, { recordKey: store.keyName(record.hash), atIso: '2029-03-01T00:00:00.000Z' })).toThrow(UnexpectedReplyError);
    // Both versions' scripts sit in the script cache side by side.
    const shas = await Promise.all([CREATE_BEFORE, KEY_CREATE.source].map((source) => before.script('LOAD', source) as Promise<string>));
    expect(new Set(shas).size).toBe(2);
  });

  it('a reply of the wrong shape fails the store call as Redis failing', async () => {
    // The v1 name carrying another script: what a broken or hostile server could answer.
    const data = (store as unknown as { redis: Redis }).redis;
    data.defineCommand(KEY_CREATE.name, { numberOfKeys: 2, lua: `return { '${KEY_CREATE.name}', 'maybe' }` });
    await expect(store.create(key(5))).rejects.toMatchObject({ name: 'StoreUnavailableError', message: expect.stringMatching(/agw_key_create_v1 returned an unexpected reply/) });
  });
});
