// Everything a test Redis holds, as text, for sweeps that a secret appears nowhere in it.
import type { RedisClient } from '../../src/redis/redis-client.js';

/**
 * Every key with its type and value, one line each (SCAN, then each key read by its type).
 * A key that expired between SCAN and TYPE is left out; a type this cannot read throws.
 */
export async function dumpRedis(redis: RedisClient): Promise<{ names: string[]; text: string }> {
  const names: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'COUNT', 1_000);
    cursor = next;
    names.push(...batch);
  } while (cursor !== '0');
  const parts: string[] = [];
  for (const name of names) {
    const type = await redis.type(name);
    let value: unknown;
    if (type === 'none') continue;
    if (type === 'string') value = await redis.get(name);
    else if (type === 'hash') value = await redis.hgetall(name);
    else if (type === 'set') value = await redis.smembers(name);
    else if (type === 'zset') value = await redis.zrange(name, 0, -1, 'WITHSCORES');
    else if (type === 'list') value = await redis.lrange(name, 0, -1);
    else if (type === 'stream') value = await redis.xrange(name, '-', '+');
    else throw new Error(`unexpected redis type ${type} for ${name}`);
    parts.push(`${name} ${type} ${JSON.stringify(value)}`);
  }
  return { names, text: parts.join('\n') };
}
