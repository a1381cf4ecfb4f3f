// The key expiry sweeper (src/keys/key-expiry-sweeper.ts) on both stores: among 1,000 keys,
// the 3 expiring inside the warning get key.expiring, exactly once, after Redis work that
// does not grow with the other 997 (INFO commandstats deltas); keys that expire get
// key.expired once, also when a status listing swept them first; revoked keys and keys
// given a later expiry get nothing; no body carries a raw key or a hash.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { KeyEvents } from '../../src/keys/key-events.js';
import { KeyExpirySweeper } from '../../src/keys/key-expiry-sweeper.js';
import { KeyService } from '../../src/keys/key-service.js';
import type { KeyStore } from '../../src/keys/key-store.js';
import { createRedisKeyStore } from '../../src/keys/redis-key-store.js';
import { silentLogger } from '../../src/logger.js';
import { createRedisClientFactory, type RedisClient, type RedisConfig } from '../../src/redis/redis-client.js';
import { openFileStore, testConfig } from '../helpers/key-stores.js';
import { RecordingNotifier } from '../helpers/recording-notifier.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';

const DAY = 86_400_000;
const WARNING = 7 * DAY;
const PAGE = 50;

let redis: TestRedis;
let dir: string;
let inspect: RedisClient | undefined;

beforeAll(async () => {
  redis = await startRedis();
  dir = await mkdtemp(join(tmpdir(), 'agentgw-expiry-'));
}, 60_000);

afterAll(async () => {
  inspect?.disconnect();
  await redis?.close();
  await rm(dir, { recursive: true, force: true });
});

/** Total calls of every command so far, scripts' own calls included (INFO commandstats). */
async function commandCalls(client: RedisClient): Promise<number> {
  const text = await client.info('commandstats');
  let total = 0;
  for (const match of text.matchAll(/^cmdstat_[^:]+:calls=(\d+)/gm)) total += Number(match[1]);
  return total;
}

let n = 0;
const stores: [string, () => Promise<{ store: KeyStore; commands?: () => Promise<number> }>][] = [
  [
    'redis',
    async () => {
      const prefix = `exp${n++}:`;
      const config = { url: redis.url, prefix, commandTimeoutMs: 5_000 } as RedisConfig;
      const store = await createRedisKeyStore({ redis: createRedisClientFactory(config, silentLogger), prefix, commandTimeoutMs: 5_000, logger: silentLogger, subscribe: false, waitForConnectionMs: 10_000 });
      inspect ??= store.client;
      const client = store.client;
      return { store, commands: () => commandCalls(client) };
    },
  ],
  ['file', async () => ({ store: await openFileStore(join(dir, `keys-${n++}.json`), true) })],
];

describe.each(stores)('key expiry sweeper (%s store)', (_name, open) => {
  function setup(store: KeyStore, clock: ManualClock) {
    const notifier = new RecordingNotifier(() => clock.now());
    const events = new KeyEvents({ publisher: notifier, expiryWarningMs: WARNING });
    // Keys written without events: the sweeper alone must find them.
    const service = new KeyService({ store, config: testConfig, clock });
    const sweeper = new KeyExpirySweeper({ index: store.expiry!, store, events, intervalMs: 10_000, pageSize: PAGE, clock, logger: silentLogger });
    return { notifier, service, sweeper };
  }

  it('among 1,000 keys, warns about exactly the 3 expiring soon, once, with bounded work', async () => {
    const { store, commands } = await open();
    const clock = new ManualClock(Date.now());
    const { notifier, service, sweeper } = setup(store, clock);
    const soon = new Set<string>();
    const raw: string[] = [];
    for (let i = 0; i < 1_000; i++) {
      const expiresInMs = i % 333 === 7 ? 2 * DAY + i : i % 2 === 0 ? 60 * DAY + i : undefined;
      const created = await service.createKey({ account: `acct${i % 10}`, plan: 'starter', agents: ['support'], name: `k${i}`, expiresInMs });
      raw.push(created.rawKey, created.record.hash);
      if (i % 333 === 7) soon.add(created.record.keyId);
    }
    expect(soon.size).toBe(3);
    // The file store reloads what it wrote; wait for it to see all 1,000.
    await expect.poll(async () => (await store.listPage({ limit: 500, nowMs: clock.now() })).records.length).toBe(500);

    const before = await commands?.();
    const result = await sweeper.sweep();
    const after = await commands?.();
    expect(result).toEqual({ expiring: 3, expired: 0 });
    expect(new Set(notifier.ofType('key.expiring').map((event) => event.data.key_id))).toEqual(soon);
    expect(notifier.events.map((event) => event.subject).sort()).toEqual([...soon].map((id) => `key:${id}`).sort());
    if (before !== undefined && after !== undefined) {
      // Fixed work (the sweep script, two ZRANGEBYSCOREs, the mark's GET and SET, ZREM-less
      // empty announce) plus a GET and an HGETALL per key returned: not the 997 others. The
      // INFO call itself counts once.
      expect(after - before).toBeLessThanOrEqual(12 + 2 * 3);
    }

    // The next sweeps find nothing new: the window moved on.
    clock.advance(10_000);
    expect(await sweeper.sweep()).toEqual({ expiring: 0, expired: 0 });
    expect(notifier.events).toHaveLength(3);
    const bodies = JSON.stringify(notifier.events);
    for (const secret of raw) expect(bodies).not.toContain(secret);
    await store.close();
  }, 120_000);

  it('announces each expiry once, also after a status listing swept it; not revoked or extended keys', async () => {
    const { store } = await open();
    const clock = new ManualClock(Date.now());
    const { notifier, service, sweeper } = setup(store, clock);
    const a = await service.createKey({ account: 'acme', plan: 'starter', agents: ['support'], expiresInMs: 60_000 });
    const b = await service.createKey({ account: 'acme', plan: 'starter', agents: ['support'], expiresInMs: 60_000 });
    const revoked = await service.createKey({ account: 'acme', plan: 'starter', agents: ['support'], expiresInMs: 60_000 });
    const extended = await service.createKey({ account: 'acme', plan: 'starter', agents: ['support'], expiresInMs: 60_000 });
    await service.revokeKey(revoked.record.keyId);
    await expect.poll(async () => (await store.findById(revoked.record.keyId))?.revokedAt ?? null).not.toBeNull();
    expect((await sweeper.sweep()).expiring).toBe(3);

    clock.advance(120_000);
    await service.updateKey(extended.record.keyId, { expiresAt: new Date(clock.now() + 30 * DAY).toISOString() });
    await expect.poll(async () => (await store.findById(extended.record.keyId))?.expiresAt).toBe(new Date(clock.now() + 30 * DAY).toISOString());
    // A status page (the admin API's, the dashboard's) sweeps due keys first.
    await store.listPage({ status: 'expired', limit: 10, nowMs: clock.now() });
    const result = await sweeper.sweep();
    expect(result.expired).toBe(2);
    expect(notifier.ofType('key.expired').map((event) => event.data.key_id).sort()).toEqual([a.record.keyId, b.record.keyId].sort());
    clock.advance(10_000);
    expect((await sweeper.sweep()).expired).toBe(0);
    expect(notifier.ofType('key.expired')).toHaveLength(2);
    await store.close();
  }, 60_000);
});

describe('key expiry sweeper on the key file, across a restart', () => {
  it('does not warn again, and announces a key that expired while no gateway ran', async () => {
    const path = join(dir, `keys-restart-${n++}.json`);
    const clock = new ManualClock(Date.now());
    const run = async () => {
      const store = await openFileStore(path, true);
      const notifier = new RecordingNotifier(() => clock.now());
      const sweeper = new KeyExpirySweeper({ index: store.expiry!, store, events: new KeyEvents({ publisher: notifier, expiryWarningMs: WARNING }), intervalMs: 10_000, pageSize: PAGE, clock, logger: silentLogger });
      return { store, notifier, sweeper };
    };
    const first = await run();
    const service = new KeyService({ store: first.store, config: testConfig, clock });
    const key = await service.createKey({ account: 'acme', plan: 'starter', agents: ['support'], expiresInMs: 60_000 });
    const later = await service.createKey({ account: 'acme', plan: 'starter', agents: ['support'], expiresInMs: 2 * DAY });
    await expect.poll(async () => (await first.store.findById(later.record.keyId)) !== undefined).toBe(true);
    expect((await first.sweeper.sweep()).expiring).toBe(2);
    await first.store.close();

    // Down while the first key expires; the next gateway warns about neither again (the
    // other is still inside the window) and announces the expiry.
    clock.advance(120_000);
    const second = await run();
    expect(await second.sweeper.sweep()).toEqual({ expiring: 0, expired: 1 });
    expect(second.notifier.events.map((event) => [event.type, event.data.key_id])).toEqual([['key.expired', key.record.keyId]]);
    await second.store.close();

    const third = await run();
    expect(await third.sweeper.sweep()).toEqual({ expiring: 0, expired: 0 });
    await third.store.close();
  });
});
