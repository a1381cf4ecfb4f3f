// The Usage page's arithmetic (web/src/usage/usage-series.ts): every period of the range is
// present, values land in their period, groups beyond the series cap are summed, totals and
// top lists add up.
import { describe, expect, it } from 'vitest';
import { buildSeries, groupTotals, periodStarts, stackFromTop, topGroups } from '../../../web/src/usage/usage-series.js';
import type { UsageRow } from '../../../web/src/types.js';

const row = (group: string, period: string, requests: number, tokens = 0, errors: Record<string, number> = {}, cost = 0): UsageRow => ({
  group,
  period,
  requests,
  tokens,
  cost_usd: cost,
  errors,
  latency_ms: { p50: null, p99: null },
});

describe('periodStarts', () => {
  it('lists every hour of the range, the first rounded down', () => {
    const hours = periodStarts('2026-01-31T10:00:00.000Z', '2026-01-31T14:00:00.000Z', 'hour');
    expect(hours.map((t) => new Date(t).toISOString())).toEqual(['2026-01-31T10:00:00.000Z', '2026-01-31T11:00:00.000Z', '2026-01-31T12:00:00.000Z', '2026-01-31T13:00:00.000Z']);
  });

  it('lists UTC days, including the partial first and last', () => {
    const days = periodStarts('2026-01-29T15:00:00.000Z', '2026-01-31T03:00:00.000Z', 'day');
    expect(days.map((t) => new Date(t).toISOString().slice(0, 10))).toEqual(['2026-01-29', '2026-01-30', '2026-01-31']);
  });
});

describe('buildSeries', () => {
  const periods = periodStarts('2026-01-31T10:00:00Z', '2026-01-31T13:00:00Z', 'hour');
  const rows = [
    row('a', '2026-01-31T10:00:00Z', 5, 50, { rate_limited: 1 }),
    row('b', '2026-01-31T10:00:00Z', 2, 10),
    row('a', '2026-01-31T12:00:00Z', 3, 30, { upstream_error: 2, timeout: 1 }),
    row('c', '2026-01-31T11:00:00Z', 1, 500),
    // Outside the range: left out, not misplaced.
    row('a', '2026-01-31T09:00:00Z', 100),
  ];

  it('fills periods without usage with zeros and adds all traffic up', () => {
    expect(buildSeries(rows, periods, 'requests', { combine: true, maxSeries: 6 })).toEqual([{ label: 'All traffic', values: [7, 1, 3], total: 11 }]);
    expect(buildSeries([], periods, 'requests', { combine: true, maxSeries: 6 })).toEqual([{ label: 'All traffic', values: [0, 0, 0], total: 0 }]);
  });

  it('gives each group a series, largest first, for the chosen metric', () => {
    expect(buildSeries(rows, periods, 'tokens', { combine: false, maxSeries: 6 }).map((s) => [s.label, s.values])).toEqual([
      ['c', [0, 500, 0]],
      ['a', [50, 0, 30]],
      ['b', [10, 0, 0]],
    ]);
    expect(buildSeries(rows, periods, 'errors', { combine: false, maxSeries: 6 }).map((s) => [s.label, s.total])).toEqual([
      ['a', 4],
      ['b', 0],
      ['c', 0],
    ]);
  });

  it('charts cost in dollars per period', () => {
    const costly = [row('a', '2026-01-31T10:00:00Z', 1, 0, {}, 0.1), row('b', '2026-01-31T10:00:00Z', 1, 0, {}, 0.2), row('a', '2026-01-31T12:00:00Z', 1, 0, {}, 0.018)];
    expect(buildSeries(costly, periods, 'cost_usd', { combine: false, maxSeries: 6 }).map((s) => [s.label, s.values])).toEqual([
      ['b', [0.2, 0, 0]],
      ['a', [0.1, 0, 0.018]],
    ]);
  });

  it('sums the groups beyond the cap into one series', () => {
    const series = buildSeries(rows, periods, 'requests', { combine: false, maxSeries: 2 });
    expect(series).toEqual([
      { label: 'a', values: [5, 0, 3], total: 8 },
      { label: '2 others', values: [2, 1, 0], total: 3 },
    ]);
  });
});

describe('groupTotals and topGroups', () => {
  const rows = [
    row('k1', '2026-01-31T10:00:00Z', 4, 10, { rate_limited: 1 }, 0.1),
    row('k2', '2026-01-31T10:00:00Z', 9, 5),
    row('k1', '2026-01-31T11:00:00Z', 6, 40, { rate_limited: 2, timeout: 1 }, 0.2),
    row('k3', '2026-01-31T11:00:00Z', 0, 0),
  ];

  it('adds each group’s requests, tokens, cost (exactly: 0.1 + 0.2 is 0.3) and errors by outcome', () => {
    expect(groupTotals(rows)).toEqual([
      { group: 'k1', requests: 10, tokens: 50, cost_usd: 0.3, tool_calls: 0, errors: 4, errorsByOutcome: { rate_limited: 3, timeout: 1 } },
      { group: 'k2', requests: 9, tokens: 5, cost_usd: 0, tool_calls: 0, errors: 0, errorsByOutcome: {} },
      { group: 'k3', requests: 0, tokens: 0, cost_usd: 0, tool_calls: 0, errors: 0, errorsByOutcome: {} },
    ]);
    // Tool calls add up; a row from a gateway older than them counts none.
    const withCalls = [{ ...rows[0]!, tool_calls: 3 }, { ...rows[2]!, tool_calls: 4 }, rows[1]!];
    expect(groupTotals(withCalls).map((t) => [t.group, t.tool_calls])).toEqual([['k1', 7], ['k2', 0]]);
  });

  it('ranks by requests or tokens and leaves out groups with none', () => {
    const totals = groupTotals(rows);
    expect(topGroups(totals, 'requests', 5).map((t) => t.group)).toEqual(['k1', 'k2']);
    expect(topGroups(totals, 'tokens', 1).map((t) => t.group)).toEqual(['k1']);
  });
});

describe('stackFromTop', () => {
  it('gives each series the height of itself and every series after it', () => {
    const series = [
      { label: 'a', values: [5, 0, 3], total: 8 },
      { label: 'b', values: [2, 1, 0], total: 3 },
      { label: 'c', values: [1, 1, 1], total: 3 },
    ];
    expect(stackFromTop(series)).toEqual([
      [8, 2, 4],
      [3, 2, 1],
      [1, 1, 1],
    ]);
    // The inputs are left as they were (the legend reads them).
    expect(series[0]!.values).toEqual([5, 0, 3]);
    expect(stackFromTop([])).toEqual([]);
  });
});
