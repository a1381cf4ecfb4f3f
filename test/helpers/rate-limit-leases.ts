// The Redis limiter with leases on, against a real Redis: limiter instances made per test
// (closed after it, Redis flushed) and the waits lease tests need.
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { MAX_LEASE_MS } from '../../src/ratelimit/rate-limit-leases.js';
import { RedisRateLimiter, type RedisRateLimiterOptions } from '../../src/ratelimit/redis-rate-limiter.js';
import { countedInRedis, scriptCallsInRedis } from './rate-limit-counts.js';
import { startRedis, type TestRedis } from './redis.js';

/** Long enough for every lease to end and for the sweep after it to give its units and tokens back. */
export const leasesOver = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 2 * MAX_LEASE_MS + 300));

/**
 * The end of a busy phase on a budget shared by two gateways, which ended in refusals: a refusal
 * may have come while the other gateway held a reserve, so, round after round, once every lease
 * has ended `check` runs (the exact count), then `post` sends one request at a time until both
 * gateways refuse at once. Returns once they do (at most 20 rounds), with the leases ended.
 */
export async function spendUntilBothRefuse<G>(gateways: readonly G[], post: (gateway: G) => Promise<boolean>, check: () => Promise<void>): Promise<void> {
  for (let round = 0; round < 20; round += 1) {
    await leasesOver();
    await check();
    const refusedBy = await Promise.all(gateways.map(async (gateway) => !(await post(gateway))));
    if (refusedBy.every(Boolean)) break;
    while ((await post(gateways[0]!)) || (await post(gateways[1]!)));
  }
  await leasesOver();
}

export interface LeaseLimiterRedis {
  /** The server (set in beforeAll). */
  readonly redis: TestRedis;
  /** A connection of the test's own, for reading and writing Redis directly (set in beforeAll). */
  readonly admin: Redis;
  /**
   * A new limiter instance on its own connection; `commandTimeoutMs` overrides the fixture's,
   * `options` sets the limiter's clock or turns lease renewal off.
   */
  instance(commandTimeoutMs?: number, options?: Pick<RedisRateLimiterOptions, 'now' | 'renewLeases'>): RedisRateLimiter;
  /** Script calls Redis has run so far. */
  scriptCalls(): Promise<number>;
  /** What Redis counts for a subject's window right now (sum of its buckets). */
  counted(subject: string, window: string): Promise<number>;
  /**
   * Waits until Redis's clock is early in a second: minute windows have 1 s buckets and a
   * lease ends with its bucket, so a few sequential calls then share one bucket.
   */
  earlyInBucket(): Promise<void>;
}

/**
 * Registers the file's hooks: Redis started before all tests (`controllable` for tests that
 * pause it), instances closed and Redis flushed after each test, all stopped at the end.
 */
export function useLeaseLimiterRedis(options: { prefix: string; commandTimeoutMs: number; controllable?: boolean }): LeaseLimiterRedis {
  const { prefix } = options;
  let redis: TestRedis | undefined;
  let admin: Redis | undefined;
  const opened: Array<{ client: Redis; limiter: RedisRateLimiter }> = [];
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('the lease limiter fixture is used before its beforeAll ran');
    return value;
  };

  beforeAll(async () => {
    redis = await startRedis({ controllable: options.controllable ?? false });
    admin = new Redis(redis.url, { maxRetriesPerRequest: 1 });
    admin.on('error', () => {});
  });

  afterEach(async () => {
    for (const { client, limiter } of opened.splice(0)) {
      await limiter.close();
      client.disconnect();
    }
    await admin?.flushall();
  });

  afterAll(async () => {
    admin?.disconnect();
    await redis?.close();
  });

  return {
    get redis() {
      return started(redis);
    },
    get admin() {
      return started(admin);
    },
    instance(commandTimeoutMs = options.commandTimeoutMs, limiterOptions = {}) {
      const client = new Redis(started(redis).url, { maxRetriesPerRequest: 1 });
      // Tests that stop Redis see the failures in the limiter's calls; the reconnect errors are noise.
      client.on('error', () => {});
      const limiter = new RedisRateLimiter({ client, prefix, commandTimeoutMs, leases: true, ...limiterOptions });
      opened.push({ client, limiter });
      return limiter;
    },
    scriptCalls: () => scriptCallsInRedis(started(admin)),
    counted: (subject, window) => countedInRedis(started(admin), prefix, subject, window),
    async earlyInBucket() {
      for (;;) {
        const [, micros] = await started(admin).time();
        const ms = Math.floor(Number(micros) / 1_000);
        if (ms < 300) return;
        await new Promise((resolve) => setTimeout(resolve, 1_000 - ms));
      }
    },
  };
}
