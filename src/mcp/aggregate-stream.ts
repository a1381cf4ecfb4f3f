// GET on the aggregated endpoint (docs/mcp.md "The aggregated endpoint"): one event stream that
// merges the GET streams of every server the key may use (each server's upstream session opened
// now if the session has none: a client that listens wants every server's messages), each
// through the same forward as `/mcp/{server}`, each event whole and rewritten so a server's own
// requests carry ids that name it (aggregate-events.ts). A server that offers no stream (405),
// or fails, is left out; none at all is 405. The client's backpressure holds every server; the
// client leaving ends every upstream stream. No resumption: Last-Event-ID is not passed on.
import type { Readable } from 'node:stream';
import type { McpServerConfig } from '../config/schema.js';
import { GatewayError } from '../errors.js';
import { metrics } from '../metrics/metrics.js';
import { aggregateEventText } from './aggregate-events.js';
import { AGGREGATE_LABEL } from './aggregate-lists.js';
import { serverExchange, type AggregateRequest } from './aggregate-request.js';
import { serversInScope } from './aggregate-scope.js';
import type { AggregateUpstreamSessions } from './aggregate-upstream-sessions.js';
import type { McpDoor } from './mcp-door.js';
import { forwardToServer } from './mcp-forward.js';
import { SseMessageScanner } from './sse-messages.js';
import { discardBody } from './mcp-transport.js';

interface ServerStream {
  server: McpServerConfig;
  body: Readable;
}

async function streamOf(front: McpDoor, sessions: AggregateUpstreamSessions, request: AggregateRequest, server: McpServerConfig): Promise<ServerStream | undefined> {
  try {
    const upstream = await sessions.ensure(request, server, null);
    const answer = (await forwardToServer(sessions.doorFor(request, null), serverExchange(request, server, upstream), { method: 'GET', stream: true, own: true }))!;
    const contentType = answer.headers['content-type'];
    if (answer.statusCode === 200 && typeof contentType === 'string' && contentType.toLowerCase().startsWith('text/event-stream')) return { server, body: answer.body };
    await discardBody(answer.body);
  } catch (error) {
    metrics.mcpRequests.inc({ server: server.name, method: 'GET', outcome: 'left_out' });
    front.deps.logger.warn({ request_id: request.requestId, mcp_server: server.name, reason: error instanceof Error ? error.message.slice(0, 200) : 'error' }, 'MCP server left out of the aggregated stream');
  }
  return undefined;
}

export async function openAggregateStream(front: McpDoor, sessions: AggregateUpstreamSessions, request: AggregateRequest): Promise<void> {
  const { res } = request;
  res.setMaxListeners(0);
  const opened = await Promise.all(serversInScope(request.config, request.key).map((server) => streamOf(front, sessions, request, server)));
  const streams = opened.filter((stream): stream is ServerStream => stream !== undefined);
  if (streams.length === 0) throw new GatewayError('method_not_allowed', { message: 'No MCP server of this session offers a server-to-client stream.', headers: { Allow: 'POST, DELETE' } });
  res.statusCode = 200;
  res.setHeader('Content-Type', 'text/event-stream');
  res.setHeader('Cache-Control', 'no-cache');
  res.setHeader('Mcp-Session-Id', request.sessionId!);
  res.flushHeaders();
  const maxEventBytes = request.config.mcp.maxResponseBytes;
  const outcome = await new Promise<string>((resolve) => {
    let open = streams.length;
    let settled = false;
    const settle = (how: string) => {
      if (settled) return;
      settled = true;
      for (const stream of streams) stream.body.destroy();
      resolve(how);
    };
    const pauseAll = () => {
      for (const stream of streams) stream.body.pause();
      res.once('drain', () => {
        for (const stream of streams) stream.body.resume();
      });
    };
    res.once('close', () => settle(res.writableFinished ? 'ok' : 'client_closed'));
    for (const { server, body } of streams) {
      let blocked = false;
      const scanner = new SseMessageScanner(
        (event) => {
          const text = aggregateEventText(server.name, event);
          if (text !== '' && !res.write(text)) blocked = true;
        },
        maxEventBytes,
        // An event too large to rewrite: that server's stream is cut, the others go on.
        () => body.destroy(),
      );
      body.on('data', (chunk: Buffer) => {
        scanner.push(chunk);
        if (blocked) {
          blocked = false;
          pauseAll();
        }
      });
      let done = false;
      const ended = () => {
        if (done) return;
        done = true;
        open -= 1;
        if (open === 0 && !settled) {
          res.end();
          settle('ok');
        }
      };
      body.once('end', ended);
      // A stream that broke off (or was cut) ends only its server's part.
      body.once('error', ended);
      body.once('close', ended);
    }
  });
  metrics.mcpRequests.inc({ server: AGGREGATE_LABEL, method: 'GET', outcome });
}
