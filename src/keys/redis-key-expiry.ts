// The Redis key store's expiry index for the expiry sweeper (docs/operations.md, "Key layout"):
// ZRANGEBYSCORE pages of `ix:expiry` (keys expiring soon) and of `ix:expired:unannounced`
// (keys the listing sweep moved to expired, not yet announced), so a sweep costs
// O(log n + keys returned) whatever the number of keys.
import type { RedisClient } from '../redis/redis-client.js';
import type { ExpiryEntry, KeyExpiryIndex } from './key-store.js';
import type { KeyIndexNames } from './redis-key-index.js';
import { sweepExpired } from './redis-key-pages.js';

/** Runs one Redis operation under the store's deadline and error counting. */
export type RunRedis = <T>(op: string, work: () => Promise<T>) => Promise<T>;

/** `ms15:key_id` members with their scores (ZRANGEBYSCORE … WITHSCORES) as entries. */
function entries(reply: string[]): ExpiryEntry[] {
  const out: ExpiryEntry[] = [];
  for (let i = 0; i + 1 < reply.length; i += 2) {
    const member = reply[i]!;
    out.push({ keyId: member.slice(member.indexOf(':') + 1), expiresAtMs: Number(reply[i + 1]), ref: member });
  }
  return out;
}

export function redisExpiryIndex(redis: RedisClient, names: KeyIndexNames, run: RunRedis): KeyExpiryIndex {
  return {
    async expiringBetween(afterMs, toMs, limit) {
      return entries(await run('key_expiry', () => redis.zrangebyscore(names.expiry(), `(${afterMs}`, String(toMs), 'WITHSCORES', 'LIMIT', 0, limit)));
    },
    async expiredUnannounced(nowMs, limit) {
      // The listing's own sweep, one bounded batch: what it moves joins the unannounced set.
      await run('key_sweep', () => sweepExpired(redis, names, nowMs));
      return entries(await run('key_expiry', () => redis.zrangebyscore(names.expiredUnannounced(), '-inf', String(nowMs), 'WITHSCORES', 'LIMIT', 0, limit)));
    },
    async markAnnounced(announced) {
      if (announced.length === 0) return;
      await run('key_expiry', () => redis.zrem(names.expiredUnannounced(), ...announced.map((entry) => entry.ref)));
    },
    async readWarnedUntil() {
      const value = await run('key_expiry', () => redis.get(names.warnedUntil()));
      const ms = Number(value ?? 0);
      return Number.isFinite(ms) ? ms : 0;
    },
    async writeWarnedUntil(ms) {
      await run('key_expiry', () => redis.set(names.warnedUntil(), String(ms)));
    },
  };
}
