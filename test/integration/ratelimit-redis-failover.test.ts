import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GatewayError } from '../../src/errors.js';
import { FailoverRateLimiter, type StoreErrorMode } from '../../src/ratelimit/failover-rate-limiter.js';
import { MemoryRateLimiter } from '../../src/ratelimit/memory-rate-limiter.js';
import type { RateWindow } from '../../src/ratelimit/rate-limiter.js';
import { RedisRateLimiter, rateLimitKey } from '../../src/ratelimit/redis-rate-limiter.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { captureLogLines } from '../helpers/log-capture.js';
import { redisErrorCount } from '../helpers/metric-counts.js';

const PREFIX = 'failover:';
const WINDOWS: RateWindow[] = [{ name: 'minute', limit: 3, windowMs: 60_000, kind: 'requests' as const, scope: 'subject' as const }];

let redis: TestRedis;
let client: Redis;
let probe: Redis;

beforeAll(async () => {
  redis = await startRedis({ controllable: true });
  // Reconnect quickly so the recovery test does not wait on ioredis' backoff.
  client = new Redis(redis.url, { maxRetriesPerRequest: 1, retryStrategy: () => 50 });
  client.on('error', () => {});
  probe = new Redis(redis.url, { maxRetriesPerRequest: 1, retryStrategy: () => 50 });
  probe.on('error', () => {});
});

afterAll(async () => {
  client?.disconnect();
  probe?.disconnect();
  await redis?.close();
});

function setup(mode: StoreErrorMode) {
  const { logger, lines } = captureLogLines();
  const primary = new RedisRateLimiter({ client, prefix: PREFIX, commandTimeoutMs: 100 });
  const limiter = new FailoverRateLimiter({ primary, fallback: new MemoryRateLimiter(), mode, logger, breakerOpenMs: 200 });
  return { limiter, lines };
}

async function inRedis(subject: string): Promise<boolean> {
  return (await probe.exists(rateLimitKey(PREFIX, subject, 'minute'))) === 1;
}

/** Calls consume until Redis holds the subject's key, i.e. the limiter is back on Redis. */
async function untilBackOnRedis(limiter: FailoverRateLimiter, subject: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    await limiter.consume(subject, WINDOWS).catch(() => undefined);
    if (!limiter.degraded && (await inRedis(subject).catch(() => false))) return;
    if (Date.now() > deadline) throw new Error('the limiter did not go back to Redis within 10 s');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('FailoverRateLimiter over a real Redis', () => {
  it('mode allow: counts in memory while Redis is down, warns once, and returns to Redis after a restart', async () => {
    const { limiter, lines } = setup('allow');
    expect((await limiter.consume('account:a', WINDOWS)).allowed).toBe(true);
    expect(await inRedis('account:a')).toBe(true);

    const errorsBefore = await redisErrorCount('ratelimit');
    await redis.stop();
    const during = [];
    for (let i = 0; i < 4; i += 1) during.push(await limiter.consume('account:down', WINDOWS));
    expect(during.map((d) => d.allowed)).toEqual([true, true, true, false]);
    expect(limiter.degraded).toBe(true);
    expect(await redisErrorCount('ratelimit')).toBeGreaterThan(errorsBefore);
    // Still down after the breaker's pause: the probe fails again, without a second warning.
    await new Promise((resolve) => setTimeout(resolve, 250));
    expect((await limiter.consume('account:down', WINDOWS)).allowed).toBe(false);

    await redis.start();
    await untilBackOnRedis(limiter, 'account:up');
    const warnings = lines.filter((l) => l.level === 'warn');
    expect(warnings).toHaveLength(1);
    expect(lines.some((l) => l.level === 'info' && l.msg.includes('answers again'))).toBe(true);
  });

  it('mode deny: answers store_unavailable while Redis is down and recovers without a restart', async () => {
    const { limiter } = setup('deny');
    expect((await limiter.consume('account:b', WINDOWS)).allowed).toBe(true);
    await redis.stop();
    for (let i = 0; i < 3; i += 1) {
      const error = await limiter.consume('account:b', WINDOWS).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(GatewayError);
      expect(error).toMatchObject({ type: 'store_unavailable', status: 503, retryAfterSeconds: 1 });
    }
    await redis.start();
    await untilBackOnRedis(limiter, 'account:b2');
    expect((await limiter.consume('account:b2', WINDOWS)).allowed).toBe(true);
  });
});
