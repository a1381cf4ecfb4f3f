// One request to the aggregated endpoint `/mcp` (docs/mcp.md "The aggregated endpoint"), and the
// bridge to the per-server stages: a request routed to one server becomes an McpExchange of that
// server (its upstream session in place of the gateway's per-server record), handed to the same
// forward, relay, limits and audit functions `/mcp/{server}` uses (mcp-forward.ts, mcp-post.ts),
// with a door whose "session lost" drops that server's upstream session only.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { GatewayConfig, McpServerConfig } from '../config/schema.js';
import type { AuthenticatedKey } from '../keys/key-record.js';
import type { AggregateSessionRecord, AggregateUpstream } from './aggregate-session-record.js';
import type { JsonRpcId } from './json-rpc.js';
import { jsonRpcRefusal } from './mcp-answers.js';
import type { McpDoor } from './mcp-door.js';
import type { McpExchange } from './mcp-exchange.js';
import type { EventRewrite } from './mcp-relay.js';

export interface AggregateRequest {
  req: IncomingMessage;
  res: ServerResponse;
  config: GatewayConfig;
  key: AuthenticatedKey;
  requestId: string;
  clientIp: string;
  /** MCP-Protocol-Version as sent (undefined: absent). */
  protocol: string | undefined;
  startedAt: number;
  startedPerf: number;
  /** The gateway session id and its record, once known. */
  sessionId?: string;
  record?: AggregateSessionRecord;
}

/** The request as one server's exchange: its upstream session (undefined: none yet, initialize), its SSE events rewritten by `rewrite`. */
export function serverExchange(request: AggregateRequest, server: McpServerConfig, upstream: AggregateUpstream | undefined, rewrite?: EventRewrite): McpExchange {
  const exchange: McpExchange = {
    req: request.req,
    res: request.res,
    config: request.config,
    server,
    key: request.key,
    requestId: request.requestId,
    clientIp: request.clientIp,
    protocol: request.protocol,
    startedAt: request.startedAt,
    startedPerf: request.startedPerf,
  };
  if (request.sessionId !== undefined) exchange.sessionId = request.sessionId;
  if (upstream !== undefined && request.record !== undefined) {
    exchange.session = { server: server.name, keyId: request.key.keyId, target: upstream.target, upstreamSession: upstream.upstreamSession, protocol: request.record.protocol };
  }
  if (rewrite !== undefined) exchange.rewrite = rewrite;
  // As on /mcp/{server}: the client's traceparent reaches the server (a call's span replaces it when tracing is on).
  const clientTrace = request.req.headers.traceparent;
  if (typeof clientTrace === 'string') exchange.traceparent = clientTrace;
  return exchange;
}

/**
 * The front door as the per-server stages see it for one server of an aggregated session: an
 * upstream session that is gone (404, or its target no longer configured) drops that server's
 * part of the session, and the request is answered 502 `-32603` carrying its id; the next
 * request that needs the server opens a new upstream session. The other servers' sessions and
 * the gateway's stay.
 */
export function serverDoor(front: McpDoor, request: AggregateRequest, dropUpstream: (server: string) => Promise<void>, id: JsonRpcId | null): McpDoor {
  return {
    deps: front.deps,
    upstreams: front.upstreams,
    transportFor: (server) => front.transportFor(server),
    toolLabels: front.toolLabels,
    listedTools: front.listedTools,
    sessionGauge: front.sessionGauge,
    session: () => Promise.reject(new Error('an aggregated session is resolved by the aggregated endpoint')),
    async sessionLost(exchange: McpExchange): Promise<never> {
      await dropUpstream(exchange.server.name).catch(() => undefined);
      throw jsonRpcRefusal(502, id, 'internal_error', `The MCP server ${exchange.server.name} ended its session; the next request to it opens a new one.`, { outcome: 'upstream_error' });
    },
    cancel: (exchange, requestId) => front.cancel(exchange, requestId),
  };
}
