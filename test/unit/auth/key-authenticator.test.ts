import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { FailedAuthThrottle } from '../../../src/auth/failed-auth-throttle.js';
import type { FileKeyStore } from '../../../src/keys/file-key-store.js';
import { KeyAuthenticator, createKeyAuthenticator } from '../../../src/auth/key-authenticator.js';
import { parseConfig } from '../../../src/config/load-config.js';
import { generateApiKey } from '../../../src/keys/key-format.js';
import { KeyService } from '../../../src/keys/key-service.js';
import { LastUsedTracker } from '../../../src/auth/last-used-tracker.js';
import { ManualClock } from '../../../src/clock.js';
import { silentLogger } from '../../../src/logger.js';
import { metrics } from '../../../src/metrics/metrics.js';
import { openFileStore, SpyStore, testConfig } from '../../helpers/key-stores.js';
import { tempDir } from '../../helpers/files.js';
import { gatewayErrorOf } from '../../helpers/gateway-error.js';

const IP = '192.0.2.10';
let cleanup: () => Promise<void>;
let fileStore: FileKeyStore;
let store: SpyStore;
let clock: ManualClock;
let service: KeyService;
let tracker: LastUsedTracker;
let auth: KeyAuthenticator;

function build(options: { maxAttempts?: number } = {}): KeyAuthenticator {
  tracker = new LastUsedTracker({ store, logger: silentLogger, autoFlush: false });
  const throttle = new FailedAuthThrottle({ maxAttempts: options.maxAttempts ?? 1000, perMs: 60_000, blockForMs: 60_000, clock, logger: silentLogger });
  return new KeyAuthenticator({ store, clock, logger: silentLogger, cacheTtlMs: 30_000, negativeCacheTtlMs: 5_000, throttle, lastUsed: tracker });
}

beforeEach(async () => {
  const tmp = await tempDir();
  cleanup = tmp.cleanup;
  fileStore = await openFileStore(join(tmp.dir, 'keys.json'));
  store = new SpyStore(fileStore);
  clock = new ManualClock(Date.parse('2024-06-01T12:00:00.000Z'));
  service = new KeyService({ store: fileStore, config: testConfig, clock });
  auth = build();
});

afterEach(async () => {
  await auth.close();
  await fileStore.close();
  await cleanup();
});

const bearer = (key: string) => `Bearer ${key}`;

async function counterValue(counter: typeof metrics.keyCache | typeof metrics.authFailures, label: string): Promise<number> {
  const data = await counter.get();
  return data.values.find((v) => Object.values(v.labels).includes(label))?.value ?? 0;
}

describe('KeyAuthenticator', () => {
  it('accepts a valid key and answers later requests from the cache without a store call', async () => {
    const { rawKey, record } = await service.createKey({ account: 'acme', plan: 'pro', agents: ['support'] });
    const hitsBefore = await counterValue(metrics.keyCache, 'hit');
    const result = await auth.authenticate({ authorization: bearer(rawKey), agentId: 'support', clientIp: IP });
    expect(result).toEqual({ keyId: record.keyId, account: 'acme', plan: 'pro', limits: null, tools: null, mcp: null });
    expect(store.findByHashCalls).toBe(1);
    for (let i = 0; i < 5; i++) await auth.authenticate({ authorization: `  bearer   ${rawKey} `, agentId: 'support', clientIp: IP });
    expect(store.findByHashCalls).toBe(1);
    expect((await counterValue(metrics.keyCache, 'hit')) - hitsBefore).toBe(5);
    // after the cache TTL the store is asked again
    clock.advance(30_000);
    await auth.authenticate({ authorization: bearer(rawKey), agentId: 'support', clientIp: IP });
    expect(store.findByHashCalls).toBe(2);
  });

  it('on one connection, a key presented again is recognised without re-hashing, and every check still runs', async () => {
    const { rawKey, record } = await service.createKey({ account: 'acme', plan: 'pro', agents: ['support'] });
    const other = await service.createKey({ account: 'globex', plan: 'pro', agents: ['support'] });
    const connection = {};
    const on = (key: string, agentId = 'support') => auth.authenticate({ authorization: bearer(key), agentId, clientIp: IP, connection });
    await expect(on(rawKey)).resolves.toMatchObject({ keyId: record.keyId });
    await expect(on(rawKey)).resolves.toMatchObject({ keyId: record.keyId });
    // Another key on the same connection is its own key, not the remembered one.
    await expect(on(other.rawKey)).resolves.toMatchObject({ keyId: other.record.keyId, account: 'globex' });
    await expect(on(rawKey)).resolves.toMatchObject({ keyId: record.keyId });
    // A key one character off (bad checksum) is rejected, not mistaken for the remembered one.
    const badChecksum = rawKey.slice(0, -1) + (rawKey.at(-1) === 'a' ? 'b' : 'a');
    expect((await gatewayErrorOf(on(badChecksum))).type).toBe('invalid_api_key');
    // Scope, revocation and expiry are checked per request, remembered key or not.
    expect((await gatewayErrorOf(on(rawKey, 'billing'))).type).toBe('agent_not_allowed');
    await service.revokeKey(record.keyId);
    expect((await gatewayErrorOf(on(rawKey))).type).toBe('revoked_api_key');
    expect((await gatewayErrorOf(auth.authenticate({ authorization: bearer(rawKey), agentId: 'support', clientIp: IP, connection: {} }))).type).toBe('revoked_api_key');
    // Each key looked up once, and the revoked one again after the revocation dropped it from the cache.
    expect(store.findByHashCalls).toBe(3);
  });

  it('answers missing_api_key without a header or without the Bearer scheme', async () => {
    for (const authorization of [undefined, '', 'Basic abc', 'Bearer ', 'ha_x']) {
      const error = await gatewayErrorOf(auth.authenticate({ authorization, agentId: 'support', clientIp: IP }));
      expect(error.type).toBe('missing_api_key');
      expect(error.status).toBe(401);
    }
    expect(store.findByHashCalls).toBe(0);
  });

  it('rejects malformed keys and bad checksums with invalid_api_key and no store call', async () => {
    const { rawKey } = await service.createKey({ account: 'acme', plan: 'pro', agents: ['support'] });
    const tampered = rawKey.slice(0, 10) + (rawKey[10] === 'a' ? 'b' : 'a') + rawKey.slice(11);
    const badChecksum = rawKey.slice(0, -1) + (rawKey.at(-1) === 'a' ? 'b' : 'a');
    for (const key of [tampered, badChecksum, 'ha_short', 'sk_' + rawKey.slice(3), `${rawKey} x`]) {
      const error = await gatewayErrorOf(auth.authenticate({ authorization: bearer(key), agentId: 'support', clientIp: IP }));
      expect(error.type).toBe('invalid_api_key');
    }
    expect(store.findByHashCalls).toBe(0);
  });

  it('looks an unknown well-formed key up once, then answers from the negative cache until its TTL', async () => {
    const { rawKey } = generateApiKey();
    const negBefore = await counterValue(metrics.keyCache, 'negative_hit');
    for (let i = 0; i < 3; i++) {
      expect((await gatewayErrorOf(auth.authenticate({ authorization: bearer(rawKey), agentId: 'support', clientIp: IP }))).type).toBe('invalid_api_key');
    }
    expect(store.findByHashCalls).toBe(1);
    expect((await counterValue(metrics.keyCache, 'negative_hit')) - negBefore).toBe(2);
    clock.advance(5_000);
    await gatewayErrorOf(auth.authenticate({ authorization: bearer(rawKey), agentId: 'support', clientIp: IP }));
    expect(store.findByHashCalls).toBe(2);
  });

  it('answers revoked_api_key once the store signals the revocation (no TTL wait)', async () => {
    const { rawKey, record } = await service.createKey({ account: 'acme', plan: 'pro', agents: ['support'] });
    await auth.authenticate({ authorization: bearer(rawKey), agentId: 'support', clientIp: IP });
    await service.revokeKey(record.keyId);
    const error = await gatewayErrorOf(auth.authenticate({ authorization: bearer(rawKey), agentId: 'support', clientIp: IP }));
    expect(error.type).toBe('revoked_api_key');
    expect(error.status).toBe(401);
  });

  it('checks expiry against the clock on every request: valid at expires_at - 1 ms, expired at expires_at', async () => {
    const { rawKey, record } = await service.createKey({ account: 'acme', plan: 'pro', agents: ['support'], expiresInMs: 20_000 });
    const expiresAtMs = Date.parse(record.expiresAt!);
    await auth.authenticate({ authorization: bearer(rawKey), agentId: 'support', clientIp: IP });
    clock.set(expiresAtMs - 1);
    await expect(auth.authenticate({ authorization: bearer(rawKey), agentId: 'support', clientIp: IP })).resolves.toMatchObject({ keyId: record.keyId });
    clock.set(expiresAtMs);
    const error = await gatewayErrorOf(auth.authenticate({ authorization: bearer(rawKey), agentId: 'support', clientIp: IP }));
    expect(error.type).toBe('expired_api_key');
    // decided from the cached entry, not a fresh lookup
    expect(store.findByHashCalls).toBe(1);
  });

  it('answers agent_not_allowed for an agent outside the key scope', async () => {
    const { rawKey } = await service.createKey({ account: 'acme', plan: 'pro', agents: ['support'] });
    const error = await gatewayErrorOf(auth.authenticate({ authorization: bearer(rawKey), agentId: 'sales', clientIp: IP }));
    expect(error.type).toBe('agent_not_allowed');
    expect(error.status).toBe(401);
  });

  it('counts failures per address and answers 429 with Retry-After before any lookup', async () => {
    await auth.close();
    auth = build({ maxAttempts: 3 });
    const { rawKey } = await service.createKey({ account: 'acme', plan: 'pro', agents: ['support'] });
    for (let i = 0; i < 3; i++) {
      const { rawKey: unknown } = generateApiKey();
      expect((await gatewayErrorOf(auth.authenticate({ authorization: bearer(unknown), agentId: 'support', clientIp: IP }))).type).toBe('invalid_api_key');
    }
    const calls = store.findByHashCalls;
    for (const key of [generateApiKey().rawKey, rawKey, 'ha_garbage']) {
      const error = await gatewayErrorOf(auth.authenticate({ authorization: bearer(key), agentId: 'support', clientIp: IP }));
      expect(error.type).toBe('rate_limit_exceeded');
      expect(error.status).toBe(429);
      expect(error.retryAfterSeconds).toBe(60);
    }
    expect(store.findByHashCalls).toBe(calls);
    // another address is not affected
    await expect(auth.authenticate({ authorization: bearer(rawKey), agentId: 'support', clientIp: '192.0.2.11' })).resolves.toBeDefined();
  });

  it('keeps cached keys working while the store is down, even past TTL; unknown keys get 503 store_unavailable', async () => {
    const { rawKey, record } = await service.createKey({ account: 'acme', plan: 'pro', agents: ['support'] });
    await auth.authenticate({ authorization: bearer(rawKey), agentId: 'support', clientIp: IP });
    store.down = true;
    clock.advance(10 * 60_000);
    const staleBefore = await counterValue(metrics.keyCache, 'stale_hit');
    await expect(auth.authenticate({ authorization: bearer(rawKey), agentId: 'support', clientIp: IP })).resolves.toMatchObject({ keyId: record.keyId });
    expect((await counterValue(metrics.keyCache, 'stale_hit')) - staleBefore).toBe(1);
    const unknown = await gatewayErrorOf(auth.authenticate({ authorization: bearer(generateApiKey().rawKey), agentId: 'support', clientIp: IP }));
    expect(unknown.type).toBe('store_unavailable');
    expect(unknown.status).toBe(503);
    expect(unknown.retryAfterSeconds).toBe(1);
    // stale entries still get the expiry and scope checks
    expect((await gatewayErrorOf(auth.authenticate({ authorization: bearer(rawKey), agentId: 'sales', clientIp: IP }))).type).toBe('agent_not_allowed');
    store.down = false;
    await expect(auth.authenticate({ authorization: bearer(rawKey), agentId: 'support', clientIp: IP })).resolves.toBeDefined();
  });

  it('during an outage asks the store again only after a 1 s back-off, and never serves an entry invalidated meanwhile', async () => {
    const { rawKey, record } = await service.createKey({ account: 'acme', plan: 'pro', agents: ['support'] });
    await auth.authenticate({ authorization: bearer(rawKey), agentId: 'support', clientIp: IP });
    store.down = true;
    clock.advance(60_000);
    const staleBefore = await counterValue(metrics.keyCache, 'stale_hit');
    await auth.authenticate({ authorization: bearer(rawKey), agentId: 'support', clientIp: IP });
    const calls = store.findByHashCalls;
    for (let i = 0; i < 5; i++) await auth.authenticate({ authorization: bearer(rawKey), agentId: 'support', clientIp: IP });
    expect(store.findByHashCalls).toBe(calls);
    expect((await counterValue(metrics.keyCache, 'stale_hit')) - staleBefore).toBe(6);
    clock.advance(1_000);
    // the retry finds the store still down, and an invalidation (a revocation seen through
    // pub/sub) arrives meanwhile: the stale entry must not be served
    store.beforeFind = () => auth.cache.invalidate(record.hash);
    const error = await gatewayErrorOf(auth.authenticate({ authorization: bearer(rawKey), agentId: 'support', clientIp: IP }));
    expect(error.type).toBe('store_unavailable');
    expect(store.findByHashCalls).toBe(calls + 1);
  });

  it('after an invalidation of everything asks the store for each key again, and serves it stale while the store does not answer', async () => {
    const { rawKey, record } = await service.createKey({ account: 'acme', plan: 'pro', agents: ['support'] });
    const input = { authorization: bearer(rawKey), agentId: 'support', clientIp: IP };
    await auth.authenticate(input);
    const calls = store.findByHashCalls;
    // A subscriber that reconnected: messages may have been missed.
    store.emitInvalidation('*');
    store.down = true;
    await expect(auth.authenticate(input)).resolves.toMatchObject({ keyId: record.keyId });
    expect(store.findByHashCalls).toBe(calls + 1);
    // The store answers again: what it says now counts (here, a revocation missed meanwhile).
    store.down = false;
    await fileStore.revoke(record.keyId, new Date(clock.now()).toISOString());
    clock.advance(1_000);
    expect((await gatewayErrorOf(auth.authenticate(input))).type).toBe('revoked_api_key');
  });

  it('coalesces concurrent lookups of one key into one store call', async () => {
    const { rawKey } = await service.createKey({ account: 'acme', plan: 'pro', agents: ['support'] });
    await Promise.all(Array.from({ length: 10 }, () => auth.authenticate({ authorization: bearer(rawKey), agentId: 'support', clientIp: IP })));
    expect(store.findByHashCalls).toBe(1);
  });

  it('records last_used_at off the request path, batched', async () => {
    const { rawKey, record } = await service.createKey({ account: 'acme', plan: 'pro', agents: ['support'] });
    await auth.authenticate({ authorization: bearer(rawKey), agentId: 'support', clientIp: IP });
    clock.advance(1_500);
    await auth.authenticate({ authorization: bearer(rawKey), agentId: 'support', clientIp: IP });
    expect((await fileStore.findById(record.keyId))?.lastUsedAt).toBeNull();
    await tracker.flush();
    expect((await fileStore.findById(record.keyId))?.lastUsedAt).toBe(new Date(clock.now()).toISOString());
  });

  it('authenticateNow answers only a fresh cached key that passes every check, counting it like authenticate', async () => {
    await auth.close();
    auth = build({ maxAttempts: 1 });
    const { rawKey, record } = await service.createKey({ account: 'acme', plan: 'pro', agents: ['support'], expiresInMs: 60_000 });
    const input = { authorization: bearer(rawKey), agentId: 'support', clientIp: IP };
    const counts = async () => ({ hit: await counterValue(metrics.keyCache, 'hit'), failures: (await metrics.authFailures.get()).values.reduce((sum, v) => sum + v.value, 0) });

    // Not cached yet: no answer, nothing counted, no store call; authenticate() decides.
    let before = await counts();
    expect(auth.authenticateNow(input)).toBeUndefined();
    expect(await counts()).toEqual(before);
    expect(store.findByHashCalls).toBe(0);
    await auth.authenticate(input);

    // Cached: the key itself (the same object every time), one hit each, last_used noted.
    before = await counts();
    const now = auth.authenticateNow(input);
    expect(now).toEqual({ keyId: record.keyId, account: 'acme', plan: 'pro', limits: null, tools: null, mcp: null });
    expect(auth.authenticateNow(input)).toBe(now);
    expect((await counts()).hit - before.hit).toBe(2);
    await tracker.flush();
    expect((await fileStore.findById(record.keyId))?.lastUsedAt).toBe(new Date(clock.now()).toISOString());

    // Every failing check leaves the decision (and its counting) to authenticate().
    before = await counts();
    expect(auth.authenticateNow({ ...input, agentId: 'sales' })).toBeUndefined();
    expect(auth.authenticateNow({ ...input, authorization: undefined })).toBeUndefined();
    expect(auth.authenticateNow({ ...input, authorization: bearer('ha_garbage') })).toBeUndefined();
    clock.advance(60_000);
    expect(auth.authenticateNow(input)).toBeUndefined();
    expect(await counts()).toEqual(before);
    expect((await gatewayErrorOf(auth.authenticate(input))).type).toBe('expired_api_key');
    // That failure blocked the address (max_attempts 1): a valid cached key is not answered now either.
    const { rawKey: other } = await service.createKey({ account: 'acme', plan: 'pro', agents: ['support'] });
    await auth.authenticate({ ...input, authorization: bearer(other), clientIp: '192.0.2.11' });
    expect(auth.authenticateNow({ ...input, authorization: bearer(other), clientIp: '192.0.2.11' })).toBeDefined();
    expect(auth.authenticateNow({ ...input, authorization: bearer(other) })).toBeUndefined();
    expect((await gatewayErrorOf(auth.authenticate({ ...input, authorization: bearer(other) }))).type).toBe('rate_limit_exceeded');
  });

  it('does not cache a record fetched across an invalidation', async () => {
    const { rawKey, record } = await service.createKey({ account: 'acme', plan: 'pro', agents: ['support'] });
    store.beforeFind = () => auth.cache.invalidate('some-other-hash');
    await auth.authenticate({ authorization: bearer(rawKey), agentId: 'support', clientIp: IP });
    expect(auth.cache.get(record.hash)).toBeUndefined();
  });

  it('counts failures by reason in agentgw_auth_failures_total', async () => {
    const before = await counterValue(metrics.authFailures, 'missing_api_key');
    await gatewayErrorOf(auth.authenticate({ authorization: undefined, agentId: 'support', clientIp: IP }));
    expect((await counterValue(metrics.authFailures, 'missing_api_key')) - before).toBe(1);
  });

  it('createKeyAuthenticator takes TTLs and throttle limits from config.keys', async () => {
    const config = parseConfig(
      {
        agents: { support: { upstream: 'http://127.0.0.1:9/api/v1' } },
        keys: { cache_ttl: '2s', negative_cache_ttl: '1s', failed_auth: { max_attempts: 2, per: '10s', block_for: '7s' } },
      },
      'test',
      {},
    );
    const built = createKeyAuthenticator(config, { store, clock, logger: silentLogger });
    try {
      const { rawKey } = await service.createKey({ account: 'acme', plan: 'pro', agents: ['support'] });
      await built.authenticate({ authorization: bearer(rawKey), agentId: 'support', clientIp: IP });
      clock.advance(1_999);
      await built.authenticate({ authorization: bearer(rawKey), agentId: 'support', clientIp: IP });
      expect(store.findByHashCalls).toBe(1);
      clock.advance(1);
      await built.authenticate({ authorization: bearer(rawKey), agentId: 'support', clientIp: IP });
      expect(store.findByHashCalls).toBe(2);
      for (let i = 0; i < 2; i++) await gatewayErrorOf(built.authenticate({ authorization: bearer('ha_nope'), agentId: 'support', clientIp: IP }));
      const blocked = await gatewayErrorOf(built.authenticate({ authorization: bearer(rawKey), agentId: 'support', clientIp: IP }));
      expect(blocked.type).toBe('rate_limit_exceeded');
      expect(blocked.retryAfterSeconds).toBe(7);
    } finally {
      await built.close();
    }
  });
});
