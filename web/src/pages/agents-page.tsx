// Agents: each configured agent's upstream(s) — with their state when the gateway reports
// it, and an A2A agent's skills from its card — and how it has fared recently: the last hour's requests and error rate (usage
// rollups), and upstream failures by kind and open streams since the process started
// (the admin listener's /metrics).
import { api } from '../api.js';
import { ErrorState, Loading } from '../components/states.js';
import { formatCount, formatPercent } from '../format.js';
import { useAsync } from '../hooks.js';
import type { Agent, ListAnswer } from '../types.js';
import { A2aSkills } from './a2a-skills.js';
import { fetchUsage } from '../usage/fetch-usage.js';
import { parseSamples, sumOf, type Sample } from '../usage/prometheus-text.js';
import { groupTotals } from '../usage/usage-series.js';

const HOUR_MS = 3_600_000;
/** Outcomes that say the runner failed, not the caller (rate limits, bad requests) — docs/audit.md. */
const UPSTREAM_OUTCOMES = ['upstream_error', 'timeout'];

function upstreamErrors(byOutcome: Record<string, number>): number {
  return UPSTREAM_OUTCOMES.reduce((total, outcome) => total + (byOutcome[outcome] ?? 0), 0);
}

const METRIC_NAMES = new Set(['agentgw_active_streams', 'agentgw_upstream_errors_total']);

async function loadMetrics(): Promise<Sample[] | undefined> {
  try {
    const response = await fetch('/metrics', { credentials: 'same-origin', cache: 'no-store' });
    return response.ok ? parseSamples(await response.text(), METRIC_NAMES) : undefined;
  } catch {
    return undefined;
  }
}

function StateBadge(props: { state: string | undefined }) {
  if (props.state === undefined) return <span class="muted nowrap" title="This gateway does not report upstream health">not reported</span>;
  const tone = /^(up|healthy|ok)$/i.test(props.state) ? 'active' : /^(down|ejected|unhealthy)$/i.test(props.state) ? 'revoked' : 'expired';
  return <span class={`badge badge-${tone}`}>{props.state}</span>;
}

export function AgentsPage() {
  const data = useAsync(async () => {
    const toMs = Date.now();
    const [agents, usage, metrics] = await Promise.all([
      api.get<ListAnswer<Agent>>('/admin/v1/agents'),
      fetchUsage({ group_by: 'agent', granularity: 'hour', from: new Date(toMs - HOUR_MS).toISOString(), to: new Date(toMs).toISOString() }),
      loadMetrics(),
    ]);
    return { agents: agents.data, lastHour: new Map(groupTotals(usage.data).map((t) => [t.group, t])), metrics };
  }, []);

  return (
    <section aria-labelledby="agents-title">
      <div class="page-header">
        <div>
          <h1 id="agents-title">Agents</h1>
          <p class="muted">The agents of the running config, their upstream runners, and how they have fared recently.</p>
        </div>
        <button type="button" class="button" onClick={data.reload}>
          Refresh
        </button>
      </div>
      {data.error ? (
        <ErrorState error={data.error} retry={data.reload} />
      ) : !data.data ? (
        <Loading what="agents" />
      ) : (
        <>
          <div class="stat-row">
            <div class="card stat">
              <p class="stat-label">Agents</p>
              <p class="stat-value">{data.data.agents.length}</p>
            </div>
            <div class="card stat">
              <p class="stat-label">Open streams (whole gateway)</p>
              <p class="stat-value" data-testid="active-streams">{data.data.metrics ? formatCount(sumOf(data.data.metrics, 'agentgw_active_streams')) : '—'}</p>
            </div>
          </div>
          <div class="table-wrap" role="region" aria-label="Agents" tabIndex={0}>
            <table class="table" data-testid="agents-table">
              <thead>
                <tr>
                  <th scope="col">Agent</th>
                  <th scope="col">Upstream</th>
                  <th scope="col">State</th>
                  <th scope="col" class="num">Requests (last hour)</th>
                  <th scope="col" class="num">Upstream error rate (last hour)</th>
                  <th scope="col">Upstream failures since start</th>
                  <th scope="col">Timeout</th>
                </tr>
              </thead>
              <tbody>
                {data.data.agents.map((agent) => {
                  const hour = data.data!.lastHour.get(agent.id);
                  const targets = agent.targets ?? agent.upstreams ?? [{ url: agent.upstream, state: agent.state }];
                  const failures = (data.data!.metrics ?? []).filter((s) => s.name === 'agentgw_upstream_errors_total' && s.labels.agent === agent.id && s.value > 0);
                  return (
                    <tr key={agent.id} data-agent={agent.id}>
                      <th scope="row">
                        <strong>{agent.id}</strong>
                        {agent.host ? <div class="muted">{agent.host}</div> : null}
                        {agent.protocol === 'a2a' ? <A2aSkills card={agent.a2a ?? null} /> : null}
                      </th>
                      <td>
                        {targets.map((t) => (
                          <div key={t.url}>
                            <code>{t.url}</code>
                            {t.weight !== undefined ? <span class="muted"> · weight {t.weight}</span> : null}
                          </div>
                        ))}
                      </td>
                      <td>
                        {targets.map((t) => (
                          <div key={t.url}>
                            <StateBadge state={t.state} />
                          </div>
                        ))}
                      </td>
                      <td class="num">{formatCount(hour?.requests ?? 0)}</td>
                      <td class="num" title={hour ? Object.entries(hour.errorsByOutcome).map(([o, n]) => `${o}: ${n}`).join(', ') || 'no errors' : undefined}>
                        {hour && hour.requests > 0 ? formatPercent(upstreamErrors(hour.errorsByOutcome) / hour.requests) : <span class="muted">no traffic</span>}
                      </td>
                      <td>{failures.length === 0 ? <span class="muted">none</span> : failures.map((s) => `${s.labels.kind ?? 'other'}: ${formatCount(s.value)}`).join(', ')}</td>
                      <td>{agent.timeout}</td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
        </>
      )}
    </section>
  );
}
