// The aggregated endpoint's messages that go to one server or to each (docs/mcp.md "The
// aggregated endpoint"): `tools/call` and `prompts/get` of `{server}__{name}` (the prefix
// stripped, then the very stages of `/mcp/{server}`: its limits, quotas, audit and relay), the
// client's answers to server-to-client requests (back to the server whose id they carry), and
// the client's notifications (to every upstream session of the session).
import { metrics } from '../metrics/metrics.js';
import { AGGREGATE_LABEL } from './aggregate-lists.js';
import { decodeUpstreamRequestId } from './aggregate-request-ids.js';
import { serverExchange, type AggregateRequest } from './aggregate-request.js';
import { aggregateEventRewrite } from './aggregate-events.js';
import { resolveName } from './aggregate-scope.js';
import type { AggregateUpstreamSessions } from './aggregate-upstream-sessions.js';
import type { JsonRpcNotification, JsonRpcRequest, JsonRpcResponse } from './json-rpc.js';
import { jsonRpcRefusal, McpAnswer, writeAnswer } from './mcp-answers.js';
import type { McpDoor } from './mcp-door.js';
import { forwardToServer } from './mcp-forward.js';
import { methodLabel } from './mcp-labels.js';
import { forwardPlain, toolCall, traceRequest } from './mcp-post.js';
import { recordToolCall } from './mcp-tool-call-record.js';
import { discardBody } from './mcp-transport.js';

/** A name the caller may not use, whatever the reason, gets the one answer a server gives for a name it does not have. */
function unknownName(request: AggregateRequest, message: JsonRpcRequest, kind: 'tool' | 'prompt'): number {
  const name = message.params?.name;
  return writeAnswer(request.res, jsonRpcRefusal(200, message.id, 'invalid_params', `Unknown ${kind}: ${typeof name === 'string' ? name.slice(0, 256) : ''}`));
}

/** The message as the server gets it: its own name for the tool or prompt. */
function forwardedMessage(message: JsonRpcRequest, name: string): { message: JsonRpcRequest; body: Buffer } {
  const params = { ...message.params, name };
  return { message: { ...message, params }, body: Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: message.id, method: message.method, params })) };
}

export async function aggregateToolCall(front: McpDoor, sessions: AggregateUpstreamSessions, request: AggregateRequest, message: JsonRpcRequest, rawBytes: number): Promise<void> {
  const resolved = resolveName(request.config, request.key, message.params?.name, 'tool');
  if (resolved === undefined || !resolved.visible) {
    const bytes = unknownName(request, message, 'tool');
    if (resolved === undefined) {
      metrics.mcpRequests.inc({ server: AGGREGATE_LABEL, method: 'tools/call', outcome: 'outside_scope' });
      return;
    }
    // A server the key may use: counted and audited as the same call through /mcp/{server}.
    metrics.mcpToolCalls.inc({ server: resolved.server.name, tool: front.toolLabels.label(resolved.server.name, resolved.name), verdict: 'outside_scope' });
    recordToolCall(front, serverExchange(request, resolved.server, undefined), { tool: resolved.name, status: 200, outcome: 'tool_not_allowed', bytesIn: rawBytes, bytesOut: bytes, isError: null, upstreamMs: null });
    return;
  }
  const { server, name } = resolved;
  let upstream;
  try {
    upstream = await sessions.ensure(request, server, message.id);
  } catch (error) {
    if (error instanceof McpAnswer) recordToolCall(front, serverExchange(request, server, undefined), { tool: name, status: error.status, outcome: error.outcome === 'timeout' ? 'timeout' : 'upstream_error', bytesIn: rawBytes, bytesOut: 0, isError: null, upstreamMs: null });
    throw error;
  }
  const forwarded = forwardedMessage(message, name);
  const exchange = serverExchange(request, server, upstream, aggregateEventRewrite(server.name, request.config.mcp.maxResponseBytes));
  if (front.deps.tracing !== undefined) traceRequest(front.deps.tracing, exchange, forwarded.message);
  return toolCall(sessions.doorFor(request, message.id), exchange, forwarded.message, forwarded.body);
}

export async function aggregatePromptGet(front: McpDoor, sessions: AggregateUpstreamSessions, request: AggregateRequest, message: JsonRpcRequest): Promise<void> {
  const resolved = resolveName(request.config, request.key, message.params?.name, 'prompt');
  if (resolved === undefined || !resolved.visible) {
    unknownName(request, message, 'prompt');
    metrics.mcpRequests.inc({ server: resolved?.server.name ?? AGGREGATE_LABEL, method: 'prompts/get', outcome: 'outside_scope' });
    return;
  }
  const upstream = await sessions.ensure(request, resolved.server, message.id);
  const forwarded = forwardedMessage(message, resolved.name);
  const exchange = serverExchange(request, resolved.server, upstream, aggregateEventRewrite(resolved.server.name, request.config.mcp.maxResponseBytes));
  if (front.deps.tracing !== undefined) traceRequest(front.deps.tracing, exchange, forwarded.message);
  return forwardPlain(sessions.doorFor(request, message.id), exchange, forwarded.body, 'prompts/get');
}

/** The client's answer to a server-to-client request: to the server its id names, with the server's own id; 400 for an id the gateway never issued. */
export function aggregateResponse(sessions: AggregateUpstreamSessions, request: AggregateRequest, message: JsonRpcResponse): Promise<void> {
  const routed = decodeUpstreamRequestId(message.id);
  const server = routed === undefined ? undefined : request.config.mcpServers.get(routed.server);
  const upstream = routed === undefined ? undefined : request.record!.upstreams[routed.server];
  if (routed === undefined || server === undefined || upstream === undefined) {
    throw jsonRpcRefusal(400, null, 'invalid_request', 'This answer is to no request the gateway relayed in this session.');
  }
  const answer = message.error === undefined ? { jsonrpc: '2.0', id: routed.id, result: message.result } : { jsonrpc: '2.0', id: routed.id, error: message.error };
  return forwardPlain(sessions.doorFor(request, null), serverExchange(request, server, upstream), Buffer.from(JSON.stringify(answer)), 'response');
}

/** A client notification (cancelled, roots/list_changed, progress, ...): to every upstream session of the session, then 202. */
export async function aggregateNotification(sessions: AggregateUpstreamSessions, request: AggregateRequest, message: JsonRpcNotification, body: Buffer): Promise<void> {
  // A request id the client cancels is unique in its session: the one server running it stops, the others ignore it, as the specification lets them.
  const door = sessions.doorFor(request, null);
  await Promise.all(
    Object.entries(request.record!.upstreams).map(async ([name, upstream]) => {
      const server = request.config.mcpServers.get(name);
      if (server === undefined) return;
      const answer = await forwardToServer(door, serverExchange(request, server, upstream), { method: 'POST', stream: false, body, own: true }).catch(() => undefined);
      if (answer !== undefined) await discardBody(answer.body);
    }),
  );
  metrics.mcpRequests.inc({ server: AGGREGATE_LABEL, method: methodLabel(message.method), outcome: 'ok' });
  request.res.statusCode = 202;
  request.res.setHeader('Mcp-Session-Id', request.sessionId!);
  request.res.setHeader('Content-Length', 0);
  request.res.end();
}
