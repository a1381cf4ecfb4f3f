// The Redis key store against a real redis-server: CRUD, pub/sub invalidation across
// gateway instances, outage behaviour, the shared failed-auth throttle, and no raw key at rest.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { FailedAuthThrottle } from '../../src/auth/failed-auth-throttle.js';
import { KeyAuthenticator } from '../../src/auth/key-authenticator.js';
import { generateApiKey } from '../../src/keys/key-format.js';
import { KeyService } from '../../src/keys/key-service.js';
import { KeyConflictError, StoreUnavailableError } from '../../src/keys/key-store.js';
import { LastUsedTracker } from '../../src/auth/last-used-tracker.js';
import { createRedisKeyStore, type RedisKeyStore } from '../../src/keys/redis-key-store.js';
import { ManualClock, systemClock, type Clock } from '../../src/clock.js';
import { GatewayError } from '../../src/errors.js';
import { silentLogger } from '../../src/logger.js';
import { createRedisClientFactory } from '../../src/redis/redis-client.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { SpyStore, testConfig } from '../helpers/key-stores.js';
import { waitFor } from '../helpers/wait.js';
import { gatewayErrorOf } from '../helpers/gateway-error.js';
import { redisErrorCount } from '../helpers/metric-counts.js';
import { collectKeys } from '../../src/keys/key-pages.js';

const PREFIX = 'agentgw:';
let redis: TestRedis;
let admin: Redis;
const closers: (() => Promise<void>)[] = [];

beforeAll(async () => {
  redis = await startRedis({ controllable: true });
  admin = new Redis(redis.url, { maxRetriesPerRequest: 1 });
  admin.on('error', () => {});
});
afterAll(async () => {
  admin.disconnect();
  await redis.close();
});
beforeEach(async () => {
  await redis.flush();
});
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

async function store(subscribe: boolean): Promise<RedisKeyStore> {
  const clients = createRedisClientFactory({ url: redis.url, prefix: PREFIX, commandTimeoutMs: 200 }, silentLogger);
  const s = await createRedisKeyStore({ redis: clients, prefix: PREFIX, commandTimeoutMs: 200, logger: silentLogger, subscribe, waitForConnectionMs: 5_000 });
  closers.push(() => s.close());
  return s;
}

function authenticator(s: RedisKeyStore | SpyStore, clock: Clock, options: { maxAttempts?: number; redisClient?: Redis } = {}): { auth: KeyAuthenticator; tracker: LastUsedTracker } {
  const tracker = new LastUsedTracker({ store: s, logger: silentLogger, autoFlush: false });
  const throttle = new FailedAuthThrottle({
    maxAttempts: options.maxAttempts ?? 1000,
    perMs: 60_000,
    blockForMs: 60_000,
    clock,
    logger: silentLogger,
    redis: options.redisClient ? { client: options.redisClient, prefix: PREFIX } : undefined,
  });
  const auth = new KeyAuthenticator({ store: s, clock, logger: silentLogger, cacheTtlMs: 30_000, negativeCacheTtlMs: 5_000, throttle, lastUsed: tracker });
  closers.push(() => auth.close());
  return { auth, tracker };
}

const req = (key: string, agentId = 'support', clientIp = '198.51.100.7') => ({ authorization: `Bearer ${key}`, agentId, clientIp });

describe('RedisKeyStore', () => {
  it('creates, finds, lists, revokes and touches records under the documented keys', async () => {
    const s = await store(false);
    const service = new KeyService({ store: s, config: testConfig, clock: new ManualClock(Date.parse('2024-06-01T00:00:00.000Z')) });
    const a = await service.createKey({ account: 'acme', plan: 'pro', agents: ['support', 'sales'], name: 'first', expiresInMs: 3_600_000 });
    const b = await service.createKey({ account: 'globex', plan: 'starter', agents: ['support'] });
    expect(await s.findByHash(a.record.hash)).toEqual(a.record);
    expect(await s.findById(b.record.keyId)).toEqual(b.record);
    expect(await s.findByHash(generateApiKey().hash)).toBeUndefined();
    expect(await s.findById('key_0000000000000000')).toBeUndefined();
    expect((await collectKeys(s)).map((r) => r.keyId).sort()).toEqual([a.record.keyId, b.record.keyId].sort());
    expect(await collectKeys(s, { account: 'acme' })).toEqual([a.record]);
    expect(await collectKeys(s, { account: 'nobody' })).toEqual([]);

    expect(await admin.type(`{${PREFIX}keys}:key:${a.record.hash}`)).toBe('hash');
    expect(await admin.get(`{${PREFIX}keys}:keyid:${a.record.keyId}`)).toBe(a.record.hash);
    expect(await admin.zrange(`{${PREFIX}keys}:ix:account:acme`, 0, -1)).toEqual([`${String(Date.parse(a.record.createdAt)).padStart(15, '0')}:${a.record.keyId}`]);
    expect(await admin.zcard(`{${PREFIX}keys}:ix:all`)).toBe(2);

    await expect(s.create(a.record)).rejects.toBeInstanceOf(KeyConflictError);
    await expect(s.create({ ...a.record, hash: generateApiKey().hash })).rejects.toBeInstanceOf(KeyConflictError);

    const revoked = await s.revoke(a.record.keyId, '2024-06-01T01:00:00.000Z');
    expect(revoked).toEqual({ ...a.record, revokedAt: '2024-06-01T01:00:00.000Z' });
    expect((await s.revoke(a.record.keyId, '2024-06-01T02:00:00.000Z'))?.revokedAt).toBe('2024-06-01T01:00:00.000Z');
    expect(await s.revoke('key_0000000000000000', '2024-06-01T02:00:00.000Z')).toBeUndefined();

    const ghost = generateApiKey().hash;
    await s.touchLastUsed([
      { hash: b.record.hash, atIso: '2024-06-01T03:00:00.000Z' },
      { hash: ghost, atIso: '2024-06-01T03:00:00.000Z' },
    ]);
    await s.touchLastUsed([{ hash: b.record.hash, atIso: '2024-06-01T02:00:00.000Z' }]);
    expect((await s.findById(b.record.keyId))?.lastUsedAt).toBe('2024-06-01T03:00:00.000Z');
    expect(await admin.exists(`{${PREFIX}keys}:key:${ghost}`)).toBe(0);
  });

  it('revocation reaches a second gateway instance through pub/sub', async () => {
    const cli = await store(false);
    const gw1 = await store(true);
    const gw2 = await store(true);
    const { rawKey, record } = await new KeyService({ store: cli, config: testConfig }).createKey({ account: 'acme', plan: 'pro', agents: ['support'] });
    await invalidationDelivered();
    // A clock that does not move: no cached entry can expire, so only an invalidation can
    // change an answer (the design's 1 s is a quiet machine's; the wait is a condition).
    const stopped = new ManualClock();
    const a1 = authenticator(gw1, stopped).auth;
    const a2 = authenticator(gw2, stopped).auth;
    await a1.authenticate(req(rawKey));
    await a2.authenticate(req(rawKey));
    // both now answer from their caches, so only an invalidation can change that
    expect(a2.cache.get(record.hash)).toBeDefined();
    await new KeyService({ store: cli, config: testConfig }).revokeKey(record.keyId);
    for (const a of [a1, a2]) {
      await waitFor('the revocation to reach this authenticator', async () => (await a.authenticate(req(rawKey)).then(() => '', (e: GatewayError) => e.type)) === 'revoked_api_key', 20_000, 10);
    }
  });

  it('keeps cached keys working while Redis is down, answers 503 for unknown keys, and clears the cache on reconnect', async () => {
    const gw = await store(true);
    const clock = new ManualClock();
    const { rawKey } = await new KeyService({ store: gw, config: testConfig, clock }).createKey({ account: 'acme', plan: 'pro', agents: ['support'] });
    await invalidationDelivered();
    const { auth } = authenticator(gw, clock);
    await auth.authenticate(req(rawKey));
    await redis.stop({ hard: true });
    clock.advance(5 * 60_000); // far past the cache TTL
    await expect(auth.authenticate(req(rawKey))).resolves.toMatchObject({ account: 'acme' });
    // Answered while Redis is still down (it restarts only below): not held until it returns.
    const unknown = await gatewayErrorOf(auth.authenticate(req(generateApiKey().rawKey)));
    expect(unknown.type).toBe('store_unavailable');
    expect(unknown.retryAfterSeconds).toBe(1);
    await expect(gw.findByHash(generateApiKey().hash)).rejects.toBeInstanceOf(StoreUnavailableError);
    // Back to a time where the cached entry is fresh: only a cache clear forces a lookup.
    clock.advance(-5 * 60_000 + 1_000);
    await expect(auth.authenticate(req(rawKey))).resolves.toMatchObject({ account: 'acme' });
    // Redis comes back empty: the subscriber's reconnect clears the cache (messages may have
    // been missed), so the key is looked up again and is now unknown.
    await redis.start();
    await waitFor('the key to be unknown after the reconnect', async () => (await auth.authenticate(req(rawKey)).then(() => '', (e: GatewayError) => e.type)) === 'invalid_api_key', 8_000, 100);
  });

  it('shares the failed-attempt count across instances; blocked addresses get 429 before any lookup', async () => {
    const clock = systemClock;
    const client1 = new Redis(redis.url, { maxRetriesPerRequest: 1, commandTimeout: 200 });
    const client2 = new Redis(redis.url, { maxRetriesPerRequest: 1, commandTimeout: 200 });
    closers.push(async () => {
      client1.disconnect();
      client2.disconnect();
    });
    const s1 = new SpyStore(await store(false));
    const s2 = new SpyStore(await store(false));
    const { rawKey } = await new KeyService({ store: s1, config: testConfig }).createKey({ account: 'acme', plan: 'pro', agents: ['support'] });
    const a1 = authenticator(s1, clock, { maxAttempts: 3, redisClient: client1 }).auth;
    const a2 = authenticator(s2, clock, { maxAttempts: 3, redisClient: client2 }).auth;
    for (let i = 0; i < 3; i++) expect((await gatewayErrorOf(a1.authenticate(req(generateApiKey().rawKey)))).type).toBe('invalid_api_key');
    const blocked = await gatewayErrorOf(a2.authenticate(req(rawKey)));
    expect(blocked.type).toBe('rate_limit_exceeded');
    expect(blocked.retryAfterSeconds).toBeGreaterThanOrEqual(59);
    expect(s2.findByHashCalls).toBe(0);
    await expect(a2.authenticate(req(rawKey, 'support', '198.51.100.8'))).resolves.toBeDefined();
  });

  it('falls back to the in-memory throttle when Redis errors', async () => {
    const client = new Redis(redis.url, { maxRetriesPerRequest: 1, commandTimeout: 200 });
    client.on('error', () => {});
    closers.push(async () => client.disconnect());
    const s = await store(false);
    const { auth } = authenticator(s, systemClock, { maxAttempts: 2, redisClient: client });
    const errorsBefore = await redisErrorCount('authfail');
    await redis.stop({ hard: true });
    const bad = generateApiKey().rawKey.slice(0, -1) + '!';
    for (let i = 0; i < 2; i++) expect((await gatewayErrorOf(auth.authenticate(req(bad)))).type).toBe('invalid_api_key');
    expect((await gatewayErrorOf(auth.authenticate(req(bad)))).type).toBe('rate_limit_exceeded');
    const errorsAfter = await redisErrorCount('authfail');
    await redis.start();
    // Every counter call that Redis failed was answered in memory, and counted.
    expect(errorsAfter).toBeGreaterThanOrEqual(errorsBefore + 2);
  });

  it('never stores the raw key: no Redis key or value contains it', async () => {
    const s = await store(true);
    const created = await Promise.all(
      Array.from({ length: 3 }, (_, i) => new KeyService({ store: s, config: testConfig }).createKey({ account: `acct${i}`, plan: 'pro', agents: ['support'], name: `n${i}` })),
    );
    const client = new Redis(redis.url, { maxRetriesPerRequest: 1 });
    closers.push(async () => client.disconnect());
    const { auth, tracker } = authenticator(s, systemClock, { maxAttempts: 2, redisClient: client });
    for (const { rawKey } of created) await auth.authenticate(req(rawKey));
    await gatewayErrorOf(auth.authenticate(req(generateApiKey().rawKey)));
    await tracker.flush();
    let cursor = '0';
    const dump: string[] = [];
    do {
      const [next, keys] = await admin.scan(cursor, 'COUNT', 100);
      cursor = next;
      for (const key of keys) {
        dump.push(key);
        const type = await admin.type(key);
        if (type === 'string') dump.push(String(await admin.get(key)));
        else if (type === 'hash') dump.push(JSON.stringify(await admin.hgetall(key)));
        else if (type === 'set') dump.push(JSON.stringify(await admin.smembers(key)));
        else dump.push((await admin.dumpBuffer(key))?.toString('latin1') ?? '');
      }
    } while (cursor !== '0');
    const everything = dump.join('\n');
    expect(everything).toContain(created[0]!.record.hash);
    expect(everything).toContain('last_used_at');
    for (const { rawKey } of created) {
      expect(everything).not.toContain(rawKey);
      expect(everything).not.toContain(rawKey.slice(3, 35));
    }
  });
});

/**
 * Creating a key publishes an invalidation for its hash; a subscribed store receives it a
 * moment later. Tests that fill a cache right after creating a key let it arrive first, so
 * it cannot empty the cache they then rely on.
 */
function invalidationDelivered(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 200));
}
