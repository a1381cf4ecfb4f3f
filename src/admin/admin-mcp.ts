// GET /admin/v1/mcp/servers (docs/admin-api.md "MCP servers"): each configured MCP server with
// its transport, upstreams (URLs redacted as the agents' are), the names of the headers it is
// sent — never their values, which hold the server's credentials — its allow-lists, and, from
// the process that serves it, each upstream's state, the tools it last listed and its calls and
// errors (this instance's counts). Viewers read it.
import { z } from 'zod';
import { formatDurationMs } from '../config/duration.js';
import { redactedUrl } from '../config/redacted-url.js';
import type { McpServerConfig } from '../config/schema.js';
import type { McpServerState } from '../mcp/mcp-server-state.js';
import type { AdminExchange } from './admin-context.js';
import { sendJson } from './admin-context.js';
import { queryObject, validate } from './admin-request-body.js';

/** The route takes no parameters: any is a 400 naming it, so a typo is not read as a filter. */
const listMcpServersQuery = z.strictObject({});

function sortedOrNull(names: ReadonlySet<string> | null): string[] | null {
  return names === null ? null : [...names].sort();
}

function serverView(server: McpServerConfig, state: McpServerState | undefined) {
  return {
    name: server.name,
    transport: server.transport === 'http' ? 'streamable-http' : 'stdio',
    upstreams: server.upstreams.map((target) => ({ url: redactedUrl(target.url), weight: target.weight })),
    // null where this process serves no front door for the server (a --workers primary, or a
    // server added by a reload to a gateway that started without any): it reports no state.
    targets: state === undefined ? null : state.targets.map((target) => ({ ...target, url: redactedUrl(target.url) })),
    timeout: formatDurationMs(server.timeoutMs),
    header_names: Object.keys(server.headers).sort(),
    tools: sortedOrNull(server.tools),
    prompts: sortedOrNull(server.prompts),
    listed_tools: state?.listed_tools ?? null,
    counts: state?.counts ?? null,
  };
}

export async function listMcpServers(x: AdminExchange): Promise<void> {
  validate(listMcpServersQuery, queryObject(x.url.searchParams));
  const states = (await x.deps.mcpServers?.()) ?? {};
  const data = [...x.deps.config().mcpServers.values()].map((server) => serverView(server, Object.hasOwn(states, server.name) ? states[server.name] : undefined));
  sendJson(x.res, 200, { data });
}
