// The POST stages of the front door (docs/mcp.md): body (bounded, JSON, JSON-RPC), session
// (initialize opens one), the policy of each message (a `tools/call` or `prompts/get` outside
// what the caller may see is answered as an unknown tool or prompt and never forwarded; a
// `tools/call` counts in the plan's windows and its quotas), then the forward and the relay.
import { GatewayError } from '../errors.js';
import { metrics } from '../metrics/metrics.js';
import { appendRateLimitHeaders, retryAfterSeconds } from '../ratelimit/rate-limit-headers.js';
import { decodeMessage, encodeError, idOf, JSON_RPC_ERRORS, JsonRpcDecodeError, type JsonRpcMessage, type JsonRpcRequest } from './json-rpc.js';
import { jsonRpcRefusal, McpAnswer, writeAnswer } from './mcp-answers.js';
import { allowsBatches, DEFAULT_PROTOCOL_REVISION, type McpExchange } from './mcp-exchange.js';
import { forwardToServer, relayAnswer } from './mcp-forward.js';
import type { McpDoor } from './mcp-door.js';
import { methodLabel } from './mcp-labels.js';
import { admitToolCall, policyOfKey, type ToolAdmission } from './mcp-limits.js';
import { classifyRefusal } from '../policy/refusal.js';
import { endUserOf } from './mcp-tool-call-record.js';
import { readAnswer, rewriteAnswer } from './mcp-relay.js';
import { newSessionId } from './mcp-session-store.js';
import { recordToolCall } from './mcp-tool-call-record.js';
import { readBoundedBody } from './read-bounded-body.js';
import type { RequestTracing } from '../telemetry/request-tracing.js';
import { filterListResult, visibilityFor } from './tool-visibility.js';

// Methods whose answer or whose argument names a tool or prompt: never inside a batch, so each
// is decided (and answered) on its own.
const SCOPED_METHODS: ReadonlySet<string> = new Set(['tools/list', 'tools/call', 'prompts/list', 'prompts/get', 'initialize']);

export async function handlePost(door: McpDoor, exchange: McpExchange): Promise<void> {
  const { req } = exchange;
  const contentType = req.headers['content-type'];
  if (typeof contentType !== 'string' || !contentType.toLowerCase().startsWith('application/json')) throw new GatewayError('unsupported_media_type');
  const body = await readBoundedBody(req, exchange.config.mcp.maxBodyBytes);
  const messages = decodeBody(body, exchange.protocol);
  const first = messages[0]!;
  const clientTrace = req.headers.traceparent;
  if (typeof clientTrace === 'string') exchange.traceparent = clientTrace;
  if (door.deps.tracing !== undefined && first.kind === 'request') traceRequest(door.deps.tracing, exchange, first);
  if (messages.length === 1 && first.kind === 'request' && first.method === 'initialize') return initialize(door, exchange, first, body);
  await door.session(exchange, req.headers['mcp-session-id']);
  if (messages.length > 1) {
    for (const message of messages) {
      if (message.kind !== 'response' && SCOPED_METHODS.has(message.method)) throw jsonRpcRefusal(400, null, 'invalid_request', `Send ${message.method} on its own, not in a batch.`);
    }
    return forwardPlain(door, exchange, body, 'batch');
  }
  if (first.kind === 'request' && first.method === 'tools/call') return toolCall(door, exchange, first, body);
  if (first.kind === 'request' && first.method === 'prompts/get') {
    const name = first.params?.name;
    if (typeof name !== 'string' || !visibilityFor(exchange.server, exchange.key).prompt(name)) {
      metrics.mcpRequests.inc({ server: exchange.server.name, method: 'prompts/get', outcome: 'outside_scope' });
      writeAnswer(exchange.res, jsonRpcRefusal(200, first.id, 'invalid_params', `Unknown prompt: ${typeof name === 'string' ? name : ''}`));
      return;
    }
  }
  if (first.kind === 'request' && (first.method === 'tools/list' || first.method === 'prompts/list')) return listFiltered(door, exchange, first, body);
  return forwardPlain(door, exchange, body, first.kind === 'response' ? 'response' : methodLabel(first.method));
}

/** The request's server span by the OpenTelemetry MCP conventions, ended when its response closes. */
export function traceRequest(tracing: RequestTracing, exchange: McpExchange, message: JsonRpcRequest): void {
  const name = message.params?.name;
  const target = (message.method === 'tools/call' || message.method === 'prompts/get') && typeof name === 'string' ? name.slice(0, 128) : undefined;
  const attributes: Record<string, string | number> = { 'jsonrpc.request.id': String(message.id), 'mcp.protocol.version': exchange.protocol ?? DEFAULT_PROTOCOL_REVISION, 'agentgw.mcp_server': exchange.server.name, 'agentgw.key_id': exchange.key.keyId };
  const session = exchange.req.headers['mcp-session-id'];
  if (typeof session === 'string' && message.method !== 'initialize') attributes['mcp.session.id'] = session.slice(0, 64);
  if (message.method === 'tools/call' && target !== undefined) {
    attributes['gen_ai.tool.name'] = target;
    attributes['gen_ai.operation.name'] = 'execute_tool';
  }
  const span = tracing.mcpSpan(exchange.req.headers.traceparent, message.method, target, attributes);
  exchange.traceparent = span.traceparent;
  const { res } = exchange;
  res.once('close', () => span.end(res.statusCode, !res.writableFinished ? 'client_closed' : res.statusCode < 400 ? 'ok' : 'error'));
}

/** The body's messages: -32700 for bad JSON, -32600 for a bad message, both HTTP 400; batches only in 2025-03-26. */
export function decodeBody(body: Buffer, protocol: string | undefined, batches: 'by-revision' | 'never' = 'by-revision'): JsonRpcMessage[] {
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    throw new McpAnswer(400, encodeError(null, 'parse_error', 'The request body is not valid JSON.'));
  }
  const values = Array.isArray(value) ? value : [value];
  if (Array.isArray(value)) {
    if (batches === 'never') throw jsonRpcRefusal(400, null, 'invalid_request', 'Send one message per request to /mcp (batches are served on /mcp/{server} in 2025-03-26).');
    if (!allowsBatches(protocol)) throw jsonRpcRefusal(400, null, 'invalid_request', `JSON-RPC batches are not part of MCP ${protocol ?? DEFAULT_PROTOCOL_REVISION}; send one message per request.`);
    if (value.length === 0 || value.length > 100) throw jsonRpcRefusal(400, null, 'invalid_request', 'A batch holds 1 to 100 messages.');
  }
  return values.map((one) => {
    try {
      return decodeMessage(one);
    } catch (error) {
      if (error instanceof JsonRpcDecodeError) throw new McpAnswer(400, JSON.stringify({ jsonrpc: '2.0', id: idOf(one), error: { code: JSON_RPC_ERRORS.invalid_request, message: error.message } }));
      throw error;
    }
  });
}

/** initialize: a new gateway session on a new upstream session (the transport's choice), stored before its id is answered. */
async function initialize(door: McpDoor, exchange: McpExchange, message: JsonRpcRequest, body: Buffer): Promise<void> {
  const transport = await door.transportFor(exchange.server);
  const candidate = newSessionId();
  const { answer, place } = await transport.open(door, exchange, body, message.id, candidate);
  const requested = message.params?.protocolVersion;
  const protocol = typeof requested === 'string' ? requested : DEFAULT_PROTOCOL_REVISION;
  let sessionId: string | undefined;
  if (place !== undefined) {
    sessionId = candidate;
    exchange.sessionId = sessionId;
    // Stored before the id is answered: the client's next request may reach another instance.
    await door.deps.sessions.put(sessionId, { server: exchange.server.name, keyId: exchange.key.keyId, target: place.target, upstreamSession: place.upstreamSession, protocol });
    door.sessionGauge.open(sessionId, exchange.server.name);
  }
  const outcome = await relayAnswer(exchange, answer, undefined, sessionId);
  metrics.mcpRequests.inc({ server: exchange.server.name, method: 'initialize', outcome: outcome.clientClosed ? 'client_closed' : 'ok' });
}

export async function forwardPlain(door: McpDoor, exchange: McpExchange, body: Buffer, method: string): Promise<void> {
  const answer = await forwardToServer(door, exchange, { method: 'POST', stream: false, body });
  const outcome = await relayAnswer(exchange, answer, undefined);
  metrics.mcpRequests.inc({ server: exchange.server.name, method, outcome: outcome.clientClosed ? 'client_closed' : outcome.upstreamFailed ? 'upstream_error' : 'ok' });
}

/** tools/list, prompts/list: the answer read whole (bounded) and filtered to what the caller may see. */
async function listFiltered(door: McpDoor, exchange: McpExchange, message: JsonRpcRequest, body: Buffer): Promise<void> {
  const answer = await forwardToServer(door, exchange, { method: 'POST', stream: false, body, id: message.id });
  const raw = await readAnswer(answer.body, exchange.config.mcp.maxResponseBytes, message.id);
  const visibility = visibilityFor(exchange.server, exchange.key);
  const server = exchange.server.name;
  const contentType = answer.headers['content-type'];
  const type = typeof contentType === 'string' ? contentType : undefined;
  let text: string;
  if (message.method === 'tools/list') {
    // The names also become the MCP page's "tools it last listed" (docs/mcp.md "Dashboard"), but
    // only from a result that holds a list: an error answer or garbage leaves the last list as it was.
    let listed: string[] | undefined;
    text = rewriteAnswer(raw, type, message.id, (result) => {
      const names: string[] = [];
      if (Array.isArray((result as { tools?: unknown } | null)?.tools)) listed = names;
      return filterListResult(result, 'tools', visibility.tool, (name) => {
        door.toolLabels.note(server, name);
        names.push(name);
      });
    });
    // A request without a cursor is a first page: it starts the list again.
    if (listed !== undefined) door.listedTools.record(server, listed, message.params?.cursor === undefined, door.deps.clock.now());
  } else {
    text = rewriteAnswer(raw, type, message.id, (result) => filterListResult(result, 'prompts', visibility.prompt));
  }
  const { res } = exchange;
  res.statusCode = answer.statusCode;
  if (type !== undefined) res.setHeader('Content-Type', type);
  if (exchange.sessionId !== undefined) res.setHeader('Mcp-Session-Id', exchange.sessionId);
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
  metrics.mcpRequests.inc({ server, method: message.method, outcome: 'ok' });
}

/** tools/call: scope, then limits, then the forward; one audit record whatever happened. */
export async function toolCall(door: McpDoor, exchange: McpExchange, message: JsonRpcRequest, body: Buffer): Promise<void> {
  const server = exchange.server.name;
  const name = message.params?.name;
  const tool = typeof name === 'string' ? name : '';
  const label = door.toolLabels.label(server, tool);
  const record = (status: number, outcome: Parameters<typeof recordToolCall>[2]['outcome'], extra: { bytesOut?: number; isError?: boolean | null; upstreamMs?: number | null } = {}) =>
    recordToolCall(door, exchange, { tool, status, outcome, bytesIn: body.length, bytesOut: extra.bytesOut ?? 0, isError: extra.isError ?? null, upstreamMs: extra.upstreamMs ?? null });
  if (typeof name !== 'string' || !visibilityFor(exchange.server, exchange.key).tool(tool)) {
    metrics.mcpToolCalls.inc({ server, tool: label, verdict: 'outside_scope' });
    const bytes = writeAnswer(exchange.res, jsonRpcRefusal(200, message.id, 'invalid_params', `Unknown tool: ${tool}`));
    record(200, 'tool_not_allowed', { bytesOut: bytes });
    return;
  }
  const policy = policyOfKey(exchange.config, exchange.key);
  if (policy === undefined) throw new GatewayError('internal_error', { message: 'The API key refers to a plan the gateway does not know.' });
  const admission = await admitToolCall(door.deps.rateLimiter, exchange.config, exchange.key, policy, server, tool, { userId: endUserOf(exchange), sessionId: exchange.sessionId ?? null });
  const headers: string[] = [];
  if (admission.decision !== undefined) appendRateLimitHeaders(admission.decision, headers);
  if (admission.decision !== undefined && !admission.decision.allowed) {
    refuse(door, exchange, message, admission, headers, label, record);
    return;
  }
  for (let i = 0; i + 1 < headers.length; i += 2) exchange.res.setHeader(headers[i]!, headers[i + 1]!);
  const sent = performance.now();
  let answer;
  try {
    answer = await forwardToServer(door, exchange, { method: 'POST', stream: false, body, id: message.id });
  } catch (error) {
    metrics.mcpToolCalls.inc({ server, tool: label, verdict: 'forwarded' });
    if (error instanceof McpAnswer) {
      const outcome = error.outcome === 'timeout' || error.outcome === 'client_closed' ? error.outcome : 'upstream_error';
      // Counted like a relayed call, so a forwarded call that got no answer shows among the server's errors.
      metrics.mcpRequests.inc({ server, method: 'tools/call', outcome });
      record(error.status, outcome);
    }
    throw error;
  }
  metrics.mcpToolCalls.inc({ server, tool: label, verdict: 'forwarded' });
  const upstreamMs = performance.now() - sent;
  const outcome = await relayAnswer(exchange, answer, message.id);
  if (outcome.clientClosed) door.cancel(exchange, message.id);
  const audited = outcome.clientClosed ? 'client_closed' : outcome.upstreamFailed ? 'upstream_error' : outcome.errored ? 'error' : 'ok';
  metrics.mcpRequests.inc({ server, method: 'tools/call', outcome: audited });
  record(answer.statusCode, audited, { bytesOut: outcome.bytesOut, isError: outcome.isError, upstreamMs });
}

/** 429 with Retry-After, the RateLimit headers and a JSON-RPC error carrying the request's id (the refusal classified as a chat request's is). */
function refuse(door: McpDoor, exchange: McpExchange, message: JsonRpcRequest, admission: ToolAdmission, headers: string[], label: string, record: (status: number, outcome: ReturnType<typeof classifyRefusal>['outcome']) => void): void {
  const decision = admission.decision!;
  const refusal = classifyRefusal(decision);
  const retryAfter = retryAfterSeconds(decision);
  headers.push('Retry-After', String(retryAfter));
  metrics.rateLimited.inc({ plan: exchange.key.plan });
  const byTool = refusal.kind === 'tool_calls';
  metrics.mcpToolCalls.inc({ server: exchange.server.name, tool: label, verdict: byTool ? 'tool_budget_exceeded' : 'rate_limited' });
  const whose = refusal.scope === 'session' ? "This session's" : refusal.scope === 'user' ? "This end user's" : refusal.scope === 'account' ? "The account's" : "The plan's";
  const text = byTool ? `${whose} quota of calls to ${exchange.server.name}__${String(message.params?.name)} is spent.` : `${whose} ${refusal.kind === 'requests' ? 'rate limit is reached' : `${refusal.kind === 'tokens' ? 'token' : 'cost'} budget is spent`} (${refusal.policy}).`;
  writeAnswer(exchange.res, jsonRpcRefusal(429, message.id, 'server_error', `${text} Retry after the time in the Retry-After header.`, { data: { type: refusal.error, retry_after_ms: decision.retryAfterMs }, headers }));
  record(429, refusal.outcome);
}
