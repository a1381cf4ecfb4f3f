// Usage report rows → what the Usage page draws: one value per period for every period of
// the range (periods without usage are zeros, not gaps), the busiest groups as their own
// series and the rest summed, and each group's totals. Pure, so it is unit-tested.
import type { Granularity, UsageRow } from '../types.js';

export type Metric = 'requests' | 'tokens' | 'cost_usd' | 'errors';

export interface Series {
  label: string;
  values: number[];
  total: number;
}

export interface GroupTotals {
  group: string;
  requests: number;
  tokens: number;
  /** In micro-dollars while summing (exact), dollars once summed. */
  cost_usd: number;
  tool_calls: number;
  errors: number;
  errorsByOutcome: Record<string, number>;
}

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

export function stepMs(granularity: Granularity): number {
  return granularity === 'hour' ? HOUR_MS : DAY_MS;
}

/** Start of every hour or UTC day in [from, to), as epoch ms — the periods the report may name. */
export function periodStarts(fromIso: string, toIso: string, granularity: Granularity): number[] {
  const step = stepMs(granularity);
  const toMs = Date.parse(toIso);
  const starts: number[] = [];
  for (let t = Math.floor(Date.parse(fromIso) / step) * step; t < toMs; t += step) starts.push(t);
  return starts;
}

export function errorCount(row: UsageRow): number {
  let total = 0;
  for (const n of Object.values(row.errors)) total += n;
  return total;
}

export function metricOf(row: UsageRow, metric: Metric): number {
  if (metric === 'cost_usd') return row.cost_usd ?? 0;
  return metric === 'errors' ? errorCount(row) : row[metric];
}

/** Totals per group over the whole range, busiest (by requests) first. */
export function groupTotals(rows: readonly UsageRow[]): GroupTotals[] {
  const byGroup = new Map<string, GroupTotals>();
  for (const row of rows) {
    let totals = byGroup.get(row.group);
    if (totals === undefined) byGroup.set(row.group, (totals = { group: row.group, requests: 0, tokens: 0, cost_usd: 0, tool_calls: 0, errors: 0, errorsByOutcome: {} }));
    totals.requests += row.requests;
    // Rows from a gateway older than tool-call counting have none.
    totals.tool_calls += row.tool_calls ?? 0;
    totals.tokens += row.tokens;
    totals.cost_usd += Math.round((row.cost_usd ?? 0) * 1_000_000);
    for (const [outcome, n] of Object.entries(row.errors)) {
      totals.errors += n;
      totals.errorsByOutcome[outcome] = (totals.errorsByOutcome[outcome] ?? 0) + n;
    }
  }
  for (const totals of byGroup.values()) totals.cost_usd /= 1_000_000;
  return [...byGroup.values()].sort((a, b) => b.requests - a.requests || a.group.localeCompare(b.group));
}

/** The `n` groups with the most of `by`, leaving out those with none. */
export function topGroups(totals: readonly GroupTotals[], by: 'requests' | 'tokens', n: number): GroupTotals[] {
  return totals
    .filter((t) => t[by] > 0)
    .sort((a, b) => b[by] - a[by] || a.group.localeCompare(b.group))
    .slice(0, n);
}

/**
 * One series per group for `metric` over `periods` (epoch ms starts), the `maxSeries`
 * largest by total on their own and the rest summed into "other"; or, with `combine`, one
 * series of all traffic.
 */
export function buildSeries(rows: readonly UsageRow[], periods: readonly number[], metric: Metric, options: { combine: boolean; maxSeries: number; combinedLabel?: string }): Series[] {
  const index = new Map(periods.map((t, i) => [t, i]));
  const byGroup = new Map<string, number[]>();
  for (const row of rows) {
    const i = index.get(Date.parse(row.period));
    if (i === undefined) continue;
    const label = options.combine ? (options.combinedLabel ?? 'All traffic') : row.group;
    let values = byGroup.get(label);
    if (values === undefined) byGroup.set(label, (values = new Array<number>(periods.length).fill(0)));
    values[i]! += metricOf(row, metric);
  }
  const series = [...byGroup.entries()].map(([label, values]) => ({ label, values, total: values.reduce((a, b) => a + b, 0) }));
  if (options.combine && series.length === 0) return [{ label: options.combinedLabel ?? 'All traffic', values: new Array<number>(periods.length).fill(0), total: 0 }];
  series.sort((a, b) => b.total - a.total || a.label.localeCompare(b.label));
  if (series.length <= options.maxSeries) return series;
  const kept = series.slice(0, options.maxSeries - 1);
  const rest = series.slice(options.maxSeries - 1);
  const values = new Array<number>(periods.length).fill(0);
  for (const s of rest) s.values.forEach((v, i) => (values[i]! += v));
  kept.push({ label: `${rest.length} others`, values, total: rest.reduce((a, s) => a + s.total, 0) });
  return kept;
}

/**
 * Stack heights: entry k is the sum of series k..n-1. uPlot draws series in order, so the
 * tallest (everything) goes first and each later, shorter one covers all but its own band.
 */
export function stackFromTop(series: readonly Series[]): number[][] {
  const stacked = series.map((s) => [...s.values]);
  for (let k = stacked.length - 2; k >= 0; k--) stacked[k] = stacked[k]!.map((v, i) => v + stacked[k + 1]![i]!);
  return stacked;
}
