// Reads usage rollups from Redis (usage-rollup.lua.ts wrote them) for a report: SMEMBERS of
// each day's index, then the buckets, added up inside Redis by a script (a day's 24 hourly
// buckets come back as one row), in calls of at most ~2,000 buckets.
import type { RedisClient } from '../redis/redis-client.js';
import type { BucketFields } from './usage-buckets.js';
import type { UsageBucketRef, UsageSource } from './usage-report.js';

const CHUNK = 2_000;

/** KEYS: bucket keys, group after group; ARGV: how many keys each group has. Returns each group's summed fields. */
const READ_MERGED_LUA = `
local out = {}
local k = 1
for g = 1, #ARGV do
  local sums, order = {}, {}
  for _ = 1, tonumber(ARGV[g]) do
    local pairs_ = redis.call('HGETALL', KEYS[k])
    k = k + 1
    for j = 1, #pairs_, 2 do
      local f = pairs_[j]
      if sums[f] == nil then
        order[#order + 1] = f
        sums[f] = tonumber(pairs_[j + 1])
      else
        sums[f] = sums[f] + tonumber(pairs_[j + 1])
      end
    end
  end
  local flat = {}
  for _, f in ipairs(order) do
    flat[#flat + 1] = f
    flat[#flat + 1] = string.format('%.0f', sums[f])
  end
  out[g] = flat
end
return out
`;

type ReadMerged = (numKeys: number, ...args: string[]) => Promise<string[][]>;

export class RedisUsageSource implements UsageSource {
  /** `keyPrefix`: e.g. "{agentgw:audit}:usage:" (beside the audit stream, in its slot). */
  private readonly readMergedScript: ReadMerged;

  constructor(
    private readonly redis: RedisClient,
    private readonly keyPrefix: string,
  ) {
    redis.defineCommand('agentgwUsageReadMerged', { lua: READ_MERGED_LUA });
    this.readMergedScript = (redis as unknown as { agentgwUsageReadMerged: ReadMerged }).agentgwUsageReadMerged.bind(redis);
  }

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

  async readMerged(groups: readonly (readonly UsageBucketRef[])[]): Promise<BucketFields[]> {
    const out: BucketFields[] = [];
    let keys: string[] = [];
    let sizes: string[] = [];
    const call = async () => {
      if (sizes.length === 0) return;
      for (const flat of await this.readMergedScript(keys.length, ...keys, ...sizes)) {
        const fields: BucketFields = new Map();
        for (let i = 0; i + 1 < flat.length; i += 2) fields.set(flat[i]!, Number(flat[i + 1]));
        out.push(fields);
      }
      keys = [];
      sizes = [];
    };
    for (const refs of groups) {
      if (keys.length + refs.length > CHUNK) await call();
      for (const ref of refs) keys.push(`${this.keyPrefix}${ref.family}:${ref.group}:${ref.hour}`);
      sizes.push(String(refs.length));
    }
    await call();
    return out;
  }
}
