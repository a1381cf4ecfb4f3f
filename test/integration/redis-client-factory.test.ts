// The Redis client factory's one error policy, against real redis-server processes that are
// stopped to make connections fail: every connection error is counted in
// agentgw_redis_errors_total{op="connection"}, each connection logs one warning per outage
// and one info line when it is back, and no log line or message carries the URL's password.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createRedisKeyStore } from '../../src/keys/redis-key-store.js';
import { silentLogger } from '../../src/logger.js';
import { createRedisClientFactory, type RedisClient, type RedisClientFactory, type RedisConnectionUse } from '../../src/redis/redis-client.js';
import { redactRedisUrl } from '../../src/redis/redis-connection-policy.js';
import { refusingPort } from '../helpers/free-port.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { redisErrorCount } from '../helpers/metric-counts.js';
import { captureLogLines, type CapturedLogLine } from '../helpers/log-capture.js';

interface LogLine extends CapturedLogLine {
  redis?: string;
  connection?: string;
  use?: string;
}

/** The real factory, also keeping every connection it hands out and counting their error events. */
function recordingFactory(real: RedisClientFactory): RedisClientFactory & { handedOut: Array<{ use: RedisConnectionUse; client: RedisClient; errors: number }> } {
  const handedOut: Array<{ use: RedisConnectionUse; client: RedisClient; errors: number }> = [];
  return {
    address: real.address,
    handedOut,
    connect(use, name) {
      const client = real.connect(use, name);
      const entry = { use, client, errors: 0 };
      client.on('error', () => (entry.errors += 1));
      handedOut.push(entry);
      return client;
    },
    whenReady: (client, waitMs) => real.whenReady(client, waitMs),
  };
}

describe('Redis client factory', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startRedis({ controllable: true });
  });
  afterAll(async () => {
    await redis?.close();
  });

  it('counts every connection error of the shared, key-store and subscriber connections, and logs one warning per connection and outage and one info line at recovery', async () => {
    const { logger, lines } = captureLogLines<LogLine>();
    const factory = recordingFactory(createRedisClientFactory({ url: redis.url, prefix: 'factory:', commandTimeoutMs: 100 }, logger));
    const shared = factory.connect('shared', 'agentgw');
    const store = await createRedisKeyStore({ redis: factory, prefix: 'factory:', commandTimeoutMs: 100, logger, subscribe: true, waitForConnectionMs: 5_000 });
    try {
      expect(await factory.whenReady(shared, 5_000)).toBeUndefined();
      expect(factory.handedOut.map((c) => c.use).sort()).toEqual(['key-store', 'shared', 'subscriber']);
      await vi.waitFor(() => expect(factory.handedOut.every((c) => c.client.status === 'ready')).toBe(true), { timeout: 5_000 });
      const countedBefore = await redisErrorCount('connection');
      const seenBefore = factory.handedOut.reduce((sum, c) => sum + c.errors, 0);

      for (let outage = 1; outage <= 2; outage += 1) {
        const errorsAtStart = factory.handedOut.map((c) => c.errors);
        await redis.stop();
        // Several failed reconnect attempts on every connection before Redis comes back.
        await vi.waitFor(() => expect(factory.handedOut.every((c, i) => c.errors - errorsAtStart[i]! >= 2)).toBe(true), { timeout: 10_000, interval: 50 });
        await redis.start();
        await vi.waitFor(() => expect(lines.filter((l) => l.msg === 'redis connection restored')).toHaveLength(3 * outage), { timeout: 10_000, interval: 50 });

        for (const use of ['shared', 'key-store', 'subscriber']) {
          const ofUse = lines.filter((l) => l.use === use);
          expect(ofUse.filter((l) => l.msg === 'redis connection error').map((l) => l.level)).toEqual(Array(outage).fill('warn'));
          expect(ofUse.filter((l) => l.msg === 'redis connection restored').map((l) => l.level)).toEqual(Array(outage).fill('info'));
          expect(ofUse.every((l) => l.redis === redis.url)).toBe(true);
        }
      }

      const seen = factory.handedOut.reduce((sum, c) => sum + c.errors, 0) - seenBefore;
      expect(seen).toBeGreaterThanOrEqual(12);
      expect((await redisErrorCount('connection')) - countedBefore).toBe(seen);
      expect(lines.filter((l) => l.use === 'shared').every((l) => l.connection === 'agentgw')).toBe(true);
      expect(lines.filter((l) => l.use === 'subscriber' || l.use === 'key-store').every((l) => l.connection === 'agentgw-keys')).toBe(true);
    } finally {
      await store.close();
      shared.disconnect();
    }
  }, 40_000);

  it('fails a CLI connection fast with the address in the message, counted and logged once', async () => {
    const port = await refusingPort();
    const { logger, lines } = captureLogLines<LogLine>();
    const factory = recordingFactory(createRedisClientFactory({ url: `redis://127.0.0.1:${port}/0`, prefix: 'factory:', commandTimeoutMs: 100 }, logger));
    const countedBefore = await redisErrorCount('connection');
    const client = factory.connect('cli-read', 'agentgw-cli');
    await expect(factory.whenReady(client, 5_000)).rejects.toThrow(new RegExp(`^cannot reach redis at redis://127\\.0\\.0\\.1:${port}/0: .*ECONNREFUSED`));
    // No reconnect for a one-shot CLI read: the client gives up after its first error.
    await vi.waitFor(() => expect(client.status).toBe('end'));
    expect(factory.handedOut[0]!.errors).toBe(1);
    expect((await redisErrorCount('connection')) - countedBefore).toBe(1);
    expect(lines.map((l) => [l.level, l.msg, l.connection, l.use])).toEqual([['warn', 'redis connection error', 'agentgw-cli', 'cli-read']]);
  });

  it('fails a CLI connection to an unreachable cluster or set of sentinels fast, naming the nodes', async () => {
    const port = await refusingPort();
    const cluster = createRedisClientFactory({ mode: 'cluster', nodes: [{ host: '127.0.0.1', port }], prefix: 'factory:', commandTimeoutMs: 100 }, silentLogger);
    expect(cluster.address).toBe(`cluster 127.0.0.1:${port}`);
    const clusterClient = cluster.connect('cli-read', 'agentgw-cli');
    await expect(cluster.whenReady(clusterClient, 5_000)).rejects.toThrow(new RegExp(`^cannot reach redis at cluster 127\\.0\\.0\\.1:${port}: Failed to refresh slots cache`));
    clusterClient.disconnect();

    const sentinel = createRedisClientFactory({ mode: 'sentinel', sentinels: [{ host: '127.0.0.1', port }], name: 'gw', prefix: 'factory:', commandTimeoutMs: 100 }, silentLogger);
    expect(sentinel.address).toBe(`master "gw" via sentinels 127.0.0.1:${port}`);
    const sentinelClient = sentinel.connect('cli-read', 'agentgw-cli');
    await expect(sentinel.whenReady(sentinelClient, 5_000)).rejects.toThrow(/^cannot reach redis at master "gw" via sentinels .*: All sentinels are unreachable/);
    sentinelClient.disconnect();
  });

  describe('with a password in the URL', () => {
    const password = 'pw-4Kq9-never-in-logs';
    let secured: TestRedis;
    let url: string;
    beforeAll(async () => {
      secured = await startRedis({ controllable: true });
      const admin = new Redis(secured.url, { maxRetriesPerRequest: 1 });
      await admin.config('SET', 'requirepass', password);
      admin.disconnect();
      url = `redis://:${password}@127.0.0.1:${secured.port}/0`;
    });
    afterAll(async () => {
      await secured?.close();
    });

    it('refused credentials are a connection error whose message names neither password', async () => {
      const wrong = 'wrong-Zt3-also-secret';
      const { logger, lines, text } = captureLogLines<LogLine>();
      const factory = createRedisClientFactory({ url: `redis://:${wrong}@127.0.0.1:${secured.port}/0`, prefix: 'factory:', commandTimeoutMs: 100 }, logger);
      const countedBefore = await redisErrorCount('connection');
      const client = factory.connect('cli-read', 'agentgw-cli');
      const failure = await factory.whenReady(client, 5_000).then(
        () => undefined,
        (error: Error) => error,
      );
      client.disconnect();
      expect(failure?.message).toMatch(/^cannot reach redis at redis:\/\/:\*\*\*@127\.0\.0\.1:\d+\/0: WRONGPASS/);
      expect(failure?.message).not.toContain(wrong);
      expect(await redisErrorCount('connection')).toBeGreaterThan(countedBefore);
      expect(lines.map((l) => l.msg)).toEqual(['redis connection error']);
      expect(text.join('')).not.toContain(wrong);
      expect(text.join('')).not.toContain(password);
    });

    // Last in this block: it stops the server.
    it('logs the address with the password hidden, and never the password, through an outage', async () => {
      const { logger, lines, text } = captureLogLines<LogLine>();
      const factory = createRedisClientFactory({ url, prefix: 'factory:', commandTimeoutMs: 100 }, logger);
      expect(factory.address).toBe(`redis://:***@127.0.0.1:${secured.port}/0`);
      const client = factory.connect('shared', 'agentgw');
      try {
        await factory.whenReady(client, 5_000);
        expect(await client.ping()).toBe('PONG');
        await secured.stop();
        await vi.waitFor(() => expect(lines.filter((l) => l.msg === 'redis connection error')).toHaveLength(1), { timeout: 10_000 });
        expect(lines[0]!.redis).toBe(`redis://:***@127.0.0.1:${secured.port}/0`);
        expect(text.join('')).not.toContain(password);
      } finally {
        client.disconnect();
      }
    });
  });
});

describe('redactRedisUrl', () => {
  it('hides the password and keeps the rest', () => {
    expect(redactRedisUrl('redis://:s3cret@cache.internal:6380/2')).toBe('redis://:***@cache.internal:6380/2');
    expect(redactRedisUrl('rediss://app:s3cret@cache.internal:6380/0')).toBe('rediss://app:***@cache.internal:6380/0');
    expect(redactRedisUrl('redis://127.0.0.1:6379/0')).toBe('redis://127.0.0.1:6379/0');
  });

  it('names no part of a URL it cannot parse', () => {
    expect(redactRedisUrl('redis://:s3cret@[not-a-host')).toBe('redis');
  });
});
