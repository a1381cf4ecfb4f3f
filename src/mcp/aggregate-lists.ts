// tools/list and prompts/list on the aggregated endpoint (docs/mcp.md "The aggregated endpoint"):
// asked of every server the key may use at once, each through the same forward as `/mcp/{server}`
// (its own deadline), filtered by the same visibility, the names prefixed `{server}__`. Every
// page of each server is gathered (following nextCursor, at most MAX_PAGES) and the client gets
// one page, with no nextCursor. Bounded: each server's pages together within mcp.max_response
// divided by the number of servers, so the whole within mcp.max_response. A server that fails
// (unreachable, an error answer, over its share, a lost session) is left out of the list, logged
// and counted (`agentgw_mcp_requests_total{outcome="left_out"}`), rather than failing the list.
import type { McpServerConfig } from '../config/schema.js';
import { metrics } from '../metrics/metrics.js';
import { qualifiedName } from './aggregate-names.js';
import type { AggregateRequest } from './aggregate-request.js';
import { serverExchange } from './aggregate-request.js';
import { serversInScope } from './aggregate-scope.js';
import type { AggregateUpstreamSessions } from './aggregate-upstream-sessions.js';
import { encodeResult, type JsonRpcRequest } from './json-rpc.js';
import { jsonRpcRefusal, McpAnswer, writeAnswer } from './mcp-answers.js';
import type { McpDoor } from './mcp-door.js';
import { forwardToServer } from './mcp-forward.js';
import { readAnswer, responseIn } from './mcp-relay.js';
import { filterListResult, visibilityFor } from './tool-visibility.js';
import { discardBody } from './mcp-transport.js';

const MAX_PAGES = 100;
export const AGGREGATE_LABEL = '*';

export async function aggregateList(front: McpDoor, sessions: AggregateUpstreamSessions, request: AggregateRequest, message: JsonRpcRequest, field: 'tools' | 'prompts'): Promise<void> {
  if (message.params?.cursor !== undefined) {
    writeAnswer(request.res, jsonRpcRefusal(200, message.id, 'invalid_params', 'Invalid cursor: this endpoint answers the whole list in one page.'));
    return;
  }
  const servers = serversInScope(request.config, request.key);
  const share = Math.floor(request.config.mcp.maxResponseBytes / Math.max(1, servers.length));
  // One close listener per upstream request on the client's response (mcp-forward.ts): as many as the servers' pages.
  request.res.setMaxListeners(0);
  const lists = await Promise.all(
    servers.map((server) =>
      listOf(front, sessions, request, message, field, server, share).catch((error: unknown) => {
        metrics.mcpRequests.inc({ server: server.name, method: message.method, outcome: 'left_out' });
        const why = error instanceof McpAnswer ? error.outcome : error instanceof Error ? error.message : 'error';
        front.deps.logger.warn({ request_id: request.requestId, mcp_server: server.name, method: message.method, reason: why.slice(0, 200) }, 'MCP server left out of the aggregated list');
        return [];
      }),
    ),
  );
  const text = encodeResult(message.id, { [field]: lists.flat() });
  const { res } = request;
  res.statusCode = 200;
  res.setHeader('Content-Type', 'application/json');
  res.setHeader('Mcp-Session-Id', request.sessionId!);
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
  metrics.mcpRequests.inc({ server: AGGREGATE_LABEL, method: message.method, outcome: 'ok' });
}

/** One server's visible entries over all its pages, named `{server}__{name}`; throws when the server fails. */
async function listOf(front: McpDoor, sessions: AggregateUpstreamSessions, request: AggregateRequest, message: JsonRpcRequest, field: 'tools' | 'prompts', server: McpServerConfig, share: number): Promise<unknown[]> {
  const upstream = await sessions.ensure(request, server, message.id);
  const door = sessions.doorFor(request, message.id);
  const exchange = serverExchange(request, server, upstream);
  const visibility = visibilityFor(server, request.key);
  const visible = field === 'tools' ? visibility.tool : visibility.prompt;
  // Every name the server listed (before filtering) also feeds the metric labels and the MCP page's "tools it last listed", as on /mcp/{server}.
  let listed: string[] = [];
  const note =
    field === 'tools'
      ? (name: string) => {
          front.toolLabels.note(server.name, name);
          listed.push(name);
        }
      : undefined;
  const entries: unknown[] = [];
  let budget = share;
  let cursor: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    // The client's own id: unique among its requests in flight, so it cannot collide with one of them upstream.
    const body = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: message.id, method: message.method, params: cursor === undefined ? {} : { cursor } }));
    const answer = (await forwardToServer(door, exchange, { method: 'POST', stream: false, body, id: message.id, own: true }))!;
    if (answer.statusCode >= 300) {
      await discardBody(answer.body);
      throw new Error(`answered HTTP ${answer.statusCode}`);
    }
    const raw = await readAnswer(answer.body, budget, message.id);
    budget -= raw.length;
    const contentType = answer.headers['content-type'];
    const response = responseIn(raw, typeof contentType === 'string' ? contentType : undefined, message.id);
    if (response === undefined || response.error !== undefined) throw new Error(response === undefined ? 'no answer to the list' : `error ${response.error!.code}`);
    listed = [];
    const filtered = filterListResult(response.result, field, visible, note) as Record<string, unknown> | undefined;
    const kept = filtered?.[field];
    if (!Array.isArray(kept)) throw new Error(`no ${field} array in the answer`);
    if (field === 'tools') front.listedTools.record(server.name, listed, page === 0, front.deps.clock.now());
    for (const entry of kept as { name: string }[]) entries.push({ ...entry, name: qualifiedName(server.name, entry.name) });
    cursor = typeof filtered!.nextCursor === 'string' ? filtered!.nextCursor : undefined;
    if (cursor === undefined) break;
  }
  return entries;
}
