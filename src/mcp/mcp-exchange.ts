// One request to the MCP front door as its stages see it: what the first stages decided
// (server, key, protocol revision, session) and what the last one reports.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { GatewayConfig, McpServerConfig } from '../config/schema.js';
import type { AuthenticatedKey } from '../keys/key-record.js';
import type { McpSessionRecord } from './mcp-session-record.js';
import type { EventRewrite } from './mcp-relay.js';

/** The protocol revisions the front door speaks (docs/mcp.md); a header naming another is 400. */
export const PROTOCOL_REVISIONS: ReadonlySet<string> = new Set(['2025-11-25', '2025-06-18', '2025-03-26']);
/** What a request without MCP-Protocol-Version is read as (the specification's rule). */
export const DEFAULT_PROTOCOL_REVISION = '2025-03-26';

export interface McpExchange {
  req: IncomingMessage;
  res: ServerResponse;
  config: GatewayConfig;
  server: McpServerConfig;
  key: AuthenticatedKey;
  requestId: string;
  clientIp: string;
  /** MCP-Protocol-Version as sent (undefined: absent, read as DEFAULT_PROTOCOL_REVISION). */
  protocol: string | undefined;
  /** Epoch ms and performance.now() at arrival. */
  startedAt: number;
  startedPerf: number;
  /** The gateway session id and its record, once known. */
  sessionId?: string;
  session?: McpSessionRecord;
  /** What the server is sent as `traceparent`: the request's span when tracing is on, else the client's. */
  traceparent?: string;
  /** The aggregated endpoint's rewrite of a server's SSE events (undefined on `/mcp/{server}`: bytes pass as they are). */
  rewrite?: EventRewrite;
}

/** Whether JSON-RPC batches are allowed: only in 2025-03-26 (removed in 2025-06-18). */
export function allowsBatches(protocol: string | undefined): boolean {
  return (protocol ?? DEFAULT_PROTOCOL_REVISION) === '2025-03-26';
}
