// A key's or an account's agent runs (`context.session_id`): the top runs of the range by
// cost, tokens, tool calls or turns, from GET /admin/v1/usage?group_by=session&sort=…, one
// ranked page. A run that loops (re-calling a tool, burning a budget) shows at the top.
import { useState } from 'preact/hooks';
import { api, query } from '../api.js';
import { ErrorState, Loading } from '../components/states.js';
import { formatCount, formatUsd } from '../format.js';
import { useAsync } from '../hooks.js';
import type { UsageReport } from '../types.js';
import { groupTotals } from './usage-series.js';

export type SessionSort = 'cost_usd' | 'tokens' | 'tool_calls' | 'requests';
const SORTS: { value: SessionSort; label: string }[] = [
  { value: 'cost_usd', label: 'Cost' },
  { value: 'tokens', label: 'Tokens' },
  { value: 'tool_calls', label: 'Tool calls' },
  { value: 'requests', label: 'Turns' },
];
/** How many runs the card lists. */
export const TOP_SESSIONS = 10;

export interface SessionsCardProps {
  keyId: string;
  account: string;
  agent: string;
  fromIso: string;
  toIso: string;
  /** Changes when the page refreshes. */
  refreshed: number;
}

export function SessionsCard(props: SessionsCardProps) {
  const [sort, setSort] = useState<SessionSort>('cost_usd');
  const whose = props.keyId ? `key ${props.keyId}` : `account ${props.account}`;
  const report = useAsync(async () => {
    if (!props.keyId && !props.account) return undefined;
    // Day rows of the ranked page: a run's total is the sum of its rows.
    const page = await api.get<UsageReport>(
      `/admin/v1/usage${query({ group_by: 'session', sort, granularity: 'day', from: props.fromIso, to: props.toIso, key_id: props.keyId, account: props.account, agent: props.agent, limit: TOP_SESSIONS })}`,
    );
    const totals = groupTotals(page.data);
    // groupTotals orders by requests; the page's own order is the ranking.
    const rank = new Map<string, number>();
    for (const row of page.data) if (!rank.has(row.group)) rank.set(row.group, rank.size);
    return totals.sort((a, b) => rank.get(a.group)! - rank.get(b.group)!);
  }, [props.keyId, props.account, props.agent, props.fromIso, props.toIso, props.refreshed, sort]);

  return (
    <div class="card sessions-card" data-testid="usage-sessions">
      <div class="card-header">
        <h2 class="card-title">Agent runs {props.keyId || props.account ? <span class="muted">· {whose}</span> : null}</h2>
        <label class="field field-inline">
          <span>Top by</span>
          <select name="session_sort" value={sort} onChange={(e) => setSort(e.currentTarget.value as SessionSort)}>
            {SORTS.map((s) => (
              <option key={s.value} value={s.value}>
                {s.label}
              </option>
            ))}
          </select>
        </label>
      </div>
      {!props.keyId && !props.account ? (
        <p class="muted">Enter a key ID or an account above to see its agent runs (requests that name a context.session_id), the costliest first.</p>
      ) : report.error ? (
        <ErrorState error={report.error} retry={report.reload} />
      ) : !report.data ? (
        <Loading what="agent runs" />
      ) : report.data.length === 0 ? (
        <p class="muted">No agent runs in this range: no request of this {props.keyId ? 'key' : 'account'} named a context.session_id.</p>
      ) : (
        <div class="table-wrap" tabIndex={0} role="region" aria-label={`Top agent runs of ${whose}`}>
          <table class="table table-compact">
            <thead>
              <tr>
                <th scope="col">Session</th>
                <th scope="col" class="num">Turns</th>
                <th scope="col" class="num">Tokens</th>
                <th scope="col" class="num">Tool calls</th>
                <th scope="col" class="num">Cost</th>
                <th scope="col" class="num">Errors</th>
              </tr>
            </thead>
            <tbody>
              {report.data.map((run) => (
                <tr key={run.group} data-session={run.group}>
                  <th scope="row" class="session-id">
                    <code title={run.group}>{run.group}</code>
                  </th>
                  <td class="num" data-col="requests">{formatCount(run.requests)}</td>
                  <td class="num" data-col="tokens">{formatCount(run.tokens)}</td>
                  <td class="num" data-col="tool_calls">{formatCount(run.tool_calls)}</td>
                  <td class="num" data-col="cost_usd">{formatUsd(run.cost_usd)}</td>
                  <td class="num" data-col="errors">{formatCount(run.errors)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}
