// The gateway's HTTP server: route → key → rate limit → body → upstream (DESIGN.md 1, 2).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { AuditLog } from '../audit/audit-record.js';
import type { Authenticator } from '../auth/authenticator.js';
import type { AuthenticatedKey } from '../keys/key-record.js';
import type { AgentConfig, GatewayConfig } from '../config/schema.js';
import type { Clock } from '../clock.js';
import type { Logger } from '../logger.js';
import { metrics } from '../metrics/metrics.js';
import { ActiveStreams } from '../proxy/active-streams.js';
import { DeadlineSweeper } from '../proxy/deadline-sweeper.js';
import { forwardToUpstream, type ForwardFailureHandler } from '../proxy/upstream-exchange.js';
import { upstreamRequestHeaders } from '../proxy/header-hygiene.js';
import { traceContextFor, type TraceContext } from '../proxy/traceparent.js';
import { appendRateLimitHeaders, retryAfterSeconds } from '../ratelimit/rate-limit-headers.js';
import type { RateLimitDecision, RateLimiter } from '../ratelimit/rate-limiter.js';
import { clientAddress, type ClientAddress } from './client-address.js';
import { GatewayError } from '../errors.js';
import { hasResponseInFlight, sendError, writeRawError } from './errors.js';
import { finishRequest } from './finish-request.js';
import type { GatewayRuntime } from './gateway-runtime.js';
import { ClientGoneError, isJsonContentType, readBody, type BodyReceiver } from './read-body.js';
import { refuseContentEncoding, refuseRepeatedHost } from './request-header-checks.js';
import { requestLogWriter } from './request-log-line.js';
import { chooseRequestId } from './request-id.js';
import { RequestState } from '../request/request-state.js';
import { matchRoute } from './routing.js';
import { type ChatRoute } from '../request/chat-route.js';
import { parseJsonBody, validateChatRequest } from './validate-chat-request.js';

export interface GatewayDependencies {
  runtime: GatewayRuntime;
  authenticator: Authenticator;
  rateLimiter: RateLimiter;
  auditLog: AuditLog;
  logger: Logger;
  clock: Clock;
  activeStreams?: ActiveStreams;
}

export interface GatewayServer {
  server: Server;
  activeStreams: ActiveStreams;
  handle(req: IncomingMessage, res: ServerResponse): void;
}

export function createGatewayServer(deps: GatewayDependencies): GatewayServer {
  const { runtime, authenticator, rateLimiter, auditLog, logger, clock } = deps;
  const activeStreams = deps.activeStreams ?? new ActiveStreams();
  const deadlines = new DeadlineSweeper();
  // The per-request line is built only from fields that never hold key material (key_id is
  // public), so it skips redaction, which would cost more than the rest of the line.
  const requestLogger = logger.child({}, { redact: [] });
  // A child keeps the level it was made with; a reload (SIGHUP) sets the root's level.
  logger.on('level-change', (level, _value, _previous, _previousValue, changed) => {
    if (changed === logger) requestLogger.level = level;
  });
  const logRequest = requestLogWriter(requestLogger);
  const listen = runtime.current.config.listen;

  /**
   * One request on its way through the stages below. The stages are plain calls while each
   * can decide at once (a cached key, a leased or in-memory count), and continue from a
   * promise only when one has to wait; the body arrives through the BodyReceiver methods.
   * On the common path no async frame and no promise per request, and no closure beyond
   * the response's 'close' listener: with hundreds of requests in flight those showed in
   * the CPU per request (decisions 0008 and 0009).
   */
  class ChatRequest implements BodyReceiver {
    agent: AgentConfig | undefined = undefined;
    route: ChatRoute = 'chat';
    key: AuthenticatedKey | undefined = undefined;

    constructor(
      readonly req: IncomingMessage,
      readonly res: ServerResponse,
      readonly state: RequestState,
      readonly config: GatewayConfig,
      readonly address: ClientAddress,
      readonly trace: TraceContext,
    ) {}

    bodyReceived(body: Buffer): void {
      try {
        forward(this, body);
      } catch (error) {
        this.fail(error);
      }
    }

    bodyFailed(error: Error): void {
      this.fail(error);
    }

    fail(error: unknown): void {
      answerError(error, this.req, this.res, this.state);
    }
  }

  function handle(req: IncomingMessage, res: ServerResponse): void {
    const { config, routes } = runtime.current;
    const address = clientAddress(req, config.listen.trustProxy);
    const state = new RequestState(req.headers['x-request-id'], address.clientIp, clock.now(), performance.now());
    // Known from the start so every log line, rejections included, carries the trace id.
    const trace = traceContextFor(req.headers.traceparent, state.requestId);
    state.traceId = trace.traceId;
    // 'close' comes once; `on` spares the wrapper `once` allocates per request.
    res.on('close', () => finishRequest(state, res, auditLog, logRequest));
    const request = new ChatRequest(req, res, state, config, address, trace);

    try {
      refuseRepeatedHost(req);
      const { agent, route } = matchRoute(routes, req.method, req.url, req.headers.host);
      request.agent = agent;
      request.route = route;
      state.agentId = agent.id;
      state.route = route;

      const authInput = { authorization: req.headers.authorization, agentId: agent.id, clientIp: address.clientIp, connection: req.socket };
      const key = authenticator.authenticateNow(authInput);
      if (key !== undefined) {
        withKey(request, key);
        return;
      }
      void authenticator.authenticate(authInput).then(
        (found) => withKey(request, found),
        (error: unknown) => request.fail(error),
      );
    } catch (error) {
      request.fail(error);
    }
  }

  /** The caller is known: its plan's limits, then the body. */
  function withKey(request: ChatRequest, key: AuthenticatedKey): void {
    const { state, config } = request;
    try {
      state.key = key;
      request.key = key;
      const plan = config.plans.get(key.plan);
      if (!plan) {
        logger.error({ request_id: state.requestId, key_id: key.keyId, plan: key.plan }, 'key refers to a plan that is not configured');
        throw new GatewayError('internal_error', { message: 'The API key refers to a plan the gateway does not know.' });
      }
      if (plan.windows.length === 0) {
        readRequestBody(request);
        return;
      }
      const subject = config.rateLimits.scope === 'account' ? `account:${key.account}` : `key:${key.keyId}`;
      const decision = rateLimiter.consumeNow(subject, plan.windows);
      if (decision !== undefined) {
        withDecision(request, decision);
        return;
      }
      void rateLimiter.consume(subject, plan.windows).then(
        (decided) => withDecision(request, decided),
        (error: unknown) => request.fail(error),
      );
    } catch (error) {
      request.fail(error);
    }
  }

  function withDecision(request: ChatRequest, decision: RateLimitDecision): void {
    const { state } = request;
    try {
      state.hasRateLimitHeaders = appendRateLimitHeaders(decision, state.responseHeaders);
      if (!decision.allowed) {
        metrics.rateLimited.inc({ plan: request.key!.plan });
        state.outcome = 'rate_limited';
        throw new GatewayError('rate_limit_exceeded', { retryAfterSeconds: retryAfterSeconds(decision) });
      }
      readRequestBody(request);
    } catch (error) {
      request.fail(error);
    }
  }

  /** Throws on a wrong media type; otherwise the body comes to request.bodyReceived. */
  function readRequestBody(request: ChatRequest): void {
    const { req, config } = request;
    if (!isJsonContentType(req.headers['content-type'])) throw new GatewayError('unsupported_media_type');
    refuseContentEncoding(req);
    readBody(req, config.limits.maxBodyBytes, request);
  }

  function forward(request: ChatRequest, body: Buffer): void {
    const { req, res, state, config, address, trace } = request;
    const agent = request.agent!;
    const key = request.key!;
    state.bytesIn = body.length;
    const summary = validateChatRequest(parseJsonBody(body, config.limits), agent, config.limits);
    state.userId = summary.userId;
    state.sessionId = summary.sessionId;

    const target = runtime.pools.target(agent.id);
    if (!target) throw new GatewayError('agent_unavailable', { retryAfterSeconds: 1 });
    forwardToUpstream(
      { res, state, agent, target, route: request.route, stream: config.stream, activeStreams, deadlines },
      {
        body,
        headers: upstreamRequestHeaders(req.headers, {
          requestId: state.requestId,
          agentId: agent.id,
          forwardedFor: address.forwardedFor,
          forwardedProto: 'http',
          forwardedHost: req.headers.host,
          keyId: key.keyId,
          accountId: key.account,
          traceparent: trace.traceparent,
        }),
      },
      answerForwardFailure,
    );
  }

  // Out of undici's callback, as an awaited rejection used to be: the answer is written
  // after undici has finished with the failed request. One function for every request.
  const answerForwardFailure: ForwardFailureHandler = (error, res, state) => {
    process.nextTick(answerError, error, res.req, res, state);
  };

  function answerError(error: unknown, req: IncomingMessage, res: ServerResponse, state: RequestState): void {
    if (error instanceof ClientGoneError) {
      state.outcome = 'client_closed';
      return;
    }
    let gatewayError: GatewayError;
    if (error instanceof GatewayError) {
      gatewayError = error;
    } else {
      logger.error({ request_id: state.requestId, err: error }, 'unhandled error in request pipeline');
      gatewayError = new GatewayError('internal_error');
      state.outcome = 'error';
    }
    state.errorType = gatewayError.type;
    if (!res.headersSent) state.applyGatewayHeaders(res);
    if (gatewayError.status === 400 || gatewayError.status === 413 || gatewayError.status === 415) state.outcome ??= 'invalid_request';
    // A body we refused to read must not be read to its end to keep the connection.
    if (gatewayError.type === 'payload_too_large' || !req.complete) res.shouldKeepAlive = false;
    if (gatewayError.type === 'payload_too_large') res.setHeader('Connection', 'close');
    state.bytesOut += sendErrorCounted(res, gatewayError, state.requestId);
  }

  const server = createServer(
    {
      headersTimeout: listen.headersTimeoutMs,
      requestTimeout: listen.requestTimeoutMs,
      keepAliveTimeout: listen.keepAliveTimeoutMs,
      maxHeaderSize: listen.maxHeaderBytes,
      // How often the two timeouts above are enforced; Node's default (30 s) would let a
      // slowloris client keep a connection 30 s past headers_timeout.
      connectionsCheckingInterval: 1_000,
      noDelay: true,
    },
    handle,
  );
  server.on('clientError', (error: NodeJS.ErrnoException, socket) => {
    if (!socket.writable || error.code === 'ECONNRESET' || hasResponseInFlight(socket)) {
      socket.destroy();
      return;
    }
    if (error.code === 'HPE_HEADER_OVERFLOW') writeRawError(socket, new GatewayError('request_header_fields_too_large'));
    else if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') writeRawError(socket, new GatewayError('request_timeout'));
    else writeRawError(socket, new GatewayError('invalid_request', { message: 'The request is not valid HTTP.' }));
  });
  // Without these listeners Node would close a CONNECT without an answer and send a bare 417.
  server.on('connect', (_req: IncomingMessage, socket: Duplex) => {
    writeRawError(socket, new GatewayError('method_not_allowed', { message: 'CONNECT is not supported.' }));
  });
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    res.shouldKeepAlive = false;
    sendError(res, new GatewayError('expectation_failed'), chooseRequestId(req.headers['x-request-id']));
  });

  return { server, activeStreams, handle };
}

function sendErrorCounted(res: ServerResponse, error: GatewayError, requestId: string): number {
  const before = res.headersSent;
  sendError(res, error, requestId);
  if (before) return 0;
  const length = res.getHeader('Content-Length');
  return typeof length === 'number' ? length : Number(length ?? 0);
}
