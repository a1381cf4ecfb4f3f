// GET /admin/v1/usage and `agent-gateway usage` (docs/admin-api.md "Usage"): reads the
// hourly buckets of the groups asked for, never raw records, and merges them into one row
// per group and hour or day. Which groups exist comes from the daily index (who had usage
// that day); only the hours of days a group was active are read, so a 30-day report reads
// at most 720 buckets per group. A query that names its one group (one key, account or
// agent) skips the index and reads that group's buckets directly.
import { summarize, USAGE_FAMILIES, type BucketFields, type UsageFamily, type UsageTotals } from './usage-buckets.js';

export type UsageGroupBy = 'key' | 'account' | 'agent';
export type UsageGranularity = 'hour' | 'day';

export interface UsageQuery {
  groupBy: UsageGroupBy;
  granularity: UsageGranularity;
  /** Epoch ms; rounded down to the hour. */
  fromMs: number;
  /** Epoch ms, exclusive; rounded up to the hour. */
  toMs: number;
  keyId?: string | undefined;
  account?: string | undefined;
  agent?: string | undefined;
}

export interface UsageRow extends UsageTotals {
  group: string;
  /** Start of the hour or day, ISO 8601. */
  period: string;
}

export interface UsageBucketRef {
  family: UsageFamily;
  group: string;
  /** "2026-01-31T13" */
  hour: string;
}

/** Where rollups are read from: Redis hashes, or the embedded mode's day files. */
export interface UsageSource {
  /** Per day ("2026-01-31"): its index members `key_id \t account \t agent`. */
  indexMembers(days: readonly string[]): Promise<Map<string, Set<string>>>;
  /** For each group of buckets, their fields added up (empty when none has any). */
  readMerged(groups: readonly (readonly UsageBucketRef[])[]): Promise<BucketFields[]>;
}

const HOUR_MS = 3_600_000;

/** Every hour of [fromMs, toMs) as "YYYY-MM-DDTHH", the range widened to whole hours. */
export function hoursOf(fromMs: number, toMs: number): string[] {
  const hours: string[] = [];
  for (let t = Math.floor(fromMs / HOUR_MS) * HOUR_MS; t < toMs; t += HOUR_MS) hours.push(new Date(t).toISOString().slice(0, 13));
  return hours;
}

interface Target {
  family: UsageFamily;
  bucketGroup: string;
  label: string;
  days: Set<string>;
}

/** The bucket family that answers the query exactly with the fewest reads. */
/**
 * The one bucket group a query names outright (one key, account or agent, no filter on
 * another dimension): its buckets are read directly, without the day index.
 */
function directGroup(q: UsageQuery): string | undefined {
  if (q.groupBy === 'key' && q.keyId !== undefined && q.agent === undefined && q.account === undefined) return q.keyId;
  if (q.groupBy === 'account' && q.account !== undefined && q.keyId === undefined && q.agent === undefined) return q.account;
  if (q.groupBy === 'agent' && q.agent !== undefined && q.keyId === undefined && q.account === undefined) return q.agent;
  return undefined;
}

function familyFor(q: UsageQuery): UsageFamily {
  if (q.groupBy === 'key') return q.agent !== undefined ? 'key-agent' : 'key';
  if (q.groupBy === 'account') return q.agent !== undefined ? 'key-agent' : q.keyId !== undefined ? 'key' : 'account';
  return q.keyId !== undefined || q.account !== undefined ? 'key-agent' : 'agent';
}

export async function usageReport(source: UsageSource, q: UsageQuery): Promise<UsageRow[]> {
  const hours = hoursOf(q.fromMs, q.toMs);
  if (hours.length === 0) return [];
  const days = [...new Set(hours.map((h) => h.slice(0, 10)))];
  const family = familyFor(q);
  if (!USAGE_FAMILIES.includes(family)) throw new Error(`unknown usage family ${family}`);
  const targets = new Map<string, Target>();
  const direct = directGroup(q);
  if (direct !== undefined) targets.set(direct, { family, bucketGroup: direct, label: direct, days: new Set(days) });
  for (const [day, members] of direct === undefined ? await source.indexMembers(days) : []) {
    for (const member of members) {
      const [keyId, account, agent] = member.split('\t') as [string, string, string];
      if (agent === undefined) continue;
      if ((q.keyId !== undefined && keyId !== q.keyId) || (q.account !== undefined && account !== q.account) || (q.agent !== undefined && agent !== q.agent)) continue;
      const bucketGroup = family === 'key' ? keyId : family === 'account' ? account : family === 'agent' ? agent : `${keyId}/${agent}`;
      const label = q.groupBy === 'key' ? keyId : q.groupBy === 'account' ? account : agent;
      let target = targets.get(bucketGroup);
      if (target === undefined) targets.set(bucketGroup, (target = { family, bucketGroup, label, days: new Set() }));
      target.days.add(day);
    }
  }
  // One read group per target and period: a day's 24 hours are added up where they are read.
  const groups: UsageBucketRef[][] = [];
  const owners: { label: string; period: string }[] = [];
  for (const target of targets.values()) {
    let current: UsageBucketRef[] | undefined;
    let currentPeriod = '';
    for (const hour of hours) {
      if (!target.days.has(hour.slice(0, 10))) continue;
      const period = q.granularity === 'hour' ? `${hour}:00:00Z` : `${hour.slice(0, 10)}T00:00:00Z`;
      if (current === undefined || period !== currentPeriod) {
        current = [];
        currentPeriod = period;
        groups.push(current);
        owners.push({ label: target.label, period });
      }
      current.push({ family, group: target.bucketGroup, hour });
    }
  }
  const sums = await source.readMerged(groups);
  // label → period → merged fields (several bucket groups may share a label)
  const merged = new Map<string, Map<string, BucketFields>>();
  sums.forEach((fields, i) => {
    if (fields.size === 0) return;
    const { label, period } = owners[i]!;
    let periods = merged.get(label);
    if (periods === undefined) merged.set(label, (periods = new Map()));
    const into = periods.get(period);
    if (into === undefined) periods.set(period, fields);
    else for (const [field, n] of fields) into.set(field, (into.get(field) ?? 0) + n);
  });
  const rows: UsageRow[] = [];
  for (const label of [...merged.keys()].sort()) {
    const periods = merged.get(label)!;
    for (const period of [...periods.keys()].sort()) rows.push({ group: label, period, ...summarize(periods.get(period)!) });
  }
  return rows;
}
