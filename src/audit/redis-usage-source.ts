// Reads usage rollups from Redis (usage-rollup.lua.ts wrote them) for a report: SMEMBERS of
// each day's index, then HGETALL of each bucket, pipelined in chunks.
import type { Redis } from 'ioredis';
import type { BucketFields } from './usage-buckets.js';
import type { UsageBucketRef, UsageSource } from './usage-report.js';

const CHUNK = 2_000;

export class RedisUsageSource implements UsageSource {
  /** `keyPrefix`: e.g. "agentgw:usage:" (the redis prefix + "usage:"). */
  constructor(
    private readonly redis: Redis,
    private readonly keyPrefix: string,
  ) {}

  async indexMembers(days: readonly string[]): Promise<Map<string, Set<string>>> {
    const pipeline = this.redis.pipeline();
    for (const day of days) pipeline.smembers(`${this.keyPrefix}index:${day}`);
    const results = (await pipeline.exec()) ?? [];
    const out = new Map<string, Set<string>>();
    results.forEach(([error, members], i) => {
      if (error) throw error;
      if ((members as string[]).length > 0) out.set(days[i]!, new Set(members as string[]));
    });
    return out;
  }

  async readBuckets(refs: readonly UsageBucketRef[]): Promise<BucketFields[]> {
    const out: BucketFields[] = [];
    for (let start = 0; start < refs.length; start += CHUNK) {
      const pipeline = this.redis.pipeline();
      for (const ref of refs.slice(start, start + CHUNK)) pipeline.hgetall(`${this.keyPrefix}${ref.family}:${ref.group}:${ref.hour}`);
      for (const [error, fields] of (await pipeline.exec()) ?? []) {
        if (error) throw error;
        out.push(new Map(Object.entries(fields as Record<string, string>).map(([field, n]) => [field, Number(n)])));
      }
    }
    return out;
  }
}
