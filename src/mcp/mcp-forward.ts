// The front door's side of a call to an MCP server (docs/mcp.md "Endpoints", "Streams"): the
// server's transport (mcp-transport.ts: Streamable HTTP or a stdio child) gives an answer
// shaped like an HTTP response, and it is relayed here the same way whichever carried it, with
// the gateway's session id in place of the server's.
import type { JsonRpcId } from './json-rpc.js';
import type { McpExchange } from './mcp-exchange.js';
import type { McpDoor } from './mcp-door.js';
import { relayUnbuffered, type RelayOutcome } from './mcp-relay.js';
import type { ForwardOptions, UpstreamAnswer } from './mcp-transport.js';

export type { ForwardOptions, UpstreamAnswer };

/** The server's answer to a request of the exchange's session (a refusal throws an McpAnswer). */
export async function forwardToServer(door: McpDoor, exchange: McpExchange, options: ForwardOptions): Promise<UpstreamAnswer> {
  const transport = await door.transportFor(exchange.server);
  return transport.forward(door, exchange, options);
}

function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** The answer's status and headers (the gateway's session id in place of the server's), then its body as it arrives. */
export function relayAnswer(exchange: McpExchange, answer: UpstreamAnswer, watchId: JsonRpcId | undefined, sessionId?: string): Promise<RelayOutcome> {
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
  door
    .transportFor(exchange.server)
    .then((transport) => transport.cancel(door, exchange, requestId))
    .catch(() => undefined);
}
