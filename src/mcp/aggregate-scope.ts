// Which servers, tools and prompts the aggregated endpoint shows a caller (docs/mcp.md "The
// aggregated endpoint"): the servers both configured and in the key's `mcp` scope, and on each
// what `/mcp/{server}` would show (tool-visibility.ts). A name whose server is not one of those,
// and a name the server's visibility hides, are one and the same answer to the client.
import type { GatewayConfig, McpServerConfig } from '../config/schema.js';
import type { AuthenticatedKey } from '../keys/key-record.js';
import { splitQualifiedName } from './aggregate-names.js';
import { visibilityFor } from './tool-visibility.js';

/**
 * The servers the key may use, in the configuration's order. Streamable HTTP servers only: a
 * stdio server's session is a child process of its own, served on `/mcp/{server}` (decision 0100).
 */
export function serversInScope(config: GatewayConfig, key: AuthenticatedKey): McpServerConfig[] {
  const scope = key.mcp;
  if (scope == null) return [];
  const servers: McpServerConfig[] = [];
  for (const server of config.mcpServers.values()) if (server.transport === 'http' && Object.hasOwn(scope, server.name)) servers.push(server);
  return servers;
}

export interface ResolvedName {
  server: McpServerConfig;
  /** The name on the server (the prefix stripped). */
  name: string;
  /** Whether the caller may use it (in the key's scope and the server's allow-list). */
  visible: boolean;
}

/** A `{server}__{name}` of a server the key may use; undefined for any other value (malformed, unknown server, server outside the scope). */
export function resolveName(config: GatewayConfig, key: AuthenticatedKey, qualified: unknown, kind: 'tool' | 'prompt'): ResolvedName | undefined {
  if (typeof qualified !== 'string') return undefined;
  const split = splitQualifiedName(qualified);
  if (split === undefined || key.mcp == null || !Object.hasOwn(key.mcp, split.server)) return undefined;
  const server = config.mcpServers.get(split.server);
  if (server === undefined || server.transport !== 'http') return undefined;
  return { server, name: split.name, visible: visibilityFor(server, key)[kind](split.name) };
}
