// GET /admin/v1/usage and `agent-gateway usage` (docs/admin-api.md "Usage", decision 0024):
// reads the period buckets of the groups asked for, never raw records, and merges them into
// one row per group and hour or day. A day row reads the day's bucket (one value), except
// for a day the range only partly covers, which adds up its hours in the range.
//
// Which family answers: the group_by dimension's own (key, account, agent) when no filter
// names another dimension; the tuple family (key, account and agent together) when one does
// (e.g. one key's usage per agent), its tuples filtered and relabelled. Which groups exist:
// the names in the range's day buckets, unless the query names its one group.
//
// Sessions (agent runs, `context.session_id`) have a family of their own, (key, account,
// agent, session): a report by session names the key or the account whose runs it lists.
//
// Pages: rows come in group order; a page holds whole groups, at most `limit` of them and
// at most MAX_PAGE_ROWS rows' worth (groups × periods), so any page reads a bounded number
// of buckets whatever the range and the number of groups. A report sorted by a measure
// (`sort`: the top keys, sessions... by cost, tokens, tool calls or requests over the range)
// first reads the range's totals of every matching group — at most MAX_SORTED_GROUPS of them —
// then pages through them in that order.
import { sessionOfGroupPart } from './rollup-record.js';
import { addPacked, summarize, type BucketFields, type UsageFamily, type UsageSpan, type UsageTotals } from './usage-buckets.js';

export type UsageGroupBy = 'key' | 'account' | 'agent' | 'session';
/** Measures a report may be sorted by, largest first. */
export const USAGE_SORTS = ['requests', 'tokens', 'cost_usd', 'tool_calls'] as const;
export type UsageSort = (typeof USAGE_SORTS)[number];
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
  /** Groups per page (further bounded by MAX_PAGE_ROWS); undefined: every group, one page. */
  limit?: number | undefined;
  /** Where this page starts: after this group in name order, or (sorted) after this many groups. */
  after?: string | undefined;
  /** Groups ordered by this measure over the range, largest first (then by name); undefined: by name. */
  sort?: UsageSort | undefined;
}

export interface UsageRow extends UsageTotals {
  group: string;
  /** Start of the hour or day, ISO 8601. */
  period: string;
}

export interface UsagePage {
  rows: UsageRow[];
  /** Where the next page starts when more groups follow (the last group, or for a sorted report how many groups came before), else null. */
  lastGroup: string | null;
}

/** A sorted report ranks at most this many groups: past it, the query must name a narrower filter. */
export const MAX_SORTED_GROUPS = 50_000;

/** A sorted report over more groups than it ranks. */
export class TooManyGroupsError extends Error {
  constructor(readonly groups: number) {
    super(`the report spans ${groups} groups; a sorted report ranks at most ${MAX_SORTED_GROUPS}`);
  }
}

/** A page holds at most this many rows' worth of groups (groups × periods of the range). */
export const MAX_PAGE_ROWS = 2_000;

/**
 * Where rollups are read from: Redis hashes, or the embedded mode's files. A period is
 * "2026-01-31T13" (span h) or "2026-01-31" (span d); a bucket is packed (usage-buckets.ts).
 */
export interface UsageSource {
  /** The groups of `family` with usage on any of these days. */
  groupNames(family: UsageFamily, days: readonly string[]): Promise<Set<string>>;
  /** Per period, the packed buckets of `groups` in their order (null where a group had none). */
  readGroups(family: UsageFamily, span: UsageSpan, periods: readonly string[], groups: readonly string[]): Promise<(string | null)[][]>;
}

const HOUR_MS = 3_600_000;

/** Every hour of [fromMs, toMs) as "YYYY-MM-DDTHH", the range widened to whole hours. */
export function hoursOf(fromMs: number, toMs: number): string[] {
  const hours: string[] = [];
  for (let t = Math.floor(fromMs / HOUR_MS) * HOUR_MS; t < toMs; t += HOUR_MS) hours.push(new Date(t).toISOString().slice(0, 13));
  return hours;
}

/** The buckets a report reads, by span, each with the row period it adds to. */
interface Reads {
  h: { periods: string[]; rowPeriods: string[] };
  d: { periods: string[]; rowPeriods: string[] };
  /** Row periods in order: how many rows a group can have. */
  rowPeriodCount: number;
  days: string[];
}

function readsOf(hours: readonly string[], granularity: UsageGranularity): Reads {
  const reads: Reads = { h: { periods: [], rowPeriods: [] }, d: { periods: [], rowPeriods: [] }, rowPeriodCount: 0, days: [] };
  const hoursByDay = new Map<string, string[]>();
  for (const hour of hours) {
    const day = hour.slice(0, 10);
    let list = hoursByDay.get(day);
    if (list === undefined) hoursByDay.set(day, (list = []));
    list.push(hour);
  }
  reads.days = [...hoursByDay.keys()];
  if (granularity === 'hour') {
    reads.h.periods = [...hours];
    reads.h.rowPeriods = hours.map((hour) => `${hour}:00:00Z`);
    reads.rowPeriodCount = hours.length;
    return reads;
  }
  for (const [day, dayHours] of hoursByDay) {
    const rowPeriod = `${day}T00:00:00Z`;
    // A whole day is its one day bucket; a day cut by the range adds up its hours in it.
    if (dayHours.length === 24) {
      reads.d.periods.push(day);
      reads.d.rowPeriods.push(rowPeriod);
    } else {
      for (const hour of dayHours) {
        reads.h.periods.push(hour);
        reads.h.rowPeriods.push(rowPeriod);
      }
    }
  }
  reads.rowPeriodCount = hoursByDay.size;
  return reads;
}

/** How the query's groups are found and labelled. */
interface Plan {
  family: UsageFamily;
  /** The query's one group, read without looking the range's groups up. */
  direct?: string;
  /** For the tuple and session families: the row label of a group the filters keep, else undefined. */
  labelOf?: (group: string) => string | undefined;
}

const LABEL_PART = { key: 0, account: 1, agent: 2 } as const;

function planOf(q: UsageQuery): Plan {
  if (q.groupBy === 'session') {
    // "key_id account agent session": the filters apply to the first three, the label is the run.
    return {
      family: 'session',
      labelOf: (group) => {
        const parts = group.split(' ');
        if (parts.length !== 4) return undefined;
        const [keyId, account, agent, session] = parts as [string, string, string, string];
        const kept = (q.keyId === undefined || keyId === q.keyId) && (q.account === undefined || account === q.account) && (q.agent === undefined || agent === q.agent);
        return kept ? sessionOfGroupPart(session) : undefined;
      },
    };
  }
  const groupBy = q.groupBy;
  const named = { key: q.keyId, account: q.account, agent: q.agent };
  const others = (['key', 'account', 'agent'] as const).filter((d) => d !== groupBy && named[d] !== undefined);
  if (others.length === 0) return named[groupBy] === undefined ? { family: groupBy } : { family: groupBy, direct: named[groupBy]! };
  return {
    family: 'tuple',
    labelOf: (group) => {
      const parts = group.split(' ');
      if (parts.length !== 3) return undefined;
      const [keyId, account, agent] = parts as [string, string, string];
      const kept = (q.keyId === undefined || keyId === q.keyId) && (q.account === undefined || account === q.account) && (q.agent === undefined || agent === q.agent);
      return kept ? parts[LABEL_PART[groupBy]] : undefined;
    },
  };
}

/** Every page of a report, as one list of rows (the CLI's and the library's report). */
export async function usageReport(source: UsageSource, q: UsageQuery): Promise<UsageRow[]> {
  return (await usageReportPage(source, { ...q, limit: undefined, after: undefined })).rows;
}

export async function usageReportPage(source: UsageSource, q: UsageQuery): Promise<UsagePage> {
  const hours = hoursOf(q.fromMs, q.toMs);
  if (hours.length === 0) return { rows: [], lastGroup: null };
  const reads = readsOf(hours, q.granularity);
  const plan = planOf(q);

  // Row label → the bucket groups that add up to it.
  const groupsByLabel = new Map<string, string[]>();
  if (plan.direct !== undefined) groupsByLabel.set(plan.direct, [plan.direct]);
  else {
    for (const group of await source.groupNames(plan.family, reads.days)) {
      const label = plan.labelOf === undefined ? group : plan.labelOf(group);
      if (label === undefined) continue;
      const list = groupsByLabel.get(label);
      if (list === undefined) groupsByLabel.set(label, [group]);
      else list.push(group);
    }
  }
  let labels = q.sort === undefined ? [...groupsByLabel.keys()].sort() : await rankedLabels(source, plan.family, reads, groupsByLabel, q.sort);
  let skipped = 0;
  if (q.after !== undefined) {
    if (q.sort === undefined) labels = labels.filter((label) => label > q.after!);
    else {
      skipped = Number(q.after);
      labels = labels.slice(skipped);
    }
  }
  const perPage = q.limit === undefined ? labels.length : Math.min(q.limit, Math.max(1, Math.floor(MAX_PAGE_ROWS / reads.rowPeriodCount)));
  const lastGroup = labels.length > perPage ? (q.sort === undefined ? labels[perPage - 1]! : String(skipped + perPage)) : null;
  labels = labels.slice(0, perPage);
  if (labels.length === 0) return { rows: [], lastGroup: null };

  const groups: string[] = [];
  const labelOfGroup: string[] = [];
  for (const label of labels) {
    for (const group of groupsByLabel.get(label)!) {
      groups.push(group);
      labelOfGroup.push(label);
    }
  }
  const [hourValues, dayValues] = await Promise.all([
    reads.h.periods.length > 0 ? source.readGroups(plan.family, 'h', reads.h.periods, groups) : [],
    reads.d.periods.length > 0 ? source.readGroups(plan.family, 'd', reads.d.periods, groups) : [],
  ]);

  // label → row period → merged fields
  const merged = new Map<string, Map<string, BucketFields>>();
  const add = (values: (string | null)[][], rowPeriods: readonly string[]) => {
    values.forEach((perGroup, p) => {
      const period = rowPeriods[p]!;
      perGroup.forEach((packed, g) => {
        if (!packed) return;
        const label = labelOfGroup[g]!;
        let periods = merged.get(label);
        if (periods === undefined) merged.set(label, (periods = new Map()));
        let fields = periods.get(period);
        if (fields === undefined) periods.set(period, (fields = new Map()));
        addPacked(fields, packed);
      });
    });
  };
  add(hourValues, reads.h.rowPeriods);
  add(dayValues, reads.d.rowPeriods);

  const rows: UsageRow[] = [];
  for (const label of labels) {
    const periods = merged.get(label);
    if (periods === undefined) continue;
    for (const period of [...periods.keys()].sort()) {
      const totals = summarize(periods.get(period)!);
      if (totals.requests > 0) rows.push({ group: label, period, ...totals });
    }
  }
  return { rows, lastGroup };
}

/**
 * The labels in the order of their totals of `sort` over the range, largest first (ties by
 * name). Reads the day buckets of whole days and the hour buckets of cut ones, as rows do.
 */
async function rankedLabels(source: UsageSource, family: UsageFamily, reads: Reads, groupsByLabel: Map<string, string[]>, sort: UsageSort): Promise<string[]> {
  if (groupsByLabel.size > MAX_SORTED_GROUPS) throw new TooManyGroupsError(groupsByLabel.size);
  const groups: string[] = [];
  const labelOfGroup: string[] = [];
  for (const [label, list] of groupsByLabel) {
    for (const group of list) {
      groups.push(group);
      labelOfGroup.push(label);
    }
  }
  const totals = new Map<string, BucketFields>();
  const [hourValues, dayValues] = await Promise.all([
    reads.h.periods.length > 0 ? source.readGroups(family, 'h', reads.h.periods, groups) : [],
    reads.d.periods.length > 0 ? source.readGroups(family, 'd', reads.d.periods, groups) : [],
  ]);
  for (const values of [hourValues, dayValues]) {
    for (const perGroup of values) {
      perGroup.forEach((packed, g) => {
        if (!packed) return;
        const label = labelOfGroup[g]!;
        let fields = totals.get(label);
        if (fields === undefined) totals.set(label, (fields = new Map()));
        addPacked(fields, packed);
      });
    }
  }
  const field = SORT_FIELD[sort];
  const measure = (label: string): number => totals.get(label)?.get(field) ?? 0;
  return [...groupsByLabel.keys()].sort((a, b) => measure(b) - measure(a) || (a < b ? -1 : a > b ? 1 : 0));
}

/** The bucket field each sort measure adds up (cost in whole micro-dollars). */
const SORT_FIELD: Record<UsageSort, string> = { requests: 'requests', tokens: 'tokens', cost_usd: 'cost_micro', tool_calls: 'tool_calls' };
