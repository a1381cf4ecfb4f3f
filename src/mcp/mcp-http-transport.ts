// The Streamable HTTP transport behind the front door (docs/mcp.md "Configuration", "Sessions
// across instances"): the server's configured headers (its credentials: never the client's
// Authorization, which is the gateway's key), the upstream session id in place of the
// gateway's, the server's deadline for its answer's headers (and, for a POST, between its
// bytes). An answer of 404 to a session is a lost session; 401/403 mean the gateway's
// credentials were refused, which the client cannot fix: 502, and the server's words stay here.
import type { Dispatcher } from 'undici';
import type { McpServerConfig } from '../config/schema.js';
import type { JsonRpcId } from './json-rpc.js';
import { jsonRpcRefusal } from './mcp-answers.js';
import type { McpExchange } from './mcp-exchange.js';
import type { ForwardOptions, McpTransport, SessionEnder, OpenedSession, UpstreamAnswer } from './mcp-transport.js';
import { McpUpstreams, type McpTarget } from './mcp-upstreams.js';

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

export class HttpTransport implements McpTransport {
  readonly upstreams: McpUpstreams;

  constructor(servers: ReadonlyMap<string, McpServerConfig>) {
    this.upstreams = new McpUpstreams(servers);
  }

  /** initialize on a target the picker chose; the server's own session id (if any) is the record's. */
  async open(door: SessionEnder, exchange: McpExchange, body: Buffer, id: JsonRpcId): Promise<OpenedSession> {
    const target = this.upstreams.pick(exchange.server.name);
    if (target === undefined) throw jsonRpcRefusal(503, id, 'internal_error', 'The MCP server has no upstream configured.', { outcome: 'upstream_error' });
    const answer = await this.send(door, exchange, { method: 'POST', stream: false, body, id }, target);
    if (answer.statusCode >= 300) return { answer, place: undefined };
    const upstream = answer.headers['mcp-session-id'];
    return { answer, place: { target: target.url, upstreamSession: typeof upstream === 'string' ? upstream : null } };
  }

  forward(door: SessionEnder, exchange: McpExchange, options: ForwardOptions): Promise<UpstreamAnswer> {
    const target = options.target ?? (exchange.session === undefined ? undefined : this.upstreams.find(exchange.server.name, exchange.session.target));
    if (target === undefined) return door.sessionLost(exchange);
    return this.send(door, exchange, options, target);
  }

  /** The server's answer, its status already checked (a refusal throws). */
  private async send(door: SessionEnder, exchange: McpExchange, options: ForwardOptions, target: McpTarget): Promise<UpstreamAnswer> {
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
    return answer;
  }

  cancel(_door: SessionEnder, exchange: McpExchange, requestId: JsonRpcId): void {
    const target = exchange.session === undefined ? undefined : this.upstreams.find(exchange.server.name, exchange.session.target);
    if (target === undefined) return;
    const body = Buffer.from(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId, reason: 'The client disconnected.' } }));
    const headers = upstreamHeaders(exchange, { method: 'POST', stream: false, body });
    headers.accept = 'application/json, text/event-stream';
    target.pool
      .request({ path: target.path, method: 'POST', headers, body, headersTimeout: exchange.server.timeoutMs, bodyTimeout: exchange.server.timeoutMs })
      .then((answer) => answer.body.dump())
      .catch(() => undefined);
  }

  update(servers: ReadonlyMap<string, McpServerConfig>): void {
    this.upstreams.update(servers);
  }

  close(): Promise<void> {
    return this.upstreams.close();
  }
}
