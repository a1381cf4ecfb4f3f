// Usage rollups (docs/admin-api.md "Usage"): every audit record is counted into buckets,
// one per group it belongs to and per period — its key, its account, its agent, its
// tuple (key, account and agent together, for reports that filter across dimensions) and,
// when it names one, its agent run (key, account, agent and session_id: sessionGroup) — for its
// hour and for its day. A bucket holds flat integer fields, so buckets merge by adding:
//   requests, tokens, cost_micro (cost_usd in whole micro-dollars, decision 0066),
//   tool_calls, e:<outcome> (every outcome but ok), l:<i> (latency histogram).
// All groups of one family and period live together (a Redis hash, a file's lines), each
// group's fields packed into one string, "requests=40 tokens=4997 e:rate_limited=2 l:30=10"
// (decision 0024: a report reads one value per group and period, not one per field).
// The latency histogram has fixed log-spaced buckets: bucket 0 holds ≤ 1 ms, bucket i ≥ 1
// holds (2^((i-1)/4), 2^(i/4)] ms, the last one everything above. A percentile is reported
// as its bucket's geometric midpoint: within 9.1 % (2^(1/8) − 1) of the true value above
// 1 ms, within 0.5 ms below. The Redis rollup script computes the same index in Lua.

import { isTokenCount } from './audit-record.js';
import { sessionGroup, type RollupRecord } from './rollup-record.js';

/** Bucket families, named as in the Redis keys and the rollup files. */
export const USAGE_FAMILIES = ['key', 'account', 'agent', 'tuple', 'session'] as const;
export type UsageFamily = (typeof USAGE_FAMILIES)[number];

/** Period lengths a bucket covers: "h" buckets are named "2026-01-31T13", "d" buckets "2026-01-31". */
export const USAGE_SPANS = ['h', 'd'] as const;
export type UsageSpan = (typeof USAGE_SPANS)[number];

/** Index of the last latency bucket: 2^(79/4) ms ≈ 14 min and above. */
export const MAX_LATENCY_BUCKET = 80;
const LN2 = Math.log(2);

/** The histogram bucket of a latency (the Lua script uses the same formula). */
export function latencyBucket(latencyMs: number): number {
  if (!(latencyMs > 1)) return 0;
  // The small offset keeps exact powers of two (2, 4, 8 ms) in the bucket they close.
  return Math.min(MAX_LATENCY_BUCKET, Math.ceil((4 * Math.log(latencyMs)) / LN2 - 1e-9));
}

/** The value reported for a percentile that falls in bucket `i`. */
export function latencyBucketValueMs(i: number): number {
  if (i <= 0) return 0.5;
  return 2 ** ((i - 0.5) / 4);
}

/**
 * A record's cost_usd counted into a bucket: whole micro-dollars, floor(usd × 10^6 + 0.5) (the
 * Lua script computes the same), so sums stay exact integers (decision 0066); null for no
 * cost, or one no answer can have (negative, not finite, above MAX_RECORD_COST_USD).
 */
export function costMicroUsd(usd: unknown): number | null {
  if (typeof usd !== 'number' || !(usd >= 0) || usd > MAX_RECORD_COST_USD) return null;
  return Math.floor(usd * 1_000_000 + 0.5);
}

/** A record cost above this is not counted in rollups: far above any answer, it could only be a mistaken price or a forged line. */
export const MAX_RECORD_COST_USD = 1_000_000;

/** Field → count. */
export type BucketFields = Map<string, number>;

/** "2026-01-31T13" of an ISO timestamp: the hour bucket. */
export function hourOf(ts: string): string {
  return ts.slice(0, 13);
}

/** A tuple group: "key_id account agent" (none of the three holds a space: usableRecord). */
export function tupleGroup(keyId: string, account: string, agent: string): string {
  return `${keyId} ${account} ${agent}`;
}

export function groupsOf(r: RollupRecord): [UsageFamily, string][] {
  const groups: [UsageFamily, string][] = [
    ['key', r.key_id],
    ['account', r.account],
    ['agent', r.agent],
    ['tuple', tupleGroup(r.key_id, r.account, r.agent)],
  ];
  if (r.session_id) groups.push(['session', sessionGroup(r.key_id, r.account, r.agent, r.session_id)]);
  return groups;
}

/**
 * Every Redis period hash holds this value in its field "#" (no group starts with "#"): it
 * names the layout, and being longer than hash-max-listpack-value (64) it keeps the hash a
 * hashtable, where a group's update costs O(1) instead of moving the listpack (decision 0024).
 */
export const USAGE_HASH_MARKER = 'agentgw usage layout 2: a field per group, its bucket packed as field=n pairs';

/** A packed bucket, "requests=40 tokens=4997 e:rate_limited=2 l:30=10" (fields never hold "=" or a space). */
export function packFields(fields: BucketFields): string {
  let out = '';
  for (const [field, n] of fields) out += out === '' ? `${field}=${n}` : ` ${field}=${n}`;
  return out;
}

/**
 * Adds a packed bucket's fields into `into` (nothing for an empty or absent one). Pairs are
 * separated by " ", or by ";" where the Redis script appended a batch's counts to a stored
 * bucket; a field found twice adds up.
 */
export function addPacked(into: BucketFields, packed: string | null | undefined): void {
  if (!packed) return;
  let at = 0;
  // The next ";" is looked up again only once passed, so a bucket is scanned once.
  let semicolon = packed.indexOf(';');
  while (at < packed.length) {
    if (semicolon >= 0 && semicolon < at) semicolon = packed.indexOf(';', at);
    let end = packed.indexOf(' ', at);
    if (end < 0 || (semicolon >= 0 && semicolon < end)) end = semicolon;
    if (end < 0) end = packed.length;
    const eq = packed.indexOf('=', at);
    if (eq > at && eq < end) {
      const field = packed.slice(at, eq);
      const n = Number(packed.slice(eq + 1, end));
      if (Number.isFinite(n)) into.set(field, (into.get(field) ?? 0) + n);
    }
    at = end + 1;
  }
}

/** Two packed buckets added up. */
export function mergePacked(a: string | undefined, b: string): string {
  if (!a) return b;
  const fields: BucketFields = new Map();
  addPacked(fields, a);
  addPacked(fields, b);
  return packFields(fields);
}

export function addTo(fields: BucketFields, field: string, n: number): void {
  fields.set(field, (fields.get(field) ?? 0) + n);
}

/** Counts one record into `fields`. */
export function countRecord(fields: BucketFields, r: RollupRecord): void {
  addTo(fields, 'requests', 1);
  // A count no answer can have (1e308 from a record written before the check) would make the bucket Infinity.
  if (isTokenCount(r.tokens_used) && r.tokens_used > 0) addTo(fields, 'tokens', r.tokens_used);
  const micro = costMicroUsd(r.cost_usd);
  if (micro !== null && micro > 0) addTo(fields, 'cost_micro', micro);
  if (r.tool_calls > 0) addTo(fields, 'tool_calls', r.tool_calls);
  if (r.outcome !== 'ok') addTo(fields, `e:${r.outcome}`, 1);
  addTo(fields, `l:${latencyBucket(r.latency_ms)}`, 1);
}

/** Totals of merged buckets, as a usage report row shows them. */
export interface UsageTotals {
  requests: number;
  tokens: number;
  /** The records' cost_usd summed (in micro-dollars, exact) and given in dollars; 0 when none had a cost. */
  cost_usd: number;
  /** Tool calls the answers made (the records' `tool_calls`, counted). */
  tool_calls: number;
  errors: Record<string, number>;
  latency_ms: { p50: number | null; p99: number | null };
}

export function summarize(fields: BucketFields): UsageTotals {
  const errorList: [string, number][] = [];
  const histogram: number[] = [];
  for (const [field, n] of fields) {
    if (field.startsWith('e:')) errorList.push([field.slice(2), n]);
    else if (field.startsWith('l:')) histogram[Number(field.slice(2))] = n;
  }
  // Outcomes in name order: the same report reads the same whichever order buckets were merged in.
  const errors: Record<string, number> = {};
  for (const [outcome, n] of errorList.length > 1 ? errorList.sort((a, b) => (a[0] < b[0] ? -1 : 1)) : errorList) errors[outcome] = n;
  return {
    requests: fields.get('requests') ?? 0,
    tokens: fields.get('tokens') ?? 0,
    cost_usd: (fields.get('cost_micro') ?? 0) / 1_000_000,
    tool_calls: fields.get('tool_calls') ?? 0,
    errors,
    latency_ms: { p50: percentile(histogram, 0.5), p99: percentile(histogram, 0.99) },
  };
}

function percentile(histogram: number[], q: number): number | null {
  let total = 0;
  for (const n of histogram) total += n ?? 0;
  if (total === 0) return null;
  const rank = Math.ceil(q * total);
  let seen = 0;
  for (let i = 0; i < histogram.length; i++) {
    seen += histogram[i] ?? 0;
    if (seen >= rank) return Math.round(latencyBucketValueMs(i) * 100) / 100;
  }
  return null;
}
