// What the Redis limiter has counted, read straight from its hash, and how many script
// calls Redis has run for it (from INFO commandstats).
import { rateLimitKey } from '../../src/ratelimit/redis-rate-limiter.js';
import type { RedisClient } from '../../src/redis/redis-client.js';

/** Requests counted in one window of a subject: the sum of its buckets (field `bw` is the bucket width, not a count). */
export async function countedInRedis(redis: RedisClient, prefix: string, subject: string, windowName: string): Promise<number> {
  const hash = await redis.hgetall(rateLimitKey(prefix, subject, windowName));
  let total = 0;
  for (const [field, count] of Object.entries(hash)) if (field !== 'bw') total += Number(count);
  return total;
}

/** Script calls Redis has run: EVALSHA, and EVAL for a connection's first call of a script. */
export async function scriptCallsInRedis(redis: RedisClient): Promise<number> {
  const stats = await redis.info('commandstats');
  const calls = (command: string): number => Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
  return calls('evalsha') + calls('eval');
}
