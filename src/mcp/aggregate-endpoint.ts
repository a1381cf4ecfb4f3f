// The aggregated endpoint `POST|GET|DELETE /mcp` (docs/mcp.md "The aggregated endpoint";
// decisions 0102, 0103): one MCP endpoint for every server the caller's key may use, its tools
// and prompts named `{server}__{name}`. The gateway answers initialize itself (its own
// serverInfo and session) and keeps, in the session store, one upstream session per server,
// opened when first needed (aggregate-upstream-sessions.ts), so any instance serves any
// session. Everything that reaches a server goes through the per-server stages (mcp-post.ts,
// mcp-forward.ts): one forward, one set of limits, one audit record per call.
import { readFileSync } from 'node:fs';
import { GatewayError } from '../errors.js';
import { metrics } from '../metrics/metrics.js';
import { aggregateNotification, aggregatePromptGet, aggregateResponse, aggregateToolCall } from './aggregate-calls.js';
import { AGGREGATE_LABEL, aggregateList } from './aggregate-lists.js';
import type { AggregateRequest } from './aggregate-request.js';
import { openAggregateStream } from './aggregate-stream.js';
import { AggregateUpstreamSessions } from './aggregate-upstream-sessions.js';
import { encodeResult, type JsonRpcRequest } from './json-rpc.js';
import { jsonRpcRefusal } from './mcp-answers.js';
import type { McpDoor } from './mcp-door.js';
import { PROTOCOL_REVISIONS } from './mcp-exchange.js';
import { methodLabel } from './mcp-labels.js';
import { decodeBody } from './mcp-post.js';
import { isSessionId, newSessionId } from './mcp-session-store.js';
import { readBoundedBody } from './read-bounded-body.js';

// What a client may say of itself at initialize (capabilities, clientInfo), kept with the session and replayed to each server.
const MAX_CLIENT_TEXT = 16 * 1024;
const LATEST_REVISION = '2025-11-25';
// listChanged: a server's notifications/tools/list_changed (prompts likewise) reaches the client as sent, and the aggregated list changed with it.
const CAPABILITIES = { tools: { listChanged: true }, prompts: { listChanged: true } };

export class AggregateEndpoint {
  private readonly sessions: AggregateUpstreamSessions;
  private readonly serverInfo: { name: string; version: string };

  constructor(private readonly front: McpDoor) {
    this.sessions = new AggregateUpstreamSessions(front);
    const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    this.serverInfo = { name: 'agent-gateway', version };
  }

  async serve(request: AggregateRequest): Promise<void> {
    const method = request.req.method;
    if (method === 'POST') return this.post(request);
    await this.session(request);
    if (method === 'GET') return openAggregateStream(this.front, this.sessions, request);
    return this.end(request);
  }

  private async post(request: AggregateRequest): Promise<void> {
    const contentType = request.req.headers['content-type'];
    if (typeof contentType !== 'string' || !contentType.toLowerCase().startsWith('application/json')) throw new GatewayError('unsupported_media_type');
    const body = await readBoundedBody(request.req, request.config.mcp.maxBodyBytes);
    // One message per request on /mcp, whatever the revision: a batch would mix servers in one answer.
    const message = decodeBody(body, request.protocol, 'never')[0]!;
    if (message.kind === 'request' && message.method === 'initialize') return this.initialize(request, message);
    await this.session(request);
    if (message.kind === 'response') return aggregateResponse(this.sessions, request, message);
    if (message.kind === 'notification') {
      if (message.method === 'notifications/initialized') return this.accepted(request, message.method);
      return aggregateNotification(this.sessions, request, message, body);
    }
    switch (message.method) {
      case 'ping':
        return this.answer(request, message, {});
      case 'tools/list':
        return aggregateList(this.front, this.sessions, request, message, 'tools');
      case 'prompts/list':
        return aggregateList(this.front, this.sessions, request, message, 'prompts');
      case 'tools/call':
        return aggregateToolCall(this.front, this.sessions, request, message, body.length);
      case 'prompts/get':
        return aggregatePromptGet(this.front, this.sessions, request, message);
      default:
        // Resources, completion, logging and the rest are each one server's: they are served on /mcp/{server}.
        metrics.mcpRequests.inc({ server: AGGREGATE_LABEL, method: methodLabel(message.method), outcome: 'method_not_found' });
        throw jsonRpcRefusal(200, message.id, 'method_not_found', `Method not found: /mcp serves tools and prompts; ${message.method.slice(0, 64)} is served on /mcp/{server}.`);
    }
  }

  /** initialize, answered by the gateway: a new session with no upstream session yet, stored before its id is answered. */
  private async initialize(request: AggregateRequest, message: JsonRpcRequest): Promise<void> {
    const params = message.params ?? {};
    const requested = params.protocolVersion;
    const protocol = typeof requested === 'string' && PROTOCOL_REVISIONS.has(requested) ? requested : LATEST_REVISION;
    const capabilities = isObject(params.capabilities) ? params.capabilities : {};
    const clientInfo = isObject(params.clientInfo) ? params.clientInfo : {};
    const client = JSON.stringify({ capabilities, clientInfo });
    if (client.length > MAX_CLIENT_TEXT) throw jsonRpcRefusal(400, message.id, 'invalid_params', `initialize's capabilities and clientInfo hold at most ${MAX_CLIENT_TEXT} characters of JSON on /mcp.`);
    const sessionId = newSessionId();
    await this.front.deps.sessions.putAggregate(sessionId, { keyId: request.key.keyId, protocol, client, upstreams: {} });
    this.front.sessionGauge.open(sessionId, AGGREGATE_LABEL);
    request.sessionId = sessionId;
    this.answer(request, message, { protocolVersion: protocol, capabilities: CAPABILITIES, serverInfo: this.serverInfo });
  }

  /** The request's session: 400 without the header; 404 unknown, expired, a per-server session, or another key's. */
  private async session(request: AggregateRequest): Promise<void> {
    const header = request.req.headers['mcp-session-id'];
    if (header === undefined) throw jsonRpcRefusal(400, null, 'invalid_request', 'Send the Mcp-Session-Id header of your session (initialize first).');
    const id = typeof header === 'string' ? header : '';
    const record = isSessionId(id) ? await this.front.deps.sessions.touchAggregate(id) : undefined;
    if (record === undefined || record.keyId !== request.key.keyId) throw new GatewayError('mcp_session_not_found');
    request.sessionId = id;
    request.record = record;
    this.front.sessionGauge.used(id);
  }

  /** DELETE: every upstream session ends, then the gateway's; 200. */
  private async end(request: AggregateRequest): Promise<void> {
    await this.sessions.endAll(request);
    await this.front.deps.sessions.delete(request.sessionId!);
    this.front.sessionGauge.ended(request.sessionId!);
    metrics.mcpRequests.inc({ server: AGGREGATE_LABEL, method: 'DELETE', outcome: 'ok' });
    request.res.statusCode = 200;
    request.res.setHeader('Content-Length', 0);
    request.res.end();
  }

  private answer(request: AggregateRequest, message: JsonRpcRequest, result: unknown): void {
    const text = encodeResult(message.id, result);
    const { res } = request;
    res.statusCode = 200;
    res.setHeader('Content-Type', 'application/json');
    res.setHeader('Mcp-Session-Id', request.sessionId!);
    res.setHeader('Content-Length', Buffer.byteLength(text));
    res.end(text);
    metrics.mcpRequests.inc({ server: AGGREGATE_LABEL, method: message.method, outcome: 'ok' });
  }

  private accepted(request: AggregateRequest, method: string): void {
    metrics.mcpRequests.inc({ server: AGGREGATE_LABEL, method, outcome: 'ok' });
    request.res.statusCode = 202;
    request.res.setHeader('Mcp-Session-Id', request.sessionId!);
    request.res.setHeader('Content-Length', 0);
    request.res.end();
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
