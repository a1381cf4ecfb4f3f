// Which tools (and prompts) a caller sees and may call on one MCP server (docs/mcp.md
// "Scopes"): those inside both the key's scope for the server and the server's allow-list.
// `tools/list` is filtered to them, and a `tools/call` of any other tool is answered as the
// server answers a tool it does not have, so a scope cannot be enumerated.
import type { McpServerConfig } from '../config/schema.js';
import type { AuthenticatedKey } from '../keys/key-record.js';

export interface Visibility {
  tool(name: string): boolean;
  prompt(name: string): boolean;
}

function inScope(scope: readonly string[] | undefined, name: string): boolean {
  return scope !== undefined && (scope.includes('*') || scope.includes(name));
}

export function visibilityFor(server: McpServerConfig, key: AuthenticatedKey): Visibility {
  const scope = key.mcp?.[server.name];
  return {
    tool: (name) => inScope(scope, name) && (server.tools === null || server.tools.has(name)),
    prompt: (name) => inScope(scope, name) && (server.prompts === null || server.prompts.has(name)),
  };
}

/**
 * A `tools/list` or `prompts/list` result with only the visible entries; the rest of the
 * result (nextCursor, _meta) as the server sent it. Entries that are not objects with a
 * string name are dropped: a hostile server's garbage never reaches the client as a tool.
 */
export function filterListResult(result: unknown, field: 'tools' | 'prompts', visible: (name: string) => boolean, listed?: (name: string) => void): unknown {
  if (typeof result !== 'object' || result === null || Array.isArray(result)) return result;
  const entries = (result as Record<string, unknown>)[field];
  if (!Array.isArray(entries)) return result;
  const kept: unknown[] = [];
  for (const entry of entries) {
    const name = typeof entry === 'object' && entry !== null ? (entry as { name?: unknown }).name : undefined;
    if (typeof name !== 'string') continue;
    listed?.(name);
    if (visible(name)) kept.push(entry);
  }
  return { ...(result as Record<string, unknown>), [field]: kept };
}
