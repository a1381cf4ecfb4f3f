// The upstream sessions of an aggregated session (docs/mcp.md "The aggregated endpoint"): one per
// server, opened the first time a request needs that server — initialize with the client's own
// revision, capabilities and clientInfo, then notifications/initialized — through the same
// forward as `/mcp/{server}` (mcp-forward.ts), and kept in the session store beside the
// gateway's session, so any instance serves any session. Two requests of one session on one
// instance that need the same server wait for one opening; when two instances open one server at
// once (a client's GET on one, its first call on the other), the one that finds the other's
// entry already stored adopts it and ends its own, so the session holds one upstream session
// per server. Every change of the stored record is a compare-and-swap (mcp-session-swap.ts):
// two openings at once, of one server or of two, never write over each other.
import type { McpServerConfig } from '../config/schema.js';
import { GatewayError } from '../errors.js';
import type { AggregateSessionRecord, AggregateUpstream } from './aggregate-session-record.js';
import { serverDoor, serverExchange, type AggregateRequest } from './aggregate-request.js';
import type { JsonRpcId } from './json-rpc.js';
import { answerWithId, jsonRpcRefusal, McpAnswer } from './mcp-answers.js';
import type { McpDoor } from './mcp-door.js';
import { forwardToServer } from './mcp-forward.js';
import { readAnswer, responseIn } from './mcp-relay.js';
import { discardBody } from './mcp-transport.js';

// The gateway's own request id upstream: a new upstream session has no other request in flight.
const INITIALIZE_ID = 'agentgw-initialize';
const MAX_INITIALIZE_ANSWER = 1024 * 1024;
const INITIALIZED = Buffer.from(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
// A swap fails only when another request changed the record in between: each change is an
// upstream session opened or dropped, so a session sees few; this many in a row is not progress.
const MAX_SWAPS = 16;

export class AggregateUpstreamSessions {
  private readonly opening = new Map<string, Promise<AggregateUpstream>>();

  constructor(private readonly front: McpDoor) {}

  /** The door the per-server stages use for `server` within this request (see serverDoor). */
  doorFor(request: AggregateRequest, id: JsonRpcId | null): McpDoor {
    return serverDoor(this.front, request, (server) => this.drop(request, server), id);
  }

  /** The session's upstream session with `server`, opened now if it has none; a refusal (502/503/504, `-32603`) when the server cannot open one. */
  ensure(request: AggregateRequest, server: McpServerConfig, id: JsonRpcId | null): Promise<AggregateUpstream> {
    const known = request.record!.upstreams[server.name];
    if (known !== undefined) return Promise.resolve(known);
    const slot = `${request.sessionId!}\u0000${server.name}`;
    let pending = this.opening.get(slot);
    if (pending === undefined) {
      pending = this.open(request, server).finally(() => this.opening.delete(slot));
      this.opening.set(slot, pending);
    }
    // The opening may be another request's: its refusal is answered with this request's id.
    return pending.catch((error: unknown) => {
      throw error instanceof McpAnswer ? answerWithId(error, id) : error;
    });
  }

  /** Drops `server`'s upstream session from the stored record (it is gone upstream), unless another has replaced it there. */
  async drop(request: AggregateRequest, server: string): Promise<void> {
    const gone = request.record?.upstreams[server];
    if (request.record !== undefined) delete request.record.upstreams[server];
    if (gone === undefined) return;
    await this.change(request, (current) => {
      const stored = current.upstreams[server];
      if (stored === undefined || stored.target !== gone.target || stored.upstreamSession !== gone.upstreamSession) return undefined;
      const upstreams = { ...current.upstreams };
      delete upstreams[server];
      return { ...current, upstreams };
    });
  }

  /** DELETE of every upstream session of the record, concurrently; a failure changes nothing (the gateway's session ends anyway). */
  async endAll(request: AggregateRequest): Promise<void> {
    const door = this.doorFor(request, null);
    await Promise.all(
      Object.entries(request.record!.upstreams).map(async ([name, upstream]) => {
        const server = request.config.mcpServers.get(name);
        if (server === undefined) return;
        const answer = await forwardToServer(door, serverExchange(request, server, upstream), { method: 'DELETE', stream: false, own: true }).catch(() => undefined);
        if (answer !== undefined) await discardBody(answer.body);
      }),
    );
  }

  /** The opening itself; its refusals carry no id (ensure gives each waiting request its own). */
  private async open(request: AggregateRequest, server: McpServerConfig): Promise<AggregateUpstream> {
    const record = request.record!;
    const target = this.front.upstreams.pick(server.name);
    if (target === undefined) throw jsonRpcRefusal(503, null, 'internal_error', `The MCP server ${server.name} has no upstream configured.`, { outcome: 'upstream_error' });
    const door = this.doorFor(request, null);
    const client = JSON.parse(record.client) as { capabilities: unknown; clientInfo: unknown };
    const body = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: INITIALIZE_ID, method: 'initialize', params: { protocolVersion: record.protocol, capabilities: client.capabilities, clientInfo: client.clientInfo } }));
    const answer = (await forwardToServer(door, serverExchange(request, server, undefined), { method: 'POST', stream: false, body, target, own: true }))!;
    const refused = (why: string) => jsonRpcRefusal(502, null, 'internal_error', `The MCP server ${server.name} ${why}.`, { outcome: 'upstream_error' });
    if (answer.statusCode >= 300) {
      await discardBody(answer.body);
      throw refused(`refused to initialize (HTTP ${answer.statusCode})`);
    }
    const contentType = answer.headers['content-type'];
    const raw = await readAnswer(answer.body, MAX_INITIALIZE_ANSWER, INITIALIZE_ID);
    const result = responseIn(raw, typeof contentType === 'string' ? contentType : undefined, INITIALIZE_ID)?.result as { protocolVersion?: unknown } | undefined;
    // The gateway told the client this revision: a server that will not speak it cannot be relayed to that client.
    if (result?.protocolVersion !== record.protocol) throw refused(`does not speak MCP ${record.protocol}`);
    const header = answer.headers['mcp-session-id'];
    const upstream: AggregateUpstream = { target: target.url, upstreamSession: typeof header === 'string' ? header : null };
    const initialized = (await forwardToServer(door, serverExchange(request, server, upstream), { method: 'POST', stream: false, body: INITIALIZED, own: true }))!;
    await discardBody(initialized.body);
    if (initialized.statusCode >= 300) throw refused(`refused notifications/initialized (HTTP ${initialized.statusCode})`);
    return this.remember(request, server.name, upstream, door);
  }

  /**
   * The new upstream session merged into the stored record, or the one another request stored
   * first (ours then ends); a session ended meanwhile ends ours upstream too.
   */
  private async remember(request: AggregateRequest, server: string, upstream: AggregateUpstream, door: McpDoor): Promise<AggregateUpstream> {
    let stored: AggregateUpstream | undefined;
    const kept = await this.change(request, (current) => {
      stored = current.upstreams[server];
      return stored === undefined ? { ...current, upstreams: { ...current.upstreams, [server]: upstream } } : undefined;
    });
    if (!kept || stored !== undefined) {
      const config = request.config.mcpServers.get(server)!;
      const answer = await forwardToServer(door, serverExchange(request, config, upstream), { method: 'DELETE', stream: false, own: true }).catch(() => undefined);
      if (answer !== undefined) await discardBody(answer.body);
      if (!kept || stored === undefined) throw new GatewayError('mcp_session_not_found');
      request.record!.upstreams[server] = stored;
      return stored;
    }
    request.record!.upstreams[server] = upstream;
    return upstream;
  }

  /**
   * Applies `edit` to the stored record by compare-and-swap, reading again when another request
   * changed it first. `edit` answers undefined when there is nothing to write. False when the
   * session is gone (ended, expired, or not this key's); a session changed more than
   * MAX_SWAPS times in a row by others is refused with 503 (the client retries).
   */
  private async change(request: AggregateRequest, edit: (current: AggregateSessionRecord) => AggregateSessionRecord | undefined): Promise<boolean> {
    const sessions = this.front.deps.sessions;
    let current = await sessions.touchAggregate(request.sessionId!);
    for (let attempt = 0; attempt < MAX_SWAPS; attempt++) {
      if (current === undefined || current.keyId !== request.key.keyId) return false;
      const next = edit(current);
      if (next === undefined) return true;
      const swap = await sessions.swapAggregate(request.sessionId!, current, next);
      if (swap.swapped) return true;
      current = swap.current;
    }
    throw jsonRpcRefusal(503, null, 'internal_error', 'The MCP session is being changed by other requests; retry.', { outcome: 'upstream_error' });
  }
}
