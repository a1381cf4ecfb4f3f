// Reads usage rollups from Redis (usage-rollup.lua.ts wrote them) for a report: one hash
// per family and period, `<prefix><h|d>:<family>:<period>`, a field per group holding its
// packed bucket. A report is two pipelines: HKEYS of the range's day hashes (which groups
// exist; skipped when the query names its group), then one HMGET per period of the page's
// groups. Every key carries the stream's hash tag, so a pipeline stays on one cluster node.
import type { RedisClient } from '../redis/redis-client.js';
import type { UsageFamily, UsageSpan } from './usage-buckets.js';
import type { UsageSource } from './usage-report.js';

/** Groups per HMGET: keeps one reply (and Redis's time on it) bounded. */
const GROUPS_PER_CALL = 1_000;

export function usageHashKey(prefix: string, span: UsageSpan, family: UsageFamily, period: string): string {
  return `${prefix}${span}:${family}:${period}`;
}

export class RedisUsageSource implements UsageSource {
  /** `keyPrefix`: e.g. "{agentgw:audit}:usage:" (beside the audit stream, in its slot). */
  constructor(
    private readonly redis: RedisClient,
    private readonly keyPrefix: string,
  ) {}

  async groupNames(family: UsageFamily, days: readonly string[]): Promise<Set<string>> {
    const pipeline = this.redis.pipeline();
    for (const day of days) pipeline.hkeys(usageHashKey(this.keyPrefix, 'd', family, day));
    const names = new Set<string>();
    for (const [error, fields] of (await pipeline.exec()) ?? []) {
      if (error) throw error;
      for (const field of fields as string[]) if (field !== '#') names.add(field);
    }
    return names;
  }

  async readGroups(family: UsageFamily, span: UsageSpan, periods: readonly string[], groups: readonly string[]): Promise<(string | null)[][]> {
    if (groups.length === 0) return periods.map(() => []);
    const pipeline = this.redis.pipeline();
    for (const period of periods) {
      const key = usageHashKey(this.keyPrefix, span, family, period);
      for (let from = 0; from < groups.length; from += GROUPS_PER_CALL) pipeline.hmget(key, ...groups.slice(from, from + GROUPS_PER_CALL));
    }
    const replies = (await pipeline.exec()) ?? [];
    const out: (string | null)[][] = [];
    let r = 0;
    for (let p = 0; p < periods.length; p++) {
      let values: (string | null)[] = [];
      for (let from = 0; from < groups.length; from += GROUPS_PER_CALL) {
        const [error, part] = replies[r++]!;
        if (error) throw error;
        values = values.length === 0 ? (part as (string | null)[]) : values.concat(part as (string | null)[]);
      }
      out.push(values);
    }
    return out;
  }
}
