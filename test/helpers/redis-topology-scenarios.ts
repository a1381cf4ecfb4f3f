// What the Redis Cluster and Sentinel tests prove for each topology, written once: every
// Redis feature through a gateway in process (keys and their invalidation, exact limits,
// the failed-auth throttle, the audit stream and its reader), and a master SIGKILLed under
// load (docs/reliability.md). The test files bring the topology and the way to break it.
import { expect } from 'vitest';
import type { AuditRecord } from '../../src/audit/audit-record.js';
import { spoolPathFor } from '../../src/audit/audit-spool.js';
import { tailAuditRecords } from '../../src/audit/read-audit-records.js';
import { openCliKeyStore } from '../../src/cli/keys.js';
import type { GatewayConfig } from '../../src/config/schema.js';
import { KeyService } from '../../src/keys/key-service.js';
import { silentLogger } from '../../src/logger.js';
import { createRedisClientFactory, type RedisClient } from '../../src/redis/redis-client.js';
import { rateLimitKey } from '../../src/ratelimit/redis-rate-limiter.js';
import { postChat, startTestGateway, type TestGateway } from './gateway.js';
import { waitFor } from './redis-process.js';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

export const CHAT = '/agents/support/api/v1/chat';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A connection for looking into the topology from the test, through the gateway's own factory. */
export function inspectionClient(config: GatewayConfig): RedisClient {
  return createRedisClientFactory(config.redis!, silentLogger).connect('key-store', 'test-inspect');
}

/** Keys made and revoked through the CLI's store (another process, in production) reach the gateway. */
export async function checkKeysAndRevocation(gateway: TestGateway): Promise<void> {
  const cliStore = await openCliKeyStore(gateway.config);
  let created;
  try {
    created = await new KeyService({ store: cliStore, config: gateway.config }).createKey({ account: 'keys-acct', plan: 'roomy', agents: ['support'] });
  } finally {
    await cliStore.close();
  }
  const ok = await postChat(gateway.url, CHAT, created.rawKey, { message: 'hi' });
  expect(ok.status, await ok.text()).toBe(200);
  // Served from the cache from now on; only the invalidation can change the answer.
  await checkRevocationReachesGateway(gateway, created.rawKey, created.record.keyId);
}

/** A guard against a hang, not a speed bound (the design's 1 s is a quiet machine's); far inside the hour-long cache TTL. */
const REFUSAL_BOUND_MS = 30_000;

/**
 * Revokes `keyId` through the CLI's store; the gateway, which has the key cached for an hour,
 * refuses it: only the invalidation can have told it. Waited for as a condition (200 until
 * then); how long it took is in the failure message, not asserted.
 */
let revokedAddresses = 0;

export async function checkRevocationReachesGateway(gateway: TestGateway, rawKey: string, keyId: string): Promise<void> {
  const cliStore = await openCliKeyStore(gateway.config);
  try {
    await new KeyService({ store: cliStore, config: gateway.config }).revokeKey(keyId);
  } finally {
    await cliStore.close();
  }
  // The refusal counts as a failed key attempt (failed-attempt throttle, shared through
  // Redis): sent from an address of its own (the test gateways trust X-Forwarded-For), so
  // the scenarios that follow, from 127.0.0.1, are not blocked by the checks before them.
  const headers = { 'x-forwarded-for': `198.51.100.${(revokedAddresses += 1) % 250}` };
  const revokedAt = Date.now();
  let status = 200;
  let type = '';
  while (status === 200 && Date.now() - revokedAt < REFUSAL_BOUND_MS) {
    const response = await postChat(gateway.url, CHAT, rawKey, { message: 'hi' }, headers);
    status = response.status;
    type = status === 200 ? (await response.text(), '') : ((await response.json()) as { error: { type: string } }).error.type;
    if (status === 200) await sleep(20);
  }
  expect({ status, type }, `still ${status} ${Date.now() - revokedAt} ms after the revocation`).toEqual({ status: 401, type: 'revoked_api_key' });
}

/** `extra` more requests than an account's limit, all at once: exactly the limit admitted, counted in Redis. */
export async function checkExactLimits(gateway: TestGateway, inspect: RedisClient, account: string, extra: number): Promise<void> {
  const { rawKey } = await gateway.createKey({ account, plan: 'ten' });
  const statuses = await Promise.all(
    Array.from({ length: 10 + extra }, async () => {
      const response = await postChat(gateway.url, CHAT, rawKey, { message: 'hi' });
      await response.text();
      return response.status;
    }),
  );
  expect(statuses.filter((s) => s === 200)).toHaveLength(10);
  expect(statuses.filter((s) => s === 429)).toHaveLength(extra);
  expect(await countedInRedis(inspect, gateway.config, `account:${account}`)).toBe(10);
}

/** Requests (and lease units) counted in the subject's minute window in Redis. */
export async function countedInRedis(inspect: RedisClient, config: GatewayConfig, subject: string): Promise<number> {
  const fields = await inspect.hgetall(rateLimitKey(config.redis!.prefix, subject, 'minute'));
  return Object.entries(fields).reduce((sum, [field, value]) => (field === 'bw' ? sum : sum + Number(value)), 0);
}

/** The throttle's counter is shared: `maxAttempts` bad keys from one address block even a good key from it. */
export async function checkFailedAuthThrottle(gateway: TestGateway, address: string, maxAttempts: number, sharedKeys: () => Promise<string[]>): Promise<void> {
  const { rawKey } = await gateway.createKey({ account: 'throttle-acct', plan: 'roomy' });
  const headers = { 'x-forwarded-for': address };
  for (let i = 0; i < maxAttempts; i += 1) {
    const bad = `ha_${'x'.repeat(31)}${String(i).padStart(7, '0')}`;
    const response = await postChat(gateway.url, CHAT, bad, { message: 'hi' }, headers);
    await response.text();
    expect(response.status).toBe(401);
  }
  const blocked = await postChat(gateway.url, CHAT, rawKey, { message: 'hi' }, headers);
  expect(blocked.status, await blocked.text()).toBe(429);
  const other = await postChat(gateway.url, CHAT, rawKey, { message: 'hi' }, { 'x-forwarded-for': '203.0.113.250' });
  expect(other.status, await other.text()).toBe(200);
  // The count lives in Redis (found by scanning the topology), so every instance sees it.
  expect((await sharedKeys()).some((name) => name.includes('authfail') && name.includes(address))).toBe(true);
}

/** Every request answered since `since` has its record in the stream, and `audit tail` reads them. */
export async function checkAuditStream(gateway: TestGateway, inspect: RedisClient): Promise<void> {
  const { rawKey, keyId } = await gateway.createKey({ account: 'audit-acct', plan: 'roomy' });
  const ids: string[] = [];
  for (let i = 0; i < 5; i += 1) {
    const response = await postChat(gateway.url, CHAT, rawKey, { message: 'hi' });
    await response.text();
    expect(response.status).toBe(200);
    ids.push(response.headers.get('x-request-id')!);
  }
  const stream = gateway.config.audit.redisStream!;
  await waitFor('the records in the stream', async () => {
    const present = new Set((await streamRecords(inspect, stream)).map((r) => r.id));
    return ids.every((id) => present.has(id));
  }, 10_000);
  const lines: string[] = [];
  await tailAuditRecords(gateway.config, { limit: 5, keyId, follow: false, redis: createRedisClientFactory(gateway.config.redis!, silentLogger) }, (line) => {
    lines.push(line);
  });
  expect(lines.map((line) => (JSON.parse(line) as AuditRecord).id)).toEqual(ids);
}

export async function streamRecords(inspect: RedisClient, stream: string): Promise<AuditRecord[]> {
  const entries = await inspect.xrange(stream, '-', '+');
  return entries.map(([, fields]) => JSON.parse(fields[1]!) as AuditRecord);
}

export interface LoadResult {
  status: number;
  type: string | undefined;
  /** performance.now() when the request was sent. */
  startedMs: number;
  latencyMs: number;
  requestId: string | null;
}

/**
 * `workers` clients sending requests back to back until stop() is called, then until their
 * last answers are in. A request that does not end within `hangMs` counts as status 0.
 */
export function startLoad(gateway: TestGateway, rawKey: string, workers: number, hangMs: number): { stop(): Promise<LoadResult[]> } {
  const results: LoadResult[] = [];
  let stopping = false;
  const worker = async (): Promise<void> => {
    while (!stopping) {
      const startedMs = performance.now();
      try {
        const response = await fetch(`${gateway.url}${CHAT}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${rawKey}` },
          body: JSON.stringify({ message: 'hi' }),
          signal: AbortSignal.timeout(hangMs),
        });
        const text = await response.text();
        const type = response.status === 200 ? undefined : (JSON.parse(text) as { error?: { type?: string } }).error?.type;
        results.push({ status: response.status, type, startedMs, latencyMs: performance.now() - startedMs, requestId: response.headers.get('x-request-id') });
      } catch {
        results.push({ status: 0, type: 'no answer', startedMs, latencyMs: performance.now() - startedMs, requestId: null });
      }
    }
  };
  const running = Promise.all(Array.from({ length: workers }, worker));
  return {
    async stop() {
      stopping = true;
      await running;
      return results;
    },
  };
}

/** Both files of the Redis sink's spool are empty (or gone): everything spooled has been replayed. */
export async function spoolDrained(gateway: TestGateway): Promise<boolean> {
  const path = spoolPathFor(join(gateway.dir, 'audit-spool.jsonl'), 'redis');
  const text = (await readFile(path, 'utf8').catch(() => '')) + (await readFile(`${path}.replaying`, 'utf8').catch(() => ''));
  return text.trim().length === 0;
}

/** The plans every topology test's gateways share: one that never limits, one of ten a minute. */
export const TOPOLOGY_PLANS = { roomy: { windows: [{ requests: 100_000, per: '1m' }] }, ten: { windows: [{ requests: 10, per: '1m' }] } };
export const TOPOLOGY_MAX_FAILED_ATTEMPTS = 3;

export interface TopologyGateways {
  /** A gateway in process on the topology: keys in Redis, audit to `streamKey`, `config` merged over the shared settings. */
  start(config: Record<string, unknown>, streamKey: string, commandTimeout?: string): Promise<TestGateway>;
  /** A client of the test's own into the topology, closed with the rest. */
  inspect(gateway: TestGateway): RedisClient;
  close(): Promise<void>;
}

/**
 * Gateways for one topology test file: `redis` is the topology's block of config (mode,
 * nodes or sentinels, prefix), `upstreamUrl` the runner they all proxy to.
 */
export function topologyGateways(redis: () => Record<string, unknown>, upstreamUrl: () => string): TopologyGateways {
  const gateways: TestGateway[] = [];
  const inspectors: RedisClient[] = [];
  return {
    async start(config, streamKey, commandTimeout = '1s') {
      const gateway = await startTestGateway({
        agents: { support: upstreamUrl() },
        config: {
          redis: { ...redis(), command_timeout: commandTimeout },
          listen: { trust_proxy: true },
          // An hour's cache: a cached key that is refused at all was refused by the invalidation.
          keys: { store: 'redis', cache_ttl: '1h', failed_auth: { max_attempts: TOPOLOGY_MAX_FAILED_ATTEMPTS, per: '1m', block_for: '1m' } },
          plans: TOPOLOGY_PLANS,
          audit: { redis_stream: streamKey, flush_interval: '20ms', wait_replicas: 1 },
          ...config,
        },
      });
      gateways.push(gateway);
      return gateway;
    },
    inspect(gateway) {
      const client = inspectionClient(gateway.config);
      inspectors.push(client);
      return client;
    },
    async close() {
      for (const client of inspectors) client.disconnect();
      await Promise.all(gateways.map((gateway) => gateway.close()));
    },
  };
}
