// The stdio transport behind the front door (docs/mcp.md "stdio servers"; decision 0100): one
// child process per gateway session, at most `max_sessions` live per server on this instance
// (beyond: 503 with Retry-After, nothing spawned). A session lives with its child on the
// instance that started it: its record's target is `stdio:{this instance's id}`, so another
// instance (or this one after a restart) finds no such target and answers 404, as for a lost
// session. Idle sessions (`mcp.session_idle` without a request) and DELETE stop the child; a
// child that exits ends its session; close() stops every child (SIGTERM, then SIGKILL).
// Loaded only when a stdio server is configured (mcp-front-door.ts imports it dynamically).
import { randomBytes } from 'node:crypto';
import type { McpServerConfig } from '../config/schema.js';
import { GatewayError } from '../errors.js';
import type { Logger } from '../logger.js';
import { decodeMessage, type JsonRpcId, type JsonRpcMessage } from './json-rpc.js';
import { jsonRpcRefusal } from './mcp-answers.js';
import type { McpExchange } from './mcp-exchange.js';
import { readAnswer } from './mcp-relay.js';
import type { ForwardOptions, McpTransport, SessionEnder, OpenedSession, UpstreamAnswer } from './mcp-transport.js';
import { emptyAnswer, jsonAnswer } from './stdio-answer.js';
import { asOneLine } from './stdio-lines.js';
import { StdioSession } from './stdio-session.js';

/** What a client refused for want of a free session is told to wait. */
export const SESSIONS_FULL_RETRY_AFTER_S = 10;
const MAX_SWEEP_INTERVAL_MS = 30_000;
const MIN_SWEEP_INTERVAL_MS = 250;

export interface StdioTransportOptions {
  logger: Logger;
  idleMs: () => number;
  /** The longest line (message) a child may print: mcp.max_response. */
  maxLineBytes: () => number;
  /** A session ended here (its child exited, was stopped, or idled out): the gateway's session ends too. */
  sessionEnded(id: string): void;
}

export class StdioTransport implements McpTransport {
  /** This instance's sessions' target: another instance's differs, so its sessions are lost here. */
  readonly target = `stdio:${randomBytes(12).toString('base64url')}`;
  private readonly sessions = new Map<string, StdioSession>();
  private readonly live = new Map<string, number>();
  private closing = false;
  private sweepTimer: NodeJS.Timeout | undefined;

  constructor(private readonly options: StdioTransportOptions) {
    this.scheduleSweep();
  }

  async open(_door: SessionEnder, exchange: McpExchange, body: Buffer, id: JsonRpcId, sessionId: string): Promise<OpenedSession> {
    const { server } = exchange;
    const live = this.live.get(server.name) ?? 0;
    if (this.closing) throw jsonRpcRefusal(503, id, 'internal_error', 'The gateway is shutting down.', { outcome: 'upstream_error' });
    if (live >= server.maxSessions) {
      throw jsonRpcRefusal(503, id, 'server_error', `The MCP server ${server.name} has all its sessions on this gateway instance in use (max_sessions ${server.maxSessions}). Retry after the time in the Retry-After header, or end an unused session (DELETE).`, {
        data: { type: 'mcp_sessions_exhausted', retry_after_ms: SESSIONS_FULL_RETRY_AFTER_S * 1000 },
        headers: ['Retry-After', String(SESSIONS_FULL_RETRY_AFTER_S)],
        outcome: 'sessions_exhausted',
      });
    }
    const session = new StdioSession(sessionId, server, { maxLineBytes: this.options.maxLineBytes(), logger: this.options.logger, ended: (ended) => this.ended(ended) });
    this.sessions.set(sessionId, session);
    this.live.set(server.name, live + 1);
    const message = decodeMessage(JSON.parse(body.toString('utf8')));
    let text: string;
    try {
      // Read whole (it is small) and as JSON: whether it succeeded decides whether a session opens.
      const answer = await session.request(id, message.kind === 'request' ? message.params : undefined, asOneLine(body), false, exchange.res);
      text = (await readAnswer(answer.body, this.options.maxLineBytes(), id)).toString('utf8');
    } catch (error) {
      void session.end();
      throw error;
    }
    const succeeded = (JSON.parse(text) as { result?: unknown }).result !== undefined;
    if (!succeeded) void session.end();
    return { answer: jsonAnswer(text), place: succeeded ? { target: this.target, upstreamSession: null } : undefined };
  }

  async forward(door: SessionEnder, exchange: McpExchange, options: ForwardOptions): Promise<UpstreamAnswer> {
    // Another instance's session: 404 as for a lost one, but its record stays (the child lives there, and serves requests that reach it).
    if (exchange.session?.target !== this.target) throw new GatewayError('mcp_session_not_found');
    const session = exchange.sessionId === undefined ? undefined : this.sessions.get(exchange.sessionId);
    if (session === undefined || session.server.name !== exchange.server.name || !session.child.alive) return door.sessionLost(exchange);
    session.lastUsedAt = Date.now();
    if (options.method === 'DELETE') {
      await session.end();
      return emptyAnswer(200);
    }
    if (options.method === 'GET') return session.openStream();
    const id = options.id ?? null;
    const body = options.body!;
    const value: unknown = JSON.parse(body.toString('utf8'));
    if (Array.isArray(value)) throw jsonRpcRefusal(400, null, 'invalid_request', 'A stdio MCP server takes one message per request, not a batch.');
    const message: JsonRpcMessage = decodeMessage(value);
    const line = asOneLine(body);
    if (message.kind !== 'request') return session.pass(message, line);
    const accept = exchange.req.headers.accept;
    const sse = typeof accept === 'string' && accept.includes('text/event-stream');
    return session.request(id ?? message.id, message.params, line, sse, exchange.res);
  }

  cancel(_door: SessionEnder, exchange: McpExchange, requestId: JsonRpcId): void {
    if (exchange.sessionId !== undefined) this.sessions.get(exchange.sessionId)?.cancel(requestId);
  }

  /** A reload: sessions of a server no longer configured (or no longer stdio) are stopped; the others keep their child. */
  update(servers: ReadonlyMap<string, McpServerConfig>): void {
    for (const session of this.sessions.values()) {
      if (servers.get(session.server.name)?.transport !== 'stdio') void session.end();
    }
  }

  async close(): Promise<void> {
    this.closing = true;
    if (this.sweepTimer !== undefined) clearTimeout(this.sweepTimer);
    await Promise.all([...this.sessions.values()].map((session) => session.end()));
  }

  private ended(session: StdioSession): void {
    if (this.sessions.get(session.id) !== session) return;
    this.sessions.delete(session.id);
    const left = (this.live.get(session.server.name) ?? 1) - 1;
    if (left <= 0) this.live.delete(session.server.name);
    else this.live.set(session.server.name, left);
    this.options.sessionEnded(session.id);
  }

  /** Idle sessions stop their child, checked a few times per `mcp.session_idle` (at most every 30 s). */
  private scheduleSweep(): void {
    const interval = Math.min(MAX_SWEEP_INTERVAL_MS, Math.max(MIN_SWEEP_INTERVAL_MS, Math.floor(this.options.idleMs() / 4)));
    this.sweepTimer = setTimeout(() => {
      this.sweep();
      if (!this.closing) this.scheduleSweep();
    }, interval);
    this.sweepTimer.unref();
  }

  private sweep(): void {
    const oldest = Date.now() - this.options.idleMs();
    for (const session of this.sessions.values()) {
      if (!session.busy && session.lastUsedAt <= oldest) {
        this.options.logger.info({ mcp_server: session.server.name, pid: session.child.pid }, 'stdio MCP session idle: its process is stopped');
        void session.end();
      }
    }
  }
}
