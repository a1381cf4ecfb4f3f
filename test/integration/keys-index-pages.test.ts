// The Redis key store's listing indexes (docs/keys.md, "Listing at scale") on a single server
// and on a 3-master Cluster: every filter and combination pages exactly what a full read
// would, in (created_at, key_id) order; updates, rotations, revocations and expiry move keys
// between indexes; and a store written in the layout before the indexes is indexed once, by
// a subscribing (gateway) store, idempotently and resumably.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { KeyService } from '../../src/keys/key-service.js';
import type { KeyRecord } from '../../src/keys/key-record.js';
import { keyStatus } from '../../src/keys/key-record-codec.js';
import { eachKeyPage, matchesPage, nameKey, PAGE_SCAN_BUDGET } from '../../src/keys/key-pages.js';
import type { KeyPageQuery } from '../../src/keys/key-store.js';
import { recordFields } from '../../src/keys/redis-key-fields.js';
import { indexEntries, indexFields } from '../../src/keys/redis-key-index.js';
import { createRedisKeyStore, type RedisKeyStore } from '../../src/keys/redis-key-store.js';
import { silentLogger, type Logger } from '../../src/logger.js';
import { createRedisClientFactory, type RedisClient, type RedisConfig } from '../../src/redis/redis-client.js';
import { captureLogLines } from '../helpers/log-capture.js';
import { testConfig } from '../helpers/key-stores.js';
import { startRedisCluster, type TestRedisCluster } from '../helpers/redis-cluster.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { waitFor } from '../helpers/wait.js';

/** Key number `i` (id and hash derived from it), with `overrides`. */
function numberedKey(i: number, overrides: Partial<KeyRecord>): KeyRecord {
  return {
    keyId: `key_${String(i).padStart(16, '0')}`,
    hash: i.toString(16).padStart(64, '0'),
    account: 'acct',
    plan: 'pro',
    agents: ['support'],
    name: '',
    createdAt: new Date(Date.parse('2029-01-01T00:00:00.000Z') + i).toISOString(),
    expiresAt: null,
    revokedAt: null,
    lastUsedAt: null,
    metadata: {},
    limits: null,
    tools: null,
    mcp: null,
    replaces: null,
    replacedBy: null,
    ...overrides,
  };
}

/** Writes `records` as the store's create script would (record, id entry, index entries), pipelined. */
async function writeIndexed(store: RedisKeyStore, records: KeyRecord[]): Promise<void> {
  const pipeline = store.client.pipeline();
  for (const record of records) {
    pipeline.hset(`${store.indexes.head}key:${record.hash}`, ...recordFields(record), ...indexFields(record));
    pipeline.set(`${store.indexes.head}keyid:${record.keyId}`, record.hash);
    for (const [key, score, member] of indexEntries(store.indexes, record)) pipeline.zadd(key, score, member);
  }
  await pipeline.exec();
}

let single: TestRedis;
let cluster: TestRedisCluster;

beforeAll(async () => {
  [single, cluster] = await Promise.all([startRedis({ controllable: true }), startRedisCluster({ masters: 3 })]);
}, 60_000);

afterAll(async () => {
  await single?.close();
  await cluster?.close();
});

const topologies: [string, () => RedisConfig][] = [
  ['single', () => ({ url: single.url, prefix: 'ixs:', commandTimeoutMs: 2_000 }) as RedisConfig],
  ['cluster', () => ({ mode: 'cluster', nodes: cluster.seeds, prefix: 'ixc:', commandTimeoutMs: 2_000 }) as RedisConfig],
];

describe.each(topologies)('Redis key store indexes (%s)', (_name, configOf) => {
  let n = 0;
  async function open(options: { subscribe?: boolean; prefix?: string; logger?: Logger } = {}): Promise<{ store: RedisKeyStore; data: RedisClient }> {
    const prefix = options.prefix ?? `${configOf().prefix}${n++}:`;
    const factory = createRedisClientFactory({ ...configOf(), prefix }, silentLogger);
    const store = await createRedisKeyStore({ redis: factory, prefix, commandTimeoutMs: 2_000, logger: options.logger ?? silentLogger, subscribe: options.subscribe ?? false, waitForConnectionMs: 10_000 });
    return { store, data: store.client };
  }

  /** Every page of `query`, checking order and the page size on the way. */
  async function pages(store: RedisKeyStore, query: Omit<KeyPageQuery, 'after'>): Promise<KeyRecord[]> {
    const out: KeyRecord[] = [];
    for await (const page of eachKeyPage(store, query)) {
      expect(page.records.length).toBeLessThanOrEqual(query.limit);
      out.push(...page.records);
    }
    for (let i = 1; i < out.length; i++) expect(`${out[i - 1]!.createdAt}|${out[i - 1]!.keyId}` < `${out[i]!.createdAt}|${out[i]!.keyId}`).toBe(true);
    return out;
  }

  it('pages every filter and combination exactly, and follows updates, rotations, revocations and expiry', async () => {
    const clock = new ManualClock(Date.parse('2030-01-01T00:00:00.000Z'));
    const { store } = await open();
    const service = new KeyService({ store, config: testConfig, clock });
    const names = ['Alpha one', 'alpha two', 'ALPS', 'beta', '', 'Ärger', 'al'];
    const made: KeyRecord[] = [];
    for (let i = 0; i < 60; i++) {
      // Several keys per millisecond: order within one created_at is by key_id.
      if (i % 3 === 0) clock.advance(1);
      const { record } = await service.createKey({
        account: `acct${i % 4}`,
        plan: i % 2 ? 'pro' : 'starter',
        agents: i % 5 === 0 ? ['support', 'sales'] : ['support'],
        name: names[i % names.length]!,
        ...(i % 6 === 0 ? { expiresInMs: 1_000 + i * 10 } : {}),
      });
      made.push(record);
    }
    for (const record of made.filter((_, i) => i % 7 === 3)) await service.revokeKey(record.keyId);
    // Moves between indexes: a rename, new agents, an expiry set and one removed, a rotation.
    await service.updateKey(made[1]!.keyId, { name: 'Beta renamed', agents: ['sales'] });
    await service.updateKey(made[2]!.keyId, { expiresAt: new Date(clock.now() + 500).toISOString() });
    await service.updateKey(made[6]!.keyId, { expiresAt: null });
    await service.rotateKey(made[8]!.keyId, { graceMs: 100 });
    clock.advance(800);

    const everything = (await pages(store, { limit: 500, nowMs: clock.now() })).map((r) => r.keyId);
    const truth = await Promise.all(everything.map(async (id) => (await store.findById(id))!));
    expect(truth).toHaveLength(61);
    const queries: Omit<KeyPageQuery, 'after' | 'limit' | 'nowMs'>[] = [
      {},
      { account: 'acct1' },
      { agent: 'sales' },
      { status: 'active' },
      { status: 'expired' },
      { status: 'revoked' },
      { namePrefix: nameKey('AL') },
      { namePrefix: nameKey('alpha T') },
      { namePrefix: nameKey('ä') },
      { account: 'acct2', agent: 'support', status: 'active', namePrefix: 'al' },
      { account: 'nobody' },
      { namePrefix: 'zzz' },
    ];
    for (const filters of queries) {
      const query = { ...filters, limit: 4, nowMs: clock.now() };
      const expected = truth.filter((r) => matchesPage(r, query)).map((r) => r.keyId);
      expect((await pages(store, query)).map((r) => r.keyId), JSON.stringify(filters)).toEqual(expected);
    }
    // The statuses the index answered are the records' statuses at that time.
    expect(truth.some((r) => keyStatus(r, clock.now()) === 'expired')).toBe(true);
    await store.close();
  });

  it('stops a rare match at the scan budget with a short page and a cursor that resumes', async () => {
    const { store } = await open();
    // Two halves, each larger than the budget; only the last key is in both account a and
    // agent sales, so whichever half the page walks, it looks at over 4,000 entries first.
    const total = 2 * PAGE_SCAN_BUDGET + 40;
    await writeIndexed(
      store,
      Array.from({ length: total }, (_, i) => {
        const needle = i === total - 1;
        return numberedKey(i, { account: needle || i % 2 ? 'a' : 'b', agents: needle || i % 2 === 0 ? ['support', 'sales'] : ['support'], name: needle ? 'needle' : 'hay' });
      }),
    );
    const query = { account: 'a', agent: 'sales', limit: 5, nowMs: Date.now() };
    const first = await store.listPage(query);
    expect(first.records).toEqual([]);
    expect(first.next).not.toBeNull();
    const second = await store.listPage({ ...query, after: first.next! });
    expect(second.records.map((r) => r.name)).toEqual(['needle']);
    expect(second.next).toBeNull();
    await store.close();
  });

  it('moves a backlog of due keys to expired: one batch before the page, the rest in the background', async () => {
    const { store, data } = await open();
    const nowMs = Date.parse('2029-06-01T00:00:00.000Z');
    await writeIndexed(store, Array.from({ length: 2_500 }, (_, i) => numberedKey(i, { account: 'due', expiresAt: new Date(nowMs - 10).toISOString() })));
    // Not yet moved, and still never listed as active.
    expect((await store.listPage({ status: 'active', limit: 10, nowMs })).records).toEqual([]);
    await waitFor('the backlog drained', async () => (await data.zcard(store.indexes.expiry())) === 0 || undefined, 10_000);
    expect(await data.zcard(store.indexes.status('expired'))).toBe(2_500);
    expect(await data.zcard(store.indexes.status('active'))).toBe(0);
    expect((await pages(store, { status: 'expired', limit: 500, nowMs })).length).toBe(2_500);
    await store.close();
  });

  it('indexes a store written in the layout before the indexes once, resumably, and logs it', async () => {
    const prefix = `${configOf().prefix}legacy${n++}:`;
    const { store: writer, data } = await open({ prefix });
    const head = `{${prefix}keys}:`;
    const clock = new ManualClock(Date.parse('2029-05-01T00:00:00.000Z'));
    // Records as the earlier layout wrote them: record, id entry, the all and account sets.
    const legacy: KeyRecord[] = [];
    for (let i = 0; i < 1_200; i++) {
      clock.advance(1);
      const record = numberedKey(i, {
        account: `acct${i % 3}`,
        name: i % 2 ? `Legacy ${i}` : `other ${i}`,
        createdAt: new Date(clock.now()).toISOString(),
        revokedAt: i % 10 === 0 ? new Date(clock.now()).toISOString() : null,
      });
      legacy.push(record);
      const pipeline = data.pipeline();
      pipeline.hset(`${head}key:${record.hash}`, ...recordFields(record));
      pipeline.set(`${head}keyid:${record.keyId}`, record.hash);
      pipeline.sadd(`${head}all`, record.keyId);
      pipeline.sadd(`${head}account:${record.account}`, record.keyId);
      await pipeline.exec();
    }
    // A half-done earlier run: the first 300 are already indexed and off the old sets.
    const partial = await open({ prefix, subscribe: true });
    await partial.store.startIndexMigration();
    await partial.store.close();
    expect(await data.scard(`${head}all`)).toBe(0);
    // Put 300 back as a run that stopped half-way would have left them: still in the sets.
    for (const record of legacy.slice(0, 300)) await data.sadd(`${head}all`, record.keyId);

    const logs = captureLogLines();
    const { store } = await open({ prefix, subscribe: true, logger: logs.logger });
    await waitFor('the old set emptied', async () => (await data.exists(`${head}all`)) === 0, 20_000);
    await waitFor('the done line', () => logs.lines.some((l) => l.msg === 'key store: listing indexes built'), 5_000);
    expect(logs.lines.find((l) => String(l.msg).startsWith('key store: building the listing indexes'))).toMatchObject({ keys: 300 });
    expect(await data.exists(`${head}account:acct0`)).toBe(0);
    const now = clock.now();
    expect((await pages(store, { limit: 100, nowMs: now })).map((r) => r.keyId)).toEqual(legacy.map((r) => r.keyId));
    expect((await pages(store, { limit: 100, nowMs: now, status: 'revoked' })).map((r) => r.keyId)).toEqual(legacy.filter((r) => r.revokedAt).map((r) => r.keyId));
    expect((await pages(store, { limit: 100, nowMs: now, account: 'acct1', namePrefix: 'legacy' })).map((r) => r.keyId)).toEqual(
      legacy.filter((r) => r.account === 'acct1' && r.name.startsWith('Legacy')).map((r) => r.keyId),
    );
    await store.close();
    await writer.close();
  }, 60_000);
});
