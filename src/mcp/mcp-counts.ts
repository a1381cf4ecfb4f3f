// Each MCP server's calls and errors as this process counted them (docs/mcp.md "Dashboard"):
// read from the front door's own metrics (agentgw_mcp_requests_total, agentgw_mcp_tool_calls_total,
// agentgw_mcp_sessions), never counted a second time. Since this process started, this
// instance only: other instances (and a --workers gateway's other workers) count their own.
import { metrics } from '../metrics/metrics.js';

/** Outcomes of a forwarded `tools/call` that say it failed: the server's JSON-RPC error, or no usable answer. */
const FAILED_CALL_OUTCOMES: ReadonlySet<string> = new Set(['error', 'upstream_error', 'timeout']);

export interface McpToolCounts {
  /** A tool the server listed, or `other` (the metric's bounded label). */
  tool: string;
  /** Calls forwarded to the server. */
  calls: number;
  /** Calls answered by the gateway: outside the key's scope, or over a limit or quota. */
  refused: number;
}

export interface McpServerCounts {
  /** Every request to /mcp/{server} this process answered (every method). */
  requests: number;
  /** `tools/call` forwarded to the server. */
  tool_calls: number;
  /** Forwarded calls that failed: a JSON-RPC error answer, the server unreachable or out of time, the answer cut. */
  tool_call_errors: number;
  /** `tools/call` the gateway answered itself (outside the scope, rate limited, quota spent). */
  tool_calls_refused: number;
  /** Sessions opened here and still in use (agentgw_mcp_sessions). */
  sessions: number;
  /** Per tool, most calls first. */
  by_tool: McpToolCounts[];
}

function emptyCounts(): McpServerCounts {
  return { requests: 0, tool_calls: 0, tool_call_errors: 0, tool_calls_refused: 0, sessions: 0, by_tool: [] };
}

/** The counts of each of `servers` (every one present, zeros where nothing was counted). */
export async function countsByServer(servers: Iterable<string>): Promise<Map<string, McpServerCounts>> {
  const out = new Map<string, McpServerCounts>();
  for (const server of servers) out.set(server, emptyCounts());
  const [requests, toolCalls, sessions] = await Promise.all([metrics.mcpRequests.get(), metrics.mcpToolCalls.get(), metrics.mcpSessions.get()]);
  for (const { labels, value } of requests.values) {
    const counts = out.get(String(labels.server));
    if (counts === undefined) continue;
    counts.requests += value;
    if (labels.method === 'tools/call' && FAILED_CALL_OUTCOMES.has(String(labels.outcome))) counts.tool_call_errors += value;
  }
  const byTool = new Map<string, Map<string, McpToolCounts>>();
  for (const { labels, value } of toolCalls.values) {
    const server = String(labels.server);
    const counts = out.get(server);
    if (counts === undefined) continue;
    const forwarded = labels.verdict === 'forwarded';
    if (forwarded) counts.tool_calls += value;
    else counts.tool_calls_refused += value;
    let tools = byTool.get(server);
    if (tools === undefined) byTool.set(server, (tools = new Map()));
    const tool = String(labels.tool);
    let entry = tools.get(tool);
    if (entry === undefined) tools.set(tool, (entry = { tool, calls: 0, refused: 0 }));
    if (forwarded) entry.calls += value;
    else entry.refused += value;
  }
  for (const [server, tools] of byTool) out.get(server)!.by_tool = [...tools.values()].sort((a, b) => b.calls - a.calls || b.refused - a.refused || a.tool.localeCompare(b.tool));
  for (const { labels, value } of sessions.values) {
    const counts = out.get(String(labels.server));
    if (counts !== undefined) counts.sessions += value;
  }
  return out;
}
