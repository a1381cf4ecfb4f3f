// MCP servers (docs/mcp.md "Dashboard"): each configured server with its upstreams and their
// state (up, or ejected after a connection failure), the names of the headers it is sent
// (never their values), its allow-list and the tools it last listed, and its calls, errors and
// refusals — GET /admin/v1/mcp/servers, counted by the instance serving this page since it
// started. No server configured: a clear empty state.
import { api } from '../api.js';
import { Empty, ErrorState, Loading } from '../components/states.js';
import { formatCount, formatDateTime } from '../format.js';
import { useAsync } from '../hooks.js';
import type { ListAnswer, McpServer } from '../types.js';

function TargetState(props: { state: 'up' | 'ejected'; until: string | null }) {
  return (
    <span class={`badge badge-${props.state === 'up' ? 'active' : 'revoked'}`} title={props.until === null ? undefined : `left out of new sessions until ${props.until}`}>
      {props.state}
    </span>
  );
}

function Tools(props: { server: McpServer; nowMs: number }) {
  const { tools, listed_tools: listed } = props.server;
  return (
    <>
      <div>{tools === null ? <span class="muted">allow-list: every tool it lists</span> : <>allow-list: {tools.join(', ')}</>}</div>
      {listed === null ? (
        <div class="muted">not listed through this instance yet</div>
      ) : (
        <div class="mcp-listed" title={listed.listed_at}>
          <span class="muted">listed {formatDateTime(listed.listed_at, props.nowMs)}: </span>
          {listed.names.length === 0 ? <span class="muted">none</span> : listed.names.join(', ')}
          {listed.truncated ? <span class="muted"> (and more, not kept)</span> : null}
        </div>
      )}
    </>
  );
}

function Counted(props: { value: number | undefined }) {
  return props.value === undefined ? <span class="muted" title="The process serving this page runs no MCP front door">not reported</span> : <>{formatCount(props.value)}</>;
}

export function McpPage() {
  const data = useAsync(() => api.get<ListAnswer<McpServer>>('/admin/v1/mcp/servers'), []);
  const nowMs = Date.now();
  const servers = data.data?.data;
  const total = (pick: (counts: NonNullable<McpServer['counts']>) => number) => (servers ?? []).reduce((sum, s) => sum + (s.counts ? pick(s.counts) : 0), 0);

  return (
    <section aria-labelledby="mcp-title">
      <div class="page-header">
        <div>
          <h1 id="mcp-title">MCP servers</h1>
          <p class="muted">
            The MCP servers of the running config (<code>/mcp/{'{server}'}</code>), their upstreams and tools. Calls and errors are this instance's since it started.
          </p>
        </div>
        <button type="button" class="button" onClick={data.reload}>
          Refresh
        </button>
      </div>
      {data.error ? (
        <ErrorState error={data.error} retry={data.reload} />
      ) : servers === undefined ? (
        <Loading what="MCP servers" />
      ) : servers.length === 0 ? (
        <Empty title="No MCP servers configured.">
          <p>
            Name them under <code>mcp_servers</code> in the config (docs/mcp.md); keys then reach them at <code>/mcp/{'{server}'}</code>.
          </p>
        </Empty>
      ) : (
        <>
          <div class="stat-row">
            <div class="card stat">
              <p class="stat-label">Servers</p>
              <p class="stat-value">{servers.length}</p>
            </div>
            <div class="card stat">
              <p class="stat-label">Tool calls (this instance)</p>
              <p class="stat-value" data-testid="mcp-total-calls">{formatCount(total((c) => c.tool_calls))}</p>
            </div>
            <div class="card stat">
              <p class="stat-label">Errors (this instance)</p>
              <p class="stat-value" data-testid="mcp-total-errors">{formatCount(total((c) => c.tool_call_errors))}</p>
            </div>
          </div>
          <div class="table-wrap" role="region" aria-label="MCP servers" tabIndex={0}>
            <table class="table" data-testid="mcp-table">
              <thead>
                <tr>
                  <th scope="col">Server</th>
                  <th scope="col">Upstream</th>
                  <th scope="col">State</th>
                  <th scope="col">Tools</th>
                  <th scope="col" class="num">Calls</th>
                  <th scope="col" class="num">Errors</th>
                  <th scope="col" class="num">Refused</th>
                  <th scope="col" class="num">Sessions</th>
                  <th scope="col">Calls by tool</th>
                  <th scope="col">Timeout</th>
                </tr>
              </thead>
              <tbody>
                {servers.map((server) => {
                  const targets = server.targets ?? server.upstreams.map((u) => ({ ...u, state: undefined, ejected_until: null }));
                  const counts = server.counts ?? undefined;
                  return (
                    <tr key={server.name} data-mcp-server={server.name}>
                      <th scope="row">
                        <strong>{server.name}</strong>
                        <div class="muted">{server.transport}</div>
                        {server.header_names.length > 0 ? <div class="muted">sends headers: {server.header_names.join(', ')}</div> : null}
                      </th>
                      <td>
                        {targets.map((t) => (
                          <div key={t.url}>
                            <code class="breakable">{t.url}</code>
                            <span class="muted"> · weight {t.weight}</span>
                          </div>
                        ))}
                      </td>
                      <td>
                        {targets.map((t) => (
                          <div key={t.url} data-testid="mcp-target-state">
                            {t.state === undefined ? <span class="muted nowrap">not reported</span> : <TargetState state={t.state} until={t.ejected_until} />}
                          </div>
                        ))}
                      </td>
                      <td class="mcp-tools-cell">
                        <Tools server={server} nowMs={nowMs} />
                      </td>
                      <td class="num" data-testid="mcp-calls">
                        <Counted value={counts?.tool_calls} />
                      </td>
                      <td class="num" data-testid="mcp-errors">
                        <Counted value={counts?.tool_call_errors} />
                      </td>
                      <td class="num" data-testid="mcp-refused">
                        <Counted value={counts?.tool_calls_refused} />
                      </td>
                      <td class="num">
                        <Counted value={counts?.sessions} />
                      </td>
                      <td data-testid="mcp-by-tool">
                        {counts === undefined || counts.by_tool.length === 0 ? (
                          <span class="muted">none</span>
                        ) : (
                          counts.by_tool.map((t) => `${t.tool}: ${formatCount(t.calls)}${t.refused > 0 ? ` (${formatCount(t.refused)} refused)` : ''}`).join(', ')
                        )}
                      </td>
                      <td>{server.timeout}</td>
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
