// The MCP front door (docs/mcp.md; docs/design.md "The MCP front door"): `/mcp/{server}` in
// front of MCP servers, with the chat routes' key authentication (the same Authenticator, the
// server as one more target of the key's scope; a JWT access token must name the server's
// resource URL, docs/identity.md "MCP clients"), the plan's limits through one adapter
// (mcp-limits.ts), the one audit log and metrics module. Stages, in order: server → Origin →
// method → key → protocol revision → session → (POST) body, per-message policy, forward; the
// POST stages are in mcp-post.ts, the upstream call in mcp-forward.ts through the server's
// transport (mcp-transport.ts: Streamable HTTP, or stdio children loaded only when configured).
// `/mcp` itself, every server of the key at once, is the aggregated endpoint (aggregate-endpoint.ts).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { extractBearerToken } from '../auth/bearer-token.js';
import { NO_MCP_AUTHORIZATION, type McpAuthorization } from '../auth/mcp-authorization.js';
import type { GatewayConfig, McpServerConfig } from '../config/schema.js';
import { GatewayError } from '../errors.js';
import { clientAddress } from '../http/client-address.js';
import { sendError } from '../http/errors.js';
import { requestConnection } from '../http/http2-requests.js';
import { answerProtectedResource, isProtectedResourceRequest } from '../http/protected-resource-route.js';
import { chooseRequestId } from '../http/request-id.js';
import type { AuthenticatedKey } from '../keys/key-record.js';
import { MCP_AGGREGATE_TARGET, mcpTarget } from '../keys/mcp-scope.js';
import { metrics } from '../metrics/metrics.js';
import { jsonRpcRefusal, McpAnswer, writeAnswer } from './mcp-answers.js';
import { PROTOCOL_REVISIONS, type McpExchange } from './mcp-exchange.js';
import type { JsonRpcId } from './json-rpc.js';
import { cancelUpstream, forwardToServer, relayAnswer } from './mcp-forward.js';
import { ToolLabels } from './mcp-labels.js';
import { ListedTools } from './listed-tools.js';
import { mcpServerStates, type McpServerState } from './mcp-server-state.js';
import { SessionGauge } from './session-gauge.js';
import { handlePost } from './mcp-post.js';
import type { McpDoor, McpFrontDoorDependencies } from './mcp-door.js';
import { isSessionId } from './mcp-session-store.js';
import { HttpTransport } from './mcp-http-transport.js';
import { discardBody, type McpTransport } from './mcp-transport.js';
import type { McpUpstreams } from './mcp-upstreams.js';
import { AggregateEndpoint } from './aggregate-endpoint.js';

const PREFIX = '/mcp/';
const TOKEN_NOT_ALLOWED = 'The access token is not allowed to use this MCP server (its mcp claim does not name it).';

/** Whether the bearer is a key (`ha_…`, or none); anything else was taken as an access token. */
function isKeyBearer(authorization: string | undefined): boolean {
  const bearer = extractBearerToken(authorization);
  return bearer === '' || bearer.startsWith('ha_');
}

/** Whether a request path is the front door's (`/mcp` and below). */
export function isMcpPath(url: string | undefined): boolean {
  return url !== undefined && url.startsWith('/mcp') && (url.length === 4 || url[4] === '/' || url[4] === '?');
}

export type { McpFrontDoorDependencies };

export class McpFrontDoor implements McpDoor {
  readonly http: HttpTransport;
  private readonly httpReady: Promise<McpTransport>;
  /** The stdio transport, imported the first time a stdio server is configured (off, it loads nothing). */
  private stdio: Promise<McpTransport> | undefined;
  readonly toolLabels = new ToolLabels();
  readonly listedTools = new ListedTools();
  readonly sessionGauge: SessionGauge;
  private readonly authorization: McpAuthorization;
  private readonly aggregate: AggregateEndpoint;

  constructor(readonly deps: McpFrontDoorDependencies) {
    const servers = deps.runtime.current.config.mcpServers;
    this.http = new HttpTransport(servers);
    this.httpReady = Promise.resolve(this.http);
    this.sessionGauge = new SessionGauge(() => deps.runtime.current.config.mcp.sessionIdleMs);
    this.authorization = deps.mcpAuthorization ?? NO_MCP_AUTHORIZATION;
    this.aggregate = new AggregateEndpoint(this);
    if (hasStdioServer(servers)) void this.stdioTransport().catch(() => undefined);
  }

  /** The Streamable HTTP servers' targets (the aggregated endpoint picks among them). */
  get upstreams(): McpUpstreams {
    return this.http.upstreams;
  }

  transportFor(server: McpServerConfig): Promise<McpTransport> {
    return server.transport === 'http' ? this.httpReady : this.stdioTransport();
  }

  private stdioTransport(): Promise<McpTransport> {
    this.stdio ??= import('./stdio-transport.js').then(({ StdioTransport }) => {
      const { deps } = this;
      // A child that ends on its own (exit, crash, idle) ends its gateway session here too.
      return new StdioTransport({
        logger: deps.logger,
        idleMs: () => deps.runtime.current.config.mcp.sessionIdleMs,
        maxLineBytes: () => deps.runtime.current.config.mcp.maxResponseBytes,
        sessionEnded: (id) => {
          this.sessionGauge.ended(id);
          deps.sessions.delete(id).catch(() => undefined);
        },
      });
    });
    return this.stdio;
  }

  /** Its paths: `/mcp` and below, and with tokens on, the protected resource metadata (RFC 9728). */
  readonly owns = (url: string | undefined): boolean => isMcpPath(url) || (this.authorization.on && isProtectedResourceRequest(url));

  /** node:http's listener for the paths it owns. */
  readonly handle = (req: IncomingMessage, res: ServerResponse): void => {
    if (!isMcpPath(req.url)) {
      answerProtectedResource(req, res, this.deps.runtime.current.config, this.authorization);
      return;
    }
    const requestId = chooseRequestId(req.headers['x-request-id']);
    res.setHeader('X-Request-Id', requestId);
    this.serve(req, res, requestId).catch((error: unknown) => this.fail(res, requestId, error));
  };

  reload(config: GatewayConfig): void {
    this.http.update(config.mcpServers);
    this.listedTools.keepOnly(config.mcpServers);
    if (this.stdio !== undefined || hasStdioServer(config.mcpServers)) void this.stdioTransport().then((stdio) => stdio.update(config.mcpServers)).catch(() => undefined);
  }

  /** Each served server's upstreams, last-listed tools and counts, for the admin API (this process's view). */
  state(): Promise<Record<string, McpServerState>> {
    return mcpServerStates(this.http.upstreams, this.listedTools);
  }

  /** Closes the upstream pools and ends every stdio child (SIGTERM, then SIGKILL after a grace). */
  async close(): Promise<void> {
    await Promise.all([this.http.close(), this.stdio?.then((stdio) => stdio.close()), this.deps.sessions.close()]);
  }

  private async serve(req: IncomingMessage, res: ServerResponse, requestId: string): Promise<void> {
    const { config } = this.deps.runtime.current;
    const server = serverOf(config, req.url);
    refuseOrigin(config, req.headers.origin);
    const method = req.method;
    if (method !== 'POST' && method !== 'GET' && method !== 'DELETE') throw new GatewayError('method_not_allowed', { message: 'The MCP endpoint accepts POST, GET and DELETE.', headers: { Allow: 'POST, GET, DELETE' } });
    const clientIp = clientAddress(req, config.listen.trustProxy).clientIp;
    const key = await this.authenticate(req, server?.name, clientIp);
    const protocol = protocolOf(req.headers['mcp-protocol-version']);
    if (server === undefined) return this.aggregate.serve({ req, res, config, key, requestId, clientIp, protocol, startedAt: this.deps.clock.now(), startedPerf: performance.now() });
    const exchange: McpExchange = { req, res, config, server, key, requestId, clientIp, protocol, startedAt: this.deps.clock.now(), startedPerf: performance.now() };
    if (method === 'POST') return handlePost(this, exchange);
    await this.session(exchange, req.headers['mcp-session-id']);
    if (method === 'GET') return this.openStream(exchange);
    return this.endSession(exchange);
  }

  /**
   * The caller, through the chat routes' Authenticator: a key whose MCP scope names the server
   * (for `/mcp`, `server` undefined: any server), or a token whose `aud` is the resource's URL
   * and whose mcp claim names the server (for `/mcp`: any); outside the scope is 403
   * key_not_allowed. A 401 carries the challenge that points to the protected resource
   * metadata when tokens are on.
   */
  private async authenticate(req: IncomingMessage, server: string | undefined, clientIp: string): Promise<AuthenticatedKey> {
    const target = server === undefined ? MCP_AGGREGATE_TARGET : mcpTarget(server);
    const input = { authorization: req.headers.authorization, agentId: target, clientIp, connection: requestConnection(req), audience: this.authorization.audience(server) };
    try {
      return this.deps.authenticator.authenticateNow(input) ?? (await this.deps.authenticator.authenticate(input));
    } catch (error) {
      if (!(error instanceof GatewayError)) throw error;
      if (error.type === 'agent_not_allowed') throw new GatewayError('key_not_allowed', isKeyBearer(input.authorization) ? {} : { message: TOKEN_NOT_ALLOWED });
      if (error.status !== 401) throw error;
      const challenge = this.authorization.challenge(server, error.type !== 'missing_api_key');
      if (challenge === undefined) throw error;
      throw new GatewayError(error.type, { message: error.message, headers: { ...error.headers, 'WWW-Authenticate': challenge } });
    }
  }

  /**
   * The exchange's session from the store: 404 when unknown, expired, of another server or of
   * another key (a session id alone never lets another caller in).
   */
  async session(exchange: McpExchange, header: string | string[] | undefined): Promise<void> {
    if (header === undefined) throw jsonRpcRefusal(400, null, 'invalid_request', 'Send the Mcp-Session-Id header of your session (initialize first).');
    const id = typeof header === 'string' ? header : '';
    const record = isSessionId(id) ? await this.deps.sessions.touch(id) : undefined;
    if (record === undefined || record.server !== exchange.server.name || record.keyId !== exchange.key.keyId) throw new GatewayError('mcp_session_not_found');
    exchange.sessionId = id;
    exchange.session = record;
    this.sessionGauge.used(id);
  }

  /** The upstream session is gone (the server answered 404): the gateway's ends too, and the client is told 404. */
  async sessionLost(exchange: McpExchange): Promise<never> {
    if (exchange.sessionId !== undefined) {
      await this.deps.sessions.delete(exchange.sessionId).catch(() => undefined);
      this.sessionGauge.ended(exchange.sessionId);
    }
    throw new GatewayError('mcp_session_not_found');
  }

  /** GET: the server-to-client stream, relayed as it arrives; Last-Event-ID passes through. */
  private async openStream(exchange: McpExchange): Promise<void> {
    const answer = await forwardToServer(this, exchange, { method: 'GET', stream: true });
    const outcome = await relayAnswer(exchange, answer, undefined);
    metrics.mcpRequests.inc({ server: exchange.server.name, method: 'GET', outcome: outcome.clientClosed ? 'client_closed' : outcome.upstreamFailed ? 'upstream_error' : 'ok' });
  }

  /** DELETE: the upstream session ends, then the gateway's; 200 whatever the server says (the gateway's session is gone). */
  private async endSession(exchange: McpExchange): Promise<void> {
    const answer = await forwardToServer(this, exchange, { method: 'DELETE', stream: false }).catch(() => undefined);
    if (answer !== undefined) await discardBody(answer.body);
    await this.deps.sessions.delete(exchange.sessionId!);
    this.sessionGauge.ended(exchange.sessionId!);
    metrics.mcpRequests.inc({ server: exchange.server.name, method: 'DELETE', outcome: 'ok' });
    exchange.res.statusCode = 200;
    exchange.res.setHeader('Content-Length', 0);
    exchange.res.end();
  }

  /** A client gone mid-call: the server is told to stop (notifications/cancelled), fire and forget. */
  cancel(exchange: McpExchange, requestId: JsonRpcId): void {
    cancelUpstream(this, exchange, requestId);
  }

  private fail(res: ServerResponse, requestId: string, error: unknown): void {
    if (error instanceof McpAnswer) {
      writeAnswer(res, error);
      return;
    }
    if (error instanceof GatewayError) {
      sendError(res, error, requestId);
      return;
    }
    this.deps.logger.error({ request_id: requestId, err: error instanceof Error ? error.message : String(error) }, 'mcp request failed');
    sendError(res, new GatewayError('internal_error'), requestId);
  }
}

function hasStdioServer(servers: ReadonlyMap<string, McpServerConfig>): boolean {
  for (const server of servers.values()) if (server.transport === 'stdio') return true;
  return false;
}

/** The server of `/mcp/{server}`; undefined for `/mcp` itself (the aggregated endpoint). */
function serverOf(config: GatewayConfig, rawUrl: string | undefined): McpServerConfig | undefined {
  const url = rawUrl ?? '/';
  const query = url.indexOf('?');
  const path = query === -1 ? url : url.slice(0, query);
  if (path === '/mcp') return undefined;
  const name = path.startsWith(PREFIX) ? path.slice(PREFIX.length) : '';
  const server = name === '' || name.includes('/') ? undefined : config.mcpServers.get(name);
  if (server === undefined) throw new GatewayError('not_found', { message: 'No such MCP server. MCP endpoints are /mcp (every server of the key) and /mcp/{server} for the servers in mcp_servers.' });
  return server;
}

/** DNS rebinding protection: a browser page's Origin must be listed; clients that send none pass. */
function refuseOrigin(config: GatewayConfig, origin: string | undefined): void {
  if (origin === undefined || config.mcp.allowedOrigins.has(origin)) return;
  throw new GatewayError('origin_not_allowed');
}

function protocolOf(header: string | string[] | undefined): string | undefined {
  if (header === undefined) return undefined;
  if (typeof header === 'string' && PROTOCOL_REVISIONS.has(header)) return header;
  throw jsonRpcRefusal(400, null, 'invalid_request', `Unsupported MCP-Protocol-Version; this gateway speaks ${[...PROTOCOL_REVISIONS].join(', ')}.`);
}
