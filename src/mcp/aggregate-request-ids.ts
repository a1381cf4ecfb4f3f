// The ids of server-to-client requests (sampling, elicitation, roots) on the aggregated endpoint
// (docs/mcp.md "The aggregated endpoint"): several servers share one client, and each numbers
// its own requests (two may both send id 0). The gateway hands the client an id that names the
// server and keeps the original's type, and reads the client's answer back to both, with no
// state: any instance can route an answer, whichever instance relayed the request.
// One encoder, one typed decoder; nothing else parses these ids.
import type { JsonRpcId } from './json-rpc.js';
import { MCP_SERVER_NAME } from '../config/mcp-schema.js';

export interface UpstreamRequestId {
  server: string;
  id: JsonRpcId;
}

// `mcpgw:{server}:{n|s}:{original}`: n for a number id, s for a string id.
const PREFIX = 'mcpgw:';

export function encodeUpstreamRequestId(server: string, id: JsonRpcId): string {
  return `${PREFIX}${server}:${typeof id === 'number' ? 'n' : 's'}:${id}`;
}

/** The server and its own id, or undefined for an id the gateway did not issue. */
export function decodeUpstreamRequestId(value: JsonRpcId | null): UpstreamRequestId | undefined {
  if (typeof value !== 'string' || !value.startsWith(PREFIX)) return undefined;
  const serverEnd = value.indexOf(':', PREFIX.length);
  if (serverEnd === -1) return undefined;
  const server = value.slice(PREFIX.length, serverEnd);
  if (!MCP_SERVER_NAME.test(server)) return undefined;
  const kind = value.slice(serverEnd + 1, serverEnd + 3);
  const original = value.slice(serverEnd + 3);
  if (kind === 's:') return { server, id: original };
  if (kind !== 'n:' || original === '') return undefined;
  const id = Number(original);
  return Number.isFinite(id) && String(id) === original ? { server, id } : undefined;
}
