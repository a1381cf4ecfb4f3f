// What the Redis limiter has counted, read straight from its hash.
import { rateLimitKey } from '../../src/ratelimit/redis-rate-limiter.js';
import type { RedisClient } from '../../src/redis/redis-client.js';

/** Requests counted in one window of a subject: the sum of its buckets (field `bw` is the bucket width, not a count). */
export async function countedInRedis(redis: RedisClient, prefix: string, subject: string, windowName: string): Promise<number> {
  const hash = await redis.hgetall(rateLimitKey(prefix, subject, windowName));
  let total = 0;
  for (const [field, count] of Object.entries(hash)) if (field !== 'bw') total += Number(count);
  return total;
}
