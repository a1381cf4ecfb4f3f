// The seam between the front door and an upstream transport (docs/mcp.md "Configuration";
// decision 0100). The front door decides everything about a request once — key, scope, limits,
// audit, metrics, traces — and then asks the server's transport for an answer shaped like an
// HTTP response (status, headers, a body read as it arrives), which it relays, filters or
// watches the same way whatever carried it. Two transports implement it: Streamable HTTP
// (mcp-http-transport.ts) and stdio child processes (stdio-transport.ts, loaded only when a
// stdio server is configured).
import type { Readable } from 'node:stream';
import type { McpServerConfig } from '../config/schema.js';
import type { JsonRpcId } from './json-rpc.js';
import type { McpExchange } from './mcp-exchange.js';
import type { McpTarget } from './mcp-upstreams.js';

export interface ForwardOptions {
  method: 'POST' | 'GET' | 'DELETE';
  /** A long-lived answer (the GET stream): no deadline between its bytes. */
  stream: boolean;
  body?: Buffer;
  /** The JSON-RPC id the client's request carried (for the error body of a refusal). */
  id?: JsonRpcId | null;
  /** Streamable HTTP only: the target of a new upstream session the aggregated endpoint opens (otherwise the session's). */
  target?: McpTarget;
  /**
   * A request of the gateway's own (the aggregated endpoint's initialize, lists, GET streams):
   * none of the client's headers pass (its Accept and Last-Event-ID were for the gateway), and
   * the revision is the session's.
   */
  own?: boolean;
}

/** An upstream's answer as the front door relays it; the body is read as it arrives. */
export interface UpstreamAnswer {
  statusCode: number;
  headers: Record<string, string | string[] | undefined>;
  body: Readable;
}

/** Where a new session lives, as its record keeps it (mcp-session-record.ts). */
export interface SessionPlace {
  target: string;
  upstreamSession: string | null;
}

/** initialize's answer, and the place of the session it opened (undefined: none was opened). */
export interface OpenedSession {
  answer: UpstreamAnswer;
  place: SessionPlace | undefined;
}

/** What a transport needs of the front door: ending a session whose upstream side is gone (the client is answered 404). */
export interface SessionEnder {
  sessionLost(exchange: McpExchange): Promise<never>;
}

export interface McpTransport {
  /**
   * initialize: a new upstream session for the gateway session `sessionId` (not yet stored).
   * A refusal (no upstream, no room, a server that failed) throws an McpAnswer.
   */
  open(door: SessionEnder, exchange: McpExchange, body: Buffer, id: JsonRpcId, sessionId: string): Promise<OpenedSession>;
  /** Any other request of the exchange's session: its answer, or an McpAnswer thrown; a session gone upstream is door.sessionLost. */
  forward(door: SessionEnder, exchange: McpExchange, options: ForwardOptions): Promise<UpstreamAnswer>;
  /** notifications/cancelled for a request whose client left (fire and forget). */
  cancel(door: SessionEnder, exchange: McpExchange, requestId: JsonRpcId): void;
  /** A reload: the servers as they now are (those of this transport's kind among them). */
  update(servers: ReadonlyMap<string, McpServerConfig>): void;
  close(): Promise<void>;
}

/** Reads and drops what is left of an answer's body (DELETE's, a refused one's). */
export async function discardBody(body: Readable): Promise<void> {
  const dump = (body as Readable & { dump?: () => Promise<void> }).dump;
  if (typeof dump === 'function') {
    await dump.call(body).catch(() => undefined);
    return;
  }
  body.resume();
  body.destroy();
}
