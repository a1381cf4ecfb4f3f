// The front door's call to an MCP server (docs/mcp.md "Configuration", "Sessions across
// instances"): the server's configured headers (its credentials: never the client's
// Authorization, which is the gateway's key), the upstream session id in place of the
// gateway's, the server's deadline for its answer's headers (and, for a POST, between its
// bytes). An answer of 404 to a session is a lost session; 401/403 mean the gateway's
// credentials were refused, which the client cannot fix: 502, and the server's words stay here.
import type { Dispatcher } from 'undici';
import { jsonRpcRefusal } from './mcp-answers.js';
import type { McpExchange } from './mcp-exchange.js';
import type { McpDoor } from './mcp-door.js';
import { relayUnbuffered, type RelayOutcome } from './mcp-relay.js';
import type { McpTarget } from './mcp-upstreams.js';
import type { JsonRpcId } from './json-rpc.js';

export interface ForwardOptions {
  method: 'POST' | 'GET' | 'DELETE';
  /** A long-lived answer (the GET stream): no deadline between its bytes. */
  stream: boolean;
  body?: Buffer;
  /** The target of a new session (initialize); otherwise the session's. */
  target?: McpTarget;
  /** The JSON-RPC id the client's request carried (for the error body of a refusal). */
  id?: JsonRpcId | null;
  /**
   * A request of the gateway's own (the aggregated endpoint's initialize, lists, GET streams):
   * none of the client's headers pass (its Accept and Last-Event-ID were for the gateway), and
   * the revision is the session's.
   */
  own?: boolean;
}

export interface ServerAnswer extends Dispatcher.ResponseData {
  target: McpTarget;
}

// Request headers the client may send that the server needs as they are.
const PASSED_THROUGH = ['accept', 'last-event-id', 'mcp-protocol-version'] as const;

function upstreamHeaders(exchange: McpExchange, options: ForwardOptions): Record<string, string> {
  const headers: Record<string, string> = { ...exchange.server.headers, 'x-request-id': exchange.requestId };
  if (options.own === true) {
    if (exchange.session !== undefined) headers['mcp-protocol-version'] = exchange.session.protocol;
  } else {
    for (const name of PASSED_THROUGH) {
      const value = exchange.req.headers[name];
      if (typeof value === 'string') headers[name] = value;
    }
  }
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  if (headers.accept === undefined) headers.accept = options.stream ? 'text/event-stream' : 'application/json, text/event-stream';
  if (exchange.traceparent !== undefined) headers.traceparent = exchange.traceparent;
  const upstreamSession = exchange.session?.upstreamSession;
  if (upstreamSession != null) headers['mcp-session-id'] = upstreamSession;
  return headers;
}

/** The server's answer, its status already checked; undefined never (a refusal throws). */
export async function forwardToServer(door: McpDoor, exchange: McpExchange, options: ForwardOptions): Promise<ServerAnswer | undefined> {
  const target = options.target ?? (exchange.session === undefined ? undefined : door.upstreams.find(exchange.server.name, exchange.session.target));
  if (target === undefined) return door.sessionLost(exchange);
  const abort = new AbortController();
  // The client leaving aborts the call to the server: no answer is read for nobody.
  const onClose = () => abort.abort();
  exchange.res.once('close', onClose);
  const id = options.id ?? null;
  target.outstanding += 1;
  let answer: Dispatcher.ResponseData;
  try {
    answer = await target.pool.request({
      path: target.path,
      method: options.method,
      headers: upstreamHeaders(exchange, options),
      body: options.body ?? null,
      signal: abort.signal,
      headersTimeout: exchange.server.timeoutMs,
      bodyTimeout: options.stream ? 0 : exchange.server.timeoutMs,
    });
  } catch (error) {
    if (!abort.signal.aborted) target.eject();
    const code = (error as { code?: string }).code;
    const timedOut = code === 'UND_ERR_HEADERS_TIMEOUT';
    throw jsonRpcRefusal(timedOut ? 504 : 502, id, 'internal_error', timedOut ? 'The MCP server did not answer in time.' : 'The MCP server could not be reached.', { outcome: timedOut ? 'timeout' : 'upstream_error' });
  } finally {
    target.outstanding -= 1;
    exchange.res.off('close', onClose);
  }
  const status = answer.statusCode;
  if (status === 404 && exchange.session !== undefined) {
    await answer.body.dump().catch(() => undefined);
    return door.sessionLost(exchange);
  }
  if (status === 401 || status === 403) {
    await answer.body.dump().catch(() => undefined);
    throw jsonRpcRefusal(502, id, 'internal_error', 'The MCP server refused the gateway\'s credentials for it.', { outcome: 'upstream_error' });
  }
  exchange.res.once('close', () => {
    if (!exchange.res.writableFinished) abort.abort();
  });
  return Object.assign(answer, { target });
}

function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** The answer's status and headers (the gateway's session id in place of the server's), then its body as it arrives. */
export function relayAnswer(exchange: McpExchange, answer: ServerAnswer, watchId: JsonRpcId | undefined, sessionId?: string): Promise<RelayOutcome> {
  const { res } = exchange;
  const contentType = headerText(answer.headers['content-type']);
  res.statusCode = answer.statusCode;
  if (contentType !== undefined) res.setHeader('Content-Type', contentType);
  const cacheControl = headerText(answer.headers['cache-control']);
  if (cacheControl !== undefined) res.setHeader('Cache-Control', cacheControl);
  const session = sessionId ?? exchange.sessionId;
  if (session !== undefined) res.setHeader('Mcp-Session-Id', session);
  // An SSE answer's headers go out now: the client sees the stream start before its first event.
  res.flushHeaders();
  return relayUnbuffered(answer.body, res, contentType, watchId, exchange.rewrite);
}

/** notifications/cancelled for a request whose client left (fire and forget; its failure changes nothing). */
export function cancelUpstream(door: McpDoor, exchange: McpExchange, requestId: JsonRpcId): void {
  const target = exchange.session === undefined ? undefined : door.upstreams.find(exchange.server.name, exchange.session.target);
  if (target === undefined) return;
  const body = Buffer.from(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId, reason: 'The client disconnected.' } }));
  const headers = upstreamHeaders(exchange, { method: 'POST', stream: false, body });
  headers.accept = 'application/json, text/event-stream';
  target.pool
    .request({ path: target.path, method: 'POST', headers, body, headersTimeout: exchange.server.timeoutMs, bodyTimeout: exchange.server.timeoutMs })
    .then((answer) => answer.body.dump())
    .catch(() => undefined);
}
