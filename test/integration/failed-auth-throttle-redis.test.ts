// The failed-auth throttle's shared counter against a hung Redis (SIGSTOP: the socket stays
// open and nothing answers). checkShared() runs before every key lookup, so each of its calls
// must give up after redis.command_timeout and fall back to this instance's own count; the
// client here has no timeout of its own, so without that bound the calls would never settle.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FailedAuthThrottle } from '../../src/auth/failed-auth-throttle.js';
import { ManualClock } from '../../src/clock.js';
import { silentLogger } from '../../src/logger.js';
import { metrics } from '../../src/metrics/metrics.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';

let redis: TestRedis;
let client: Redis;

beforeAll(async () => {
  redis = await startRedis({ controllable: true });
  client = new Redis(redis.url, { maxRetriesPerRequest: null, enableOfflineQueue: true });
  await client.ping();
});

afterAll(async () => {
  client?.disconnect();
  await redis?.close();
});

/** Resolves to 'settled' when `work` settles first, 'still waiting' when 5 s pass first. */
async function settlesWhileHung(work: Promise<unknown>): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  const waited = new Promise<string>((resolve) => { timer = setTimeout(() => resolve('still waiting'), 5_000); });
  const outcome = await Promise.race([work.then(() => 'settled', () => 'settled'), waited]);
  clearTimeout(timer);
  return outcome;
}

async function authfailErrors(): Promise<number> {
  const metric = await metrics.redisErrors.get();
  return metric.values.filter((v) => v.labels.op === 'authfail').reduce((sum, v) => sum + v.value, 0);
}

describe('FailedAuthThrottle (Redis) with the server hung', () => {
  it('checks and counts within redis.command_timeout, on this instance\'s own count, and shares again once Redis answers', async () => {
    const throttle = new FailedAuthThrottle({
      maxAttempts: 2, perMs: 60_000, blockForMs: 30_000, clock: new ManualClock(), logger: silentLogger,
      redis: { client, prefix: `hung-${Date.now()}:` }, commandTimeoutMs: 100,
    });
    // Shared while Redis answers: a failure is counted in Redis.
    await throttle.recordFailure('10.1.0.1');
    expect(await client.keys('hung-*')).toHaveLength(1);
    const errorsBefore = await authfailErrors();

    redis.pause();
    try {
      // Nothing answers: the check gives up and allows (the lookup behind it is bounded too).
      expect(await settlesWhileHung(throttle.checkShared('10.1.0.1'))).toBe('settled');
      // Failures are still counted, in this instance's memory: the second one blocks.
      const first = throttle.recordFailure('10.1.0.1');
      expect(await settlesWhileHung(first)).toBe('settled');
      expect(await first).toBeUndefined();
      const second = throttle.recordFailure('10.1.0.1');
      expect(await settlesWhileHung(second)).toBe('settled');
      expect(() => throttle.check('10.1.0.1')).toThrow(expect.objectContaining({ type: 'rate_limit_exceeded' }) as Error);
      expect(await authfailErrors()).toBeGreaterThan(errorsBefore);
    } finally {
      redis.resume();
    }

    // Redis answers again: another address is counted in the shared counter.
    await throttle.recordFailure('10.1.0.2');
    expect(await client.keys('hung-*')).toHaveLength(2);
  });
});
