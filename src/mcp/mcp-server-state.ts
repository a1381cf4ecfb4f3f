// What this process knows of each MCP server it fronts, for the admin API's
// GET /admin/v1/mcp/servers (docs/admin-api.md "MCP servers"): its upstreams' state, the tools it
// last listed, and its calls and errors. The admin layer adds the configured fields and
// redacts the URLs; nothing here holds a configured header.
import { countsByServer, type McpServerCounts } from './mcp-counts.js';
import type { ListedTools, ListedToolsView } from './listed-tools.js';
import type { McpTargetSnapshot, McpUpstreams } from './mcp-upstreams.js';

export interface McpServerState {
  targets: McpTargetSnapshot[];
  listed_tools: ListedToolsView | null;
  counts: McpServerCounts;
}

export async function mcpServerStates(upstreams: McpUpstreams, listedTools: ListedTools): Promise<Record<string, McpServerState>> {
  const targets = upstreams.snapshot();
  const counts = await countsByServer(targets.keys());
  const out: Record<string, McpServerState> = {};
  for (const [server, list] of targets) out[server] = { targets: list, listed_tools: listedTools.view(server), counts: counts.get(server)! };
  return out;
}
