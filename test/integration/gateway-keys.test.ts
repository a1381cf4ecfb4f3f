// Issue 3 (API keys) proven through HTTP on a real port, for both key stores: every 401
// type with its envelope and WWW-Authenticate, the checksum rejection that never reaches the
// store, expiry at the millisecond, revocation, store outage (Redis), the failed-attempt
// throttle, and that no raw key ends up in logs, audit records, the upstream or the store.
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_KEY_PATTERN, BASE62_ALPHABET, generateApiKey, hashApiKey, parseApiKey } from '../../src/keys/key-format.js';
import { KeyService } from '../../src/keys/key-service.js';
import type { KeyStore } from '../../src/keys/key-store.js';
import { createRedisClient, type RedisClient } from '../../src/redis/redis-client.js';
import { ManualClock } from '../../src/clock.js';
import { silentLogger } from '../../src/logger.js';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { postChat, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { metricsText, metricValue } from '../helpers/metrics-text.js';
import { dumpRedis } from '../helpers/redis-dump.js';

const SUPPORT = '/agents/support/api/v1/chat';
const SALES = '/agents/sales/api/v1/chat';
const PREFIX = 'gwkeys:';
const CACHE_TTL_MS = 30_000;
/** Any string of the key's shape, anywhere in a text. */
const ANY_KEY = /ha_[0-9A-Za-z]{38}/;
/** Changes one secret character to another base62 one: same shape, wrong checksum. */
function withBadChecksum(rawKey: string): string {
  const i = 10;
  const current = BASE62_ALPHABET.indexOf(rawKey[i]!);
  const bad = rawKey.slice(0, i) + BASE62_ALPHABET[(current + 1) % 62] + rawKey.slice(i + 1);
  expect(API_KEY_PATTERN.test(bad)).toBe(true);
  expect(parseApiKey(bad)).toBe(false);
  return bad;
}

interface ErrorEnvelope {
  error: { type: string; message: string; request_id: string };
}

async function expectError(response: Response, status: number, type: string, label = ''): Promise<void> {
  const text = await response.text();
  expect(response.status, `${label} ${text}`).toBe(status);
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  const body = JSON.parse(text) as ErrorEnvelope;
  expect(Object.keys(body)).toEqual(['error']);
  expect(body.error.type).toBe(type);
  expect(body.error.message.length).toBeGreaterThan(0);
  expect(body.error.request_id).toBe(response.headers.get('x-request-id'));
  if (status === 401) expect(response.headers.get('www-authenticate')).toBe('Bearer');
  else expect(response.headers.get('www-authenticate')).toBeNull();
  if (status === 429 || status === 503) expect(response.headers.get('retry-after')).toMatch(/^[1-9][0-9]*$/);
}

async function scrapedValue(gateway: TestGateway, series: string): Promise<number> {
  return metricValue(await metricsText(gateway.adminUrl), series, 0);
}

/** /readyz answers 200 once the gateway's Redis connection is up (or at once, embedded). */
function waitUntilReady(gateway: TestGateway): Promise<true> {
  return waitFor('the gateway to be ready', async () => ((await fetch(`${gateway.adminUrl}/readyz`)).status === 200 ? true : undefined), 10_000, 25);
}

let upstream: FakeUpstream;
let redis: TestRedis;
let inspect: RedisClient;

async function inspectReady(): Promise<RedisClient> {
  await waitFor('the inspection client to connect', async () => (inspect.status === 'ready' ? true : undefined), 10_000, 25);
  return inspect;
}

async function hgetallCalls(): Promise<number> {
  const info = await (await inspectReady()).info('commandstats');
  const match = /cmdstat_hgetall:calls=(\d+)/.exec(info);
  return match ? Number(match[1]) : 0;
}

beforeAll(async () => {
  [upstream, redis] = await Promise.all([startFakeUpstream(), startRedis({ controllable: true })]);
  inspect = createRedisClient({ url: redis.url, prefix: PREFIX, commandTimeoutMs: 2_000 }, silentLogger, 'test-inspect');
});

afterAll(async () => {
  inspect?.disconnect();
  await upstream?.close();
  await redis?.close();
});

describe.each(['file', 'redis'] as const)('keys.store %s, over HTTP', (store) => {
  const clock = new ManualClock(Date.parse('2025-03-01T12:00:00.000Z'));
  let gateway: TestGateway;
  let service: KeyService;
  /** Hashes the gateway asked its store for (a spy on the running store instance). */
  const lookups: string[] = [];
  /** Every key-shaped string this block sent, valid or not. */
  const sentKeys = new Set<string>();
  const usedKeyIds = new Set<string>();
  let lastOkRequestId = '';
  // Each test uses addresses of its own (trust_proxy + X-Forwarded-For) so the
  // failed-attempt throttle only sees the attempts the test means it to.
  let addressSeq = 0;
  const nextAddress = () => `${store === 'file' ? '198.51.100' : '203.0.113'}.${++addressSeq}`;

  function gatewayConfig(): Record<string, unknown> {
    return {
      listen: { trust_proxy: true },
      keys: { store, cache_ttl: `${CACHE_TTL_MS}ms`, negative_cache_ttl: '5s', failed_auth: { max_attempts: 3, per: '1m', block_for: '1m' } },
      ...(store === 'redis' ? { redis: { prefix: PREFIX, command_timeout: '500ms' } } : {}),
      log: { level: 'info' },
    };
  }

  function spyOnLookups(target: KeyStore, into: string[]): void {
    const find = target.findByHash.bind(target);
    target.findByHash = (hash: string) => {
      into.push(hash);
      return find(hash);
    };
  }

  async function send(key: string | undefined, address: string, options: { path?: string; authorization?: string; target?: TestGateway } = {}): Promise<Response> {
    const headers: Record<string, string> = { 'x-forwarded-for': address };
    if (options.authorization !== undefined) headers.authorization = options.authorization;
    for (const match of `${key ?? ''} ${options.authorization ?? ''}`.matchAll(new RegExp(ANY_KEY.source, 'g'))) sentKeys.add(match[0]);
    const target = options.target ?? gateway;
    const response = await postChat(target.url, options.path ?? SUPPORT, key, { message: 'hi' }, headers);
    if (response.status === 200 && target === gateway) lastOkRequestId = response.headers.get('x-request-id') ?? '';
    return response;
  }

  async function expectOk(response: Response): Promise<void> {
    const text = await response.text();
    expect(response.status, text).toBe(200);
    expect(JSON.parse(text)).toHaveProperty('response');
  }

  async function createKey(input: { agents?: string[]; expiresInMs?: number } = {}): Promise<{ rawKey: string; keyId: string; hash: string }> {
    const created = await gateway.createKey({ account: `acct-${store}`, agents: input.agents ?? ['support', 'sales'], expiresInMs: input.expiresInMs });
    usedKeyIds.add(created.keyId);
    return { ...created, hash: hashApiKey(created.rawKey) };
  }

  beforeAll(async () => {
    if (store === 'redis') await redis.flush();
    gateway = await startTestGateway({
      agents: { support: upstream.baseUrl, sales: upstream.baseUrl },
      config: gatewayConfig(),
      redisUrl: store === 'redis' ? redis.url : undefined,
      clock,
    });
    expect(gateway.running.keyStore.kind).toBe(store);
    await waitUntilReady(gateway);
    service = new KeyService({ store: gateway.running.keyStore, config: gateway.config, clock });
    spyOnLookups(gateway.running.keyStore, lookups);
  });

  afterAll(async () => {
    await gateway?.close();
  });

  it('answers missing_api_key for no header, a blank one, another scheme and a bare "Bearer"; these do not count as failed attempts', async () => {
    const { rawKey } = await createKey();
    const address = nextAddress();
    await expectError(await send(undefined, address), 401, 'missing_api_key');
    await expectError(await send(undefined, address, { authorization: '' }), 401, 'missing_api_key');
    await expectError(await send(undefined, address, { authorization: '   ' }), 401, 'missing_api_key');
    await expectError(await send(undefined, address, { authorization: `Basic ${Buffer.from('u:p').toString('base64')}` }), 401, 'missing_api_key');
    await expectError(await send(undefined, address, { authorization: 'Bearer' }), 401, 'missing_api_key');
    await expectError(await send(undefined, address, { authorization: 'Bearer   ' }), 401, 'missing_api_key');
    // Six rejections from one address, twice max_attempts: a valid key still gets through.
    await expectOk(await send(rawKey, address));
  });

  it('answers invalid_api_key for garbage, wrong checksums and unknown keys; a bad checksum never reaches the store', async () => {
    const { rawKey } = await createKey();
    for (const garbage of ['not-a-key', 'ha_', `${rawKey}x`, rawKey.slice(0, -1), `"${rawKey}"`, `${rawKey} extra`, rawKey.replace('ha_', 'hb_')]) {
      const lookupsBefore = lookups.length;
      await expectError(await send(undefined, nextAddress(), { authorization: `Bearer ${garbage}` }), 401, 'invalid_api_key');
      expect(lookups.length, garbage).toBe(lookupsBefore);
    }

    const missesBefore = await scrapedValue(gateway, 'agentgw_key_cache_total{result="miss"}');
    const hgetallBefore = store === 'redis' ? await hgetallCalls() : 0;
    const lookupsBefore = lookups.length;
    // Wrong checksums of a real key and of a made-up one: same shape, rejected offline.
    const badOfReal = withBadChecksum(rawKey);
    const badOfRandom = withBadChecksum(generateApiKey().rawKey);
    for (const bad of [badOfReal, badOfRandom]) await expectError(await send(bad, nextAddress()), 401, 'invalid_api_key');
    expect(lookups.length).toBe(lookupsBefore);
    expect(await scrapedValue(gateway, 'agentgw_key_cache_total{result="miss"}')).toBe(missesBefore);
    if (store === 'redis') expect(await hgetallCalls()).toBe(hgetallBefore);

    // The control: a well-formed key the store does not know is looked up, once, and the
    // same counters move — so the checks above would have seen a store call.
    const unknown = generateApiKey().rawKey;
    await expectError(await send(unknown, nextAddress()), 401, 'invalid_api_key');
    expect(lookups.slice(lookupsBefore)).toEqual([hashApiKey(unknown)]);
    expect(await scrapedValue(gateway, 'agentgw_key_cache_total{result="miss"}')).toBe(missesBefore + 1);
    if (store === 'redis') expect(await hgetallCalls()).toBe(hgetallBefore + 1);
    // Asked again within negative_cache_ttl: answered from the negative cache.
    await expectError(await send(unknown, nextAddress()), 401, 'invalid_api_key');
    expect(lookups.length).toBe(lookupsBefore + 1);
  });

  it('accepts a key up to expires_at − 1 ms and answers expired_api_key from expires_at on (cached and uncached)', async () => {
    const warm = await createKey({ expiresInMs: 60_000 });
    const cold = await createKey({ expiresInMs: 60_000 });
    const expiresAtMs = clock.now() + 60_000;
    expect((await service.showKey(warm.keyId)).expiresAt).toBe(new Date(expiresAtMs).toISOString());

    clock.set(expiresAtMs - 1);
    await expectOk(await send(warm.rawKey, nextAddress()));
    const lookupsBefore = lookups.length;
    clock.set(expiresAtMs);
    // Served from the cache (no lookup), yet expired: expiry is checked on every request.
    await expectError(await send(warm.rawKey, nextAddress()), 401, 'expired_api_key');
    expect(lookups.length).toBe(lookupsBefore);
    // First seen exactly at expires_at: looked up, and expired.
    await expectError(await send(cold.rawKey, nextAddress()), 401, 'expired_api_key');
    expect(lookups.slice(lookupsBefore)).toEqual([cold.hash]);
    clock.advance(3_600_000);
    await expectError(await send(warm.rawKey, nextAddress()), 401, 'expired_api_key');
  });

  it('answers revoked_api_key for a revoked key, cached or not, within 1 s of the revocation', async () => {
    const cached = await createKey();
    const uncached = await createKey();
    await expectOk(await send(cached.rawKey, nextAddress()));
    await expectOk(await send(cached.rawKey, nextAddress()));

    await service.revokeKey(cached.keyId);
    await service.revokeKey(uncached.keyId);
    const revokedAt = Date.now();
    // The cache TTL is 30 s from the first request above: a refusal within 15 s of the
    // revocation can only be the invalidation's (pub/sub or file watch). The design's 1 s is a
    // quiet machine's; this waits for the refusal as a condition, far inside the TTL.
    let response = await send(cached.rawKey, nextAddress());
    while (response.status === 200 && Date.now() - revokedAt < 15_000) {
      await response.body?.cancel();
      await sleep(20);
      response = await send(cached.rawKey, nextAddress());
    }
    await expectError(response, 401, 'revoked_api_key', `${Date.now() - revokedAt} ms after the revocation:`);
    await expectError(await send(uncached.rawKey, nextAddress()), 401, 'revoked_api_key');
  });

  it('answers agent_not_allowed for an agent outside the key scope, and it does not count as a failed attempt', async () => {
    const { rawKey } = await createKey({ agents: ['sales'] });
    const address = nextAddress();
    for (let i = 0; i < 5; i++) await expectError(await send(rawKey, address, { path: SUPPORT }), 401, 'agent_not_allowed');
    await expectOk(await send(rawKey, address, { path: SALES }));
  });

  it('blocks an address after max_attempts failed keys: the next request, even with a valid key, gets 429 before any lookup', async () => {
    const fresh = await createKey();
    const cached = await createKey();
    await expectOk(await send(cached.rawKey, nextAddress()));
    const blocked = nextAddress();

    // invalid, unknown, expired: three kinds of failed attempt, max_attempts = 3.
    const expired = await createKey({ expiresInMs: 1 });
    clock.advance(1);
    await expectError(await send('ha_nonsense', blocked), 401, 'invalid_api_key');
    await expectError(await send(generateApiKey().rawKey, blocked), 401, 'invalid_api_key');
    // The attempt that uses the last one is still answered (401); the block starts after it.
    await expectError(await send(expired.rawKey, blocked), 401, 'expired_api_key');

    const lookupsBefore = lookups.length;
    for (const key of [fresh.rawKey, cached.rawKey, generateApiKey().rawKey, 'ha_nonsense']) {
      const response = await send(key, blocked);
      await expectError(response, 429, 'rate_limit_exceeded', `${key === fresh.rawKey ? 'fresh' : key === cached.rawKey ? 'cached' : key} ${gateway.logs.slice(-3).join('')}`);
      const retryAfter = Number(response.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(60);
    }
    expect(lookups.length).toBe(lookupsBefore);

    // Only that address: the same never-used key works from another one (and is looked up).
    await expectOk(await send(fresh.rawKey, nextAddress()));
    expect(lookups.slice(lookupsBefore)).toEqual([fresh.hash]);

    if (store === 'redis') {
      // The counter is shared: another instance on the same Redis refuses the address
      // before its first lookup, though it has never seen a failure from it.
      const other = await startTestGateway({ agents: { support: upstream.baseUrl, sales: upstream.baseUrl }, config: gatewayConfig(), redisUrl: redis.url });
      try {
        // Until its Redis connection is up, the throttle falls back to its in-memory insurance limiter.
        await waitUntilReady(other);
        const otherLookups: string[] = [];
        spyOnLookups(other.running.keyStore, otherLookups);
        const untouched = await createKey();
        await expectError(await send(untouched.rawKey, blocked, { target: other }), 429, 'rate_limit_exceeded', `other ${other.logs.join('')}`);
        expect(otherLookups).toEqual([]);
        await expectOk(await send(untouched.rawKey, nextAddress(), { target: other }));
        expect(otherLookups).toEqual([untouched.hash]);
        expect(other.logs.join('')).not.toMatch(ANY_KEY);
      } finally {
        await other.close();
      }
    }
  });

  it('keeps no raw key in the store, only its SHA-256', async () => {
    const { rawKey, keyId, hash } = await createKey();
    await expectOk(await send(rawKey, nextAddress()));
    let text: string;
    if (store === 'redis') {
      const dump = await dumpRedis(await inspectReady());
      expect(dump.names).toContain(`{${PREFIX}keys}:key:${hash}`);
      text = dump.text;
    } else {
      const files = (await readdir(gateway.dir)).filter((name) => name.startsWith('keys'));
      expect(files).toContain('keys.json');
      text = (await Promise.all(files.map((name) => readFile(join(gateway.dir, name), 'utf8').catch(() => '')))).join('\n');
    }
    // Positive controls: the dump holds the records this block made.
    expect(text).toContain(hash);
    expect(text).toContain(keyId);
    expect(sentKeys.size).toBeGreaterThan(10);
    for (const sent of sentKeys) {
      if (!API_KEY_PATTERN.test(sent)) continue;
      expect(text).not.toContain(sent);
      expect(text).not.toContain(sent.slice(3, 35));
    }
    expect(text).not.toMatch(ANY_KEY);
  });

  if (store === 'redis') {
    it('with Redis down: a cached key keeps working (stale past its TTL), any other key gets 503 store_unavailable; with Redis back, new keys work', async () => {
      const cached = await createKey();
      const neverUsed = await createKey();
      await expectOk(await send(cached.rawKey, nextAddress()));
      await redis.stop();
      try {
        await expectOk(await send(cached.rawKey, nextAddress()));
        clock.advance(CACHE_TTL_MS + 1);
        const staleBefore = await scrapedValue(gateway, 'agentgw_key_cache_total{result="stale_hit"}');
        await expectOk(await send(cached.rawKey, nextAddress()));
        await expectOk(await send(cached.rawKey, nextAddress()));
        expect(await scrapedValue(gateway, 'agentgw_key_cache_total{result="stale_hit"}')).toBe(staleBefore + 2);

        for (const key of [generateApiKey().rawKey, neverUsed.rawKey]) {
          const response = await send(key, nextAddress());
          await expectError(response, 503, 'store_unavailable');
          expect(response.headers.get('retry-after')).toBe('1');
        }
        // Still offline: a bad checksum needs no store to be refused.
        await expectError(await send(withBadChecksum(cached.rawKey), nextAddress()), 401, 'invalid_api_key');
      } finally {
        await redis.start();
      }

      const created = await waitFor('the key store to reconnect', () => gateway.createKey({ account: 'after-outage', agents: ['support'] }), 10_000, 100);
      usedKeyIds.add(created.keyId);
      await expectOk(await send(created.rawKey, nextAddress()));
      await expectError(await send(generateApiKey().rawKey, nextAddress()), 401, 'invalid_api_key');
    });
  }

  it('never writes a raw key to the logs, the audit file or the upstream', async () => {
    const auditPath = join(gateway.dir, 'audit.jsonl');
    const audit = await waitFor('the audit file to hold the last accepted request', async () => {
      const text = await readFile(auditPath, 'utf8');
      return text.includes(lastOkRequestId) ? text : undefined;
    }, 5_000, 25);
    const records = audit.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    // Positive controls: records name the keys by key_id, and logs cover rejected requests too.
    expect(records.some((record) => usedKeyIds.has(String(record.key_id)))).toBe(true);
    const logs = gateway.logs.join('');
    expect(logs).toContain('"error":"invalid_api_key"');
    expect(logs).toContain('"error":"rate_limit_exceeded"');
    expect([...usedKeyIds].some((keyId) => logs.includes(keyId))).toBe(true);

    const seen = upstream.requests.map((request) => JSON.stringify(request.headers) + request.body.toString('utf8')).join('\n');
    expect(upstream.requests.length).toBeGreaterThan(5);
    expect(upstream.requests.every((request) => request.headers.authorization === undefined)).toBe(true);

    for (const [where, text] of [['logs', logs], ['audit', audit], ['upstream', seen]] as const) {
      for (const sent of sentKeys) {
        if (!API_KEY_PATTERN.test(sent)) continue;
        expect(text, where).not.toContain(sent);
        expect(text, where).not.toContain(sent.slice(3, 35));
      }
      expect(text, where).not.toMatch(ANY_KEY);
    }
  });
});
