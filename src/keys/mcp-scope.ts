// A key's MCP scope (docs/mcp.md "Scopes"): `{ server: [tool, ...] }`, `["*"]` for every tool
// of a server. A server absent from it is not reachable with the key; null (the field absent):
// no MCP server at all, so an old key gains nothing when MCP servers are configured.

/** Server name → the tools (and prompts) the key may use there; "*" alone: all of them. */
export type McpScope = Readonly<Record<string, readonly string[]>>;

export const MAX_SCOPE_SERVERS = 64;
export const MAX_SCOPE_SERVER_TOOLS = 256;
const SERVER_NAME = /^[a-z0-9](?:[a-z0-9-]|_(?!_)){0,62}$/;
const TOOL_NAME = /^(?:\*|[A-Za-z0-9_][A-Za-z0-9_.\-/]{0,127})$/;

/** The scope as given, or an Error naming the field (`mcp.files[2]`) and what is wrong. */
export function checkMcpScope(value: unknown): { scope: Record<string, string[]> | null } | { error: string; param: string } {
  if (value === null || value === undefined) return { scope: null };
  if (typeof value !== 'object' || Array.isArray(value)) return { error: 'mcp must be an object of server names to lists of tools, or null', param: 'mcp' };
  const servers = Object.keys(value);
  if (servers.length > MAX_SCOPE_SERVERS) return { error: `mcp names at most ${MAX_SCOPE_SERVERS} servers (got ${servers.length})`, param: 'mcp' };
  const scope: Record<string, string[]> = {};
  for (const server of servers) {
    if (!SERVER_NAME.test(server)) return { error: `mcp: ${JSON.stringify(server)} is not a server name (lowercase letters, digits, "-" or single "_")`, param: `mcp.${server}` };
    const tools: unknown = (value as Record<string, unknown>)[server];
    if (!Array.isArray(tools)) return { error: `mcp.${server} must be a list of tool names ("*" for all)`, param: `mcp.${server}` };
    if (tools.length > MAX_SCOPE_SERVER_TOOLS) return { error: `mcp.${server} holds at most ${MAX_SCOPE_SERVER_TOOLS} names`, param: `mcp.${server}` };
    const seen = new Set<string>();
    for (let i = 0; i < tools.length; i++) {
      const tool: unknown = tools[i];
      if (typeof tool !== 'string' || !TOOL_NAME.test(tool)) return { error: `mcp.${server}[${i}]: a tool name is 1–128 characters from A–Z a–z 0–9 _ . - / (or "*")`, param: `mcp.${server}[${i}]` };
      if (seen.has(tool)) return { error: `mcp.${server}[${i}]: "${tool}" is listed twice`, param: `mcp.${server}[${i}]` };
      seen.add(tool);
    }
    scope[server] = [...(tools as string[])];
  }
  return { scope };
}

/**
 * The authenticator's target for the aggregated endpoint `/mcp`: a key whose scope names at
 * least one server. `*` is never a server name, so it cannot be one server's target.
 */
export const MCP_AGGREGATE_TARGET = 'mcp:*';

/** The authenticator's target for an MCP server: beside the key's agents, never an agent id (those have no ':'). */
export function mcpTarget(server: string): string {
  return `mcp:${server}`;
}
