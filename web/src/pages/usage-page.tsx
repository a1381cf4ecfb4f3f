// Usage: requests, tokens, cost and errors over time — all traffic, or split by key, account or
// agent — from GET /admin/v1/usage (the audit pipeline's hourly rollups). The chart shows the
// values on hover; the table beside it has each group's totals; below, the top keys by
// requests and by tokens, and the top agent runs of the key or account filtered on.
// `#/usage?key_id=…` (or `account=…`) opens the page filtered, as the API Keys page links it.
import { useMemo, useState } from 'preact/hooks';
import { api } from '../api.js';
import { Empty, ErrorState, Loading } from '../components/states.js';
import { formatCount, formatUsd } from '../format.js';
import { useAsync, useAutoRefresh, useCatalog, useDebounced } from '../hooks.js';
import { AgentFilter } from '../components/form-parts.js';
import type { Granularity, GroupBy, KeyPage } from '../types.js';
import { fetchUsage } from '../usage/fetch-usage.js';
import { SERIES_COLORS, UsageChart } from '../usage/usage-chart.js';
import { buildSeries, groupTotals, periodStarts, topGroups, type GroupTotals, type Metric } from '../usage/usage-series.js';
import { USAGE_REFRESH_MS } from '../usage/usage-refresh.js';
import { SessionsCard } from '../usage/sessions-card.js';

const RANGES = { '24h': { label: 'Last 24 hours', ms: 86_400_000, granularity: 'hour' }, '7d': { label: 'Last 7 days', ms: 7 * 86_400_000, granularity: 'day' }, '30d': { label: 'Last 30 days', ms: 30 * 86_400_000, granularity: 'day' } } as const;
type Range = keyof typeof RANGES;
type Split = 'all' | GroupBy;
const METRICS: { value: Metric; label: string; unit: string }[] = [
  { value: 'requests', label: 'Requests', unit: 'requests' },
  { value: 'tokens', label: 'Tokens', unit: 'tokens' },
  { value: 'cost_usd', label: 'Cost (USD)', unit: 'USD' },
  { value: 'errors', label: 'Errors', unit: 'errors' },
];
const MAX_SERIES = 6;

/** The chart colour of a group: its own series', or the summed "others" series' (the last). */
function colorOf(series: readonly { label: string }[], group: string): string {
  const i = series.findIndex((s) => s.label === group);
  return SERIES_COLORS[(i === -1 ? series.length - 1 : i) % SERIES_COLORS.length]!;
}

function TopList(props: { title: string; rows: GroupTotals[]; by: 'requests' | 'tokens'; names: Map<string, string> }) {
  return (
    <div class="card top-list">
      <h3>{props.title}</h3>
      {props.rows.length === 0 ? (
        <p class="muted">No usage in this range.</p>
      ) : (
        <ol>
          {props.rows.map((row) => (
            <li key={row.group}>
              <span>
                <code>{row.group}</code> {props.names.get(row.group) ? <span class="muted">{props.names.get(row.group)}</span> : null}
              </span>
              <strong>{formatCount(row[props.by])}</strong>
            </li>
          ))}
        </ol>
      )}
    </div>
  );
}

export function UsagePage() {
  const catalog = useCatalog();
  const [metric, setMetric] = useState<Metric>('requests');
  const [split, setSplit] = useState<Split>('all');
  const [range, setRange] = useState<Range>('24h');
  const [granularity, setGranularity] = useState<Granularity>('hour');
  const linked = new URLSearchParams(location.hash.split('?')[1] ?? '');
  const [keyIdText, setKeyIdText] = useState(linked.get('key_id') ?? '');
  const [accountText, setAccountText] = useState(linked.get('account') ?? '');
  const keyId = useDebounced(keyIdText.trim(), 400);
  const account = useDebounced(accountText.trim(), 400);
  const [agent, setAgent] = useState('');
  const [refreshed, setRefreshed] = useState(0);
  useAutoRefresh(USAGE_REFRESH_MS, () => setRefreshed((n) => n + 1));

  const report = useAsync(async () => {
    const toMs = Date.now();
    const window = { from: new Date(toMs - RANGES[range].ms).toISOString(), to: new Date(toMs).toISOString(), granularity, key_id: keyId, account, agent };
    const groupBy: GroupBy = split === 'all' ? 'agent' : split;
    const [main, byKey, names] = await Promise.all([
      fetchUsage({ ...window, group_by: groupBy }),
      groupBy === 'key' ? undefined : fetchUsage({ ...window, group_by: 'key' }),
      // Key names for the top lists; the lists fall back to key ids without them.
      api.get<KeyPage>('/admin/v1/keys?limit=500').catch(() => undefined),
    ]);
    return { main, byKey: byKey ?? main, window, names: new Map((names?.data ?? []).filter((k) => k.name).map((k) => [k.key_id, k.name])) };
  }, [split, range, granularity, keyId, account, agent, refreshed]);

  const view = useMemo(() => {
    if (!report.data) return undefined;
    const { main, byKey } = report.data;
    const periodsMs = periodStarts(main.from, main.to, main.granularity);
    const series = buildSeries(main.data, periodsMs, metric, { combine: split === 'all', maxSeries: MAX_SERIES });
    const totals = groupTotals(main.data);
    const keyTotals = groupTotals(byKey.data);
    return { periodsMs, series, totals, topByRequests: topGroups(keyTotals, 'requests', 5), topByTokens: topGroups(keyTotals, 'tokens', 5) };
  }, [report.data, metric, split]);

  const unit = METRICS.find((m) => m.value === metric)!;
  const total = view?.series.reduce((a, s) => a + s.total, 0) ?? 0;
  const format = metric === 'cost_usd' ? formatUsd : formatCount;
  const chartLabel = `${unit.label} per ${granularity}, ${RANGES[range].label.toLowerCase()}: ${format(total)} in total`;
  const splitLabel = split === 'all' ? 'Agent' : split === 'key' ? 'Key' : split === 'account' ? 'Account' : 'Agent';

  return (
    <section aria-labelledby="usage-title">
      <div class="page-header">
        <div>
          <h1 id="usage-title">Usage</h1>
          <p class="muted">
            From the gateway's hourly rollups of its usage audit records. Times are in your time zone; days are UTC days. Refreshes every {USAGE_REFRESH_MS / 1000} s while this tab is
            visible.
          </p>
        </div>
        <button type="button" class="button" onClick={() => setRefreshed((n) => n + 1)}>
          Refresh
        </button>
      </div>

      <form class="filters" aria-label="Usage report" onSubmit={(e) => e.preventDefault()}>
        <div class="filter-row">
          <fieldset class="segmented">
            <legend class="visually-hidden">Show</legend>
            {METRICS.map((m) => (
              <label key={m.value}>
                <input type="radio" name="metric" value={m.value} checked={metric === m.value} onChange={() => setMetric(m.value)} />
                <span>{m.label}</span>
              </label>
            ))}
          </fieldset>
          <label class="field field-inline">
            <span>Split by</span>
            <select name="split" value={split} onChange={(e) => setSplit(e.currentTarget.value as Split)}>
              <option value="all">All traffic</option>
              <option value="key">Key</option>
              <option value="account">Account</option>
              <option value="agent">Agent</option>
            </select>
          </label>
          <label class="field field-inline">
            <span>Range</span>
            <select
              name="range"
              value={range}
              onChange={(e) => {
                const next = e.currentTarget.value as Range;
                setRange(next);
                setGranularity(RANGES[next].granularity);
              }}
            >
              {(Object.keys(RANGES) as Range[]).map((r) => (
                <option key={r} value={r}>
                  {RANGES[r].label}
                </option>
              ))}
            </select>
          </label>
          <label class="field field-inline">
            <span>Per</span>
            <select name="granularity" value={granularity} onChange={(e) => setGranularity(e.currentTarget.value as Granularity)}>
              <option value="hour">hour</option>
              <option value="day">day</option>
            </select>
          </label>
        </div>
        <div class="filter-row">
          <label class="field field-inline">
            <span>Key ID</span>
            <input type="search" name="key_id" value={keyIdText} onInput={(e) => setKeyIdText(e.currentTarget.value)} placeholder="any" size={14} />
          </label>
          <label class="field field-inline">
            <span>Account</span>
            <input type="search" name="account" value={accountText} onInput={(e) => setAccountText(e.currentTarget.value)} placeholder="any" size={10} />
          </label>
          <AgentFilter agents={catalog.data?.agents} value={agent} onChange={setAgent} />
        </div>
      </form>

      {report.error ? (
        <ErrorState error={report.error} retry={report.reload} />
      ) : !view ? (
        <Loading what="usage" />
      ) : (
        <>
          <div class="usage-grid" aria-busy={report.loading}>
            <div class="card chart-card">
              <h2 class="card-title">
                {unit.label} per {granularity} <span class="muted">· {format(total)} in total</span>
              </h2>
              <UsageChart periodsMs={view.periodsMs} series={view.series} granularity={granularity} unit={unit.unit} label={chartLabel} format={metric === 'cost_usd' ? 'usd' : 'count'} />
            </div>
            <div class="card totals-card">
              <h2 class="card-title">By {splitLabel.toLowerCase()}</h2>
              {view.totals.length === 0 ? (
                <Empty title="No usage in this range." />
              ) : (
                <table class="table table-compact" data-testid="usage-totals">
                  <thead>
                    <tr>
                      <th scope="col">{splitLabel}</th>
                      <th scope="col" class="num">Requests</th>
                      <th scope="col" class="num">Tokens</th>
                      <th scope="col" class="num">Cost</th>
                      <th scope="col" class="num">Errors</th>
                    </tr>
                  </thead>
                  <tbody>
                    {view.totals.map((row) => (
                      <tr key={row.group} data-group={row.group}>
                        <th scope="row" class="nowrap">
                          {split === 'all' ? null : <span class="swatch" style={{ background: colorOf(view.series, row.group) }} aria-hidden="true" />}
                          <code>{row.group}</code>
                        </th>
                        <td class="num" data-col="requests">{formatCount(row.requests)}</td>
                        <td class="num" data-col="tokens">{formatCount(row.tokens)}</td>
                        <td class="num" data-col="cost_usd">{formatUsd(row.cost_usd)}</td>
                        <td class="num" data-col="errors" title={Object.entries(row.errorsByOutcome).map(([o, n]) => `${o}: ${n}`).join(', ') || 'none'}>
                          {formatCount(row.errors)}
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              )}
            </div>
          </div>
          <div class="top-grid">
            <TopList title="Top keys by requests" rows={view.topByRequests} by="requests" names={report.data!.names} />
            <TopList title="Top keys by tokens" rows={view.topByTokens} by="tokens" names={report.data!.names} />
          </div>
          <SessionsCard keyId={keyId} account={account} agent={agent} fromIso={report.data!.window.from} toIso={report.data!.window.to} refreshed={refreshed} />
          <details class="card data-table">
            <summary>Data table</summary>
            <div class="table-wrap" tabIndex={0} role="region" aria-label={`${unit.label} per ${granularity}`}>
              <table class="table table-compact">
                <thead>
                  <tr>
                    <th scope="col">{granularity === 'hour' ? 'Hour (UTC)' : 'Day (UTC)'}</th>
                    {view.series.map((s) => (
                      <th scope="col" class="num" key={s.label}>
                        {s.label}
                      </th>
                    ))}
                  </tr>
                </thead>
                <tbody>
                  {view.periodsMs.map((t, i) => (
                    <tr key={t}>
                      <th scope="row">{new Date(t).toISOString().slice(0, granularity === 'hour' ? 16 : 10).replace('T', ' ')}</th>
                      {view.series.map((s) => (
                        <td class="num" key={s.label}>
                          {format(s.values[i]!)}
                        </td>
                      ))}
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          </details>
        </>
      )}
    </section>
  );
}
