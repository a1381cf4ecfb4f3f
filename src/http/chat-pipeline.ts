// The chat routes' request pipeline (docs/design.md, "Wire contract"), one method per stage,
// in the order a request meets them: route → key → limit → body → forward, then finish when
// its response closes. A stage is a plain call while it can decide at once (a cached key, a
// leased or in-memory count) and continues from a promise only when it has to wait; the body
// arrives through the request's BodyReceiver methods. On the common path no async frame, no
// promise, and no closure per request beyond the response's 'close' listener: with hundreds
// of requests in flight those show in the CPU per request
// (docs/decisions/0008-decide-without-waiting.md, 0009-request-stages-without-async.md).
//
// The stages record what they see on the request's RequestState; the audit outcome is
// decided from it in one place, when the response closes (request-outcome.ts).
//
// Over 300 lines on purpose: the stages read top to bottom in one class, and splitting them
// across files would hide the order a request takes (docs/design.md, "Layout").
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AuditLog } from '../audit/audit-record.js';
import type { Authenticator } from '../auth/authenticator.js';
import type { Clock } from '../clock.js';
import { GatewayError } from '../errors.js';
import type { AuthenticatedKey } from '../keys/key-record.js';
import type { Logger } from '../logger.js';
import { metrics } from '../metrics/metrics.js';
import { ActiveStreams } from '../proxy/active-streams.js';
import { DeadlineSweeper } from '../proxy/deadline-sweeper.js';
import type { ForwardFailureHandler } from '../proxy/forward-request.js';
import { upstreamRequestHeaders } from '../proxy/header-hygiene.js';
import { traceContextFor } from '../proxy/traceparent.js';
import { forwardToUpstream } from '../proxy/upstream-dispatch.js';
import { appendRateLimitHeaders } from '../ratelimit/rate-limit-headers.js';
import type { RateLimitDecision, RateLimiter } from '../ratelimit/rate-limiter.js';
import type { BudgetThresholds } from '../ratelimit/budget-thresholds.js';
import { RequestState } from '../request/request-state.js';
import { Admission } from '../policy/admission.js';
import { admissionPolicyOf } from '../policy/policy-cache.js';
import { applyToolScope } from '../policy/tool-scope.js';
import { settleAnswerCost } from '../request/cost.js';
import { countAnswerFacts } from './answer-metrics.js';
import type { RequestTracing } from '../telemetry/request-tracing.js';
import { clientAddress } from './client-address.js';
import { answerError } from './answer-error.js';
import { finishRequest, recordAtEnd } from './finish-request.js';
import { requestConnection, requestHost } from './http2-requests.js';
import { isJournaled } from './journaled-response.js';
import type { GatewayRuntime } from './gateway-runtime.js';
import { isJsonContentType, readBody } from './read-body.js';
import { ChatRequest } from './chat-request.js';
import { requestLogWriter, type RequestLogWriter } from './request-log-line.js';
import { refuseContentEncoding, refuseRepeatedHost } from './request-header-checks.js';
import { matchRoute, type RouteTable } from './routing.js';
import { parseJsonBody, validateChatRequest } from './validate-chat-request.js';

export interface GatewayDependencies {
  runtime: GatewayRuntime;
  authenticator: Authenticator;
  rateLimiter: RateLimiter;
  auditLog: AuditLog;
  logger: Logger;
  clock: Clock;
  activeStreams?: ActiveStreams;
  /** Present only while telemetry is on (src/telemetry/open-tracing.ts). */
  tracing?: RequestTracing | undefined;
  budgetThresholds?: BudgetThresholds | undefined; // only while notifications.budget_thresholds names fractions
}

/** One per server; every request goes through `handle`. */
export class ChatPipeline {
  readonly activeStreams: ActiveStreams;
  private readonly runtime: GatewayRuntime;
  private readonly authenticator: Authenticator;
  private readonly rateLimiter: RateLimiter;
  private readonly auditLog: AuditLog;
  private readonly logger: Logger;
  private readonly clock: Clock;
  private readonly tracing: RequestTracing | undefined;
  private readonly thresholds: BudgetThresholds | undefined;
  /** The runner's headers deadline and a `/chat` body's idle deadline, for every request at once. */
  private readonly deadlines = new DeadlineSweeper();
  private readonly logRequest: RequestLogWriter;

  constructor(deps: GatewayDependencies) {
    this.runtime = deps.runtime;
    this.authenticator = deps.authenticator;
    this.rateLimiter = deps.rateLimiter;
    this.auditLog = deps.auditLog;
    this.logger = deps.logger;
    this.clock = deps.clock;
    this.tracing = deps.tracing;
    this.thresholds = deps.budgetThresholds;
    this.activeStreams = deps.activeStreams ?? new ActiveStreams();
    const logger = deps.logger;
    // The per-request line is built only from fields that never hold key material (key_id is
    // public), so it skips redaction, which would cost more than the rest of the line.
    const requestLogger = logger.child({}, { redact: [] });
    // A child keeps the level it was made with; a reload (SIGHUP) sets the root's level.
    logger.on('level-change', (level, _value, _previous, _previousValue, changed) => {
      if (changed === logger) requestLogger.level = level;
    });
    this.logRequest = requestLogWriter(requestLogger);
  }

  /** node:http's request listener: the request's state and its finish, then the stages. */
  readonly handle = (req: IncomingMessage, res: ServerResponse): void => {
    const { config, routes } = this.runtime.current;
    const address = clientAddress(req, config.listen.trustProxy);
    // The state makes both ids: the audit record's own, and the exchange's X-Request-Id.
    const state = new RequestState(req.headers['x-request-id'], address.clientIp, this.clock.now(), performance.now());
    // Known from the start so every log line, rejections included, carries the trace id. With
    // tracing on, the server span continues the client's trace (and a sampled request gets state.trace).
    const tracing = this.tracing;
    const trace = tracing === undefined ? traceContextFor(req.headers.traceparent, state.requestId) : tracing.begin(req.headers.traceparent, state);
    state.traceId = trace.traceId;
    const request = new ChatRequest(this, req, res, state, config, address, trace);
    // 'close' comes once; `on` spares the wrapper `once` allocates per request.
    res.on('close', () => this.finish(request));
    if (isJournaled(res)) {
      res.recordAtEnd = this.recordAtEnd;
      res.endContext = request;
    }
    try {
      this.route(request, routes);
    } catch (error) {
      this.fail(request, error);
    }
  };

  /** Which agent and route: not_found or method_not_allowed otherwise. */
  route(request: ChatRequest, routes: RouteTable): void {
    const { req, state } = request;
    refuseRepeatedHost(req);
    const { agent, route } = matchRoute(routes, req.method, req.url, requestHost(req));
    request.agent = agent;
    state.agentId = agent.id;
    state.route = route;
    if (state.trace !== undefined) state.trace.agentMatched(agent);
    this.key(request);
  }

  /** Who is calling: at once from the key cache, or after a lookup. */
  key(request: ChatRequest): void {
    const { req, address } = request;
    const input = { authorization: req.headers.authorization, agentId: request.agent!.id, clientIp: address.clientIp, connection: requestConnection(req) };
    const key = this.authenticator.authenticateNow(input);
    if (key !== undefined) {
      this.limit(request, key);
      return;
    }
    void this.authenticator.authenticate(input).then(
      (found) => this.limit(request, found),
      (error: unknown) => this.fail(request, error),
    );
  }

  /**
   * The one limit stage: the key's compiled policy (src/policy/) makes the request's admission;
   * decided now, or after the body when the policy needs its fields.
   */
  limit(request: ChatRequest, key: AuthenticatedKey): void {
    const { state, config } = request;
    // Gone while its key was looked up (an HTTP/2 reset, a hang-up): nothing more to decide.
    if (request.finished) return;
    try {
      state.key = key;
      const plan = config.plans.get(key.plan);
      if (!plan) {
        this.logger.error({ request_id: state.requestId, key_id: key.keyId, plan: key.plan }, 'key refers to a plan that is not configured');
        throw new GatewayError('internal_error', { message: 'The API key refers to a plan the gateway does not know.' });
      }
      const byAccount = config.rateLimits.scope === 'account';
      const policy = admissionPolicyOf(plan, key.limits, !byAccount);
      if (policy.free) {
        this.body(request);
        return;
      }
      const admission = new Admission(policy, key, byAccount, state.route === 'chat/stream');
      request.admission = admission;
      if (admission.afterBody) this.body(request);
      else this.decide(request, admission);
    } catch (error) {
      this.fail(request, error);
    }
  }

  /** Every scope of the request in one limiter call: at once when the limiter can, else after it answers. */
  private decide(request: ChatRequest, admission: Admission): void {
    const decision = admission.decideNow(this.rateLimiter);
    if (decision !== undefined) {
      this.admit(request, decision);
      return;
    }
    void admission.decide(this.rateLimiter).then(
      (decided) => this.admit(request, decided),
      (error: unknown) => this.fail(request, error),
    );
  }

  /** The limiter's decision: its headers go on the answer, and a refusal is the policy's error (429). */
  admit(request: ChatRequest, decision: RateLimitDecision): void {
    const { state } = request;
    const admission = request.admission!;
    try {
      if (this.thresholds !== undefined) this.thresholds.observe(admission.owner, decision.windows, admission.sessionId, admission.account);
      // The client left while the limiter decided: nothing will release the slot later, and
      // nothing is read or forwarded for it.
      if (request.finished) {
        if (decision.slot !== undefined) decision.slot.release();
        return;
      }
      if (decision.slot !== undefined) request.slot = decision.slot;
      state.hasRateLimitHeaders = appendRateLimitHeaders(decision, state.responseHeaders);
      if (!decision.allowed) throw admission.refuse(decision, state);
      const body = request.body;
      if (body === undefined) this.body(request);
      else this.send(request, admission.admittedBody(decision, state, request.parsed, body, request.agent!.tools), request.parsed);
    } catch (error) {
      this.fail(request, error);
    }
  }

  /** Throws on a wrong media type; otherwise the body comes to request.bodyReceived. */
  body(request: ChatRequest): void {
    const { req, config } = request;
    if (!isJsonContentType(req.headers['content-type'])) throw new GatewayError('unsupported_media_type');
    refuseContentEncoding(req);
    readBody(req, config.limits.maxBodyBytes, request);
  }

  /** A valid chat request goes to the agent's runner (after the limit, on a plan limited after the body). */
  forward(request: ChatRequest, body: Buffer): void {
    // Reset before its body was handed over: no runner is called for a client that is gone.
    if (request.finished) return;
    try {
      const { state, config } = request;
      state.bytesIn = body.length;
      const parsed = parseJsonBody(body, config.limits);
      const summary = validateChatRequest(parsed, request.agent!, config.limits);
      // A credential that names its end user (a token's claim) wins over the body's, for policy and audit alike.
      state.userId = state.key!.endUser ?? summary.userId;
      state.sessionId = summary.sessionId;
      state.toolsGiven = summary.tools;
      if (state.trace !== undefined) state.trace.requested(parsed as Record<string, unknown>);
      // A key without a tool scope pays for this one check (tool-scope.ts). On a plan with tool
      // quotas a request naming no tools gets its list after the limit, less the spent tools.
      const scope = state.key!.tools;
      const admission = request.admission;
      const later = scope == null || (summary.tools === null && admission?.policy.hasToolQuotas === true);
      const sent = later ? body : applyToolScope(state, parsed as Record<string, unknown>, body, scope, request.agent!.tools, undefined).body;
      if (admission === undefined || !admission.afterBody) {
        this.send(request, sent, parsed);
        return;
      }
      admission.bodyRead(state);
      request.body = sent;
      request.parsed = parsed;
      this.decide(request, admission);
    } catch (error) {
      this.fail(request, error);
    }
  }

  /** Forwards a request that passed every stage. */
  private send(request: ChatRequest, body: Buffer, parsed: unknown): void {
    try {
      const { req, res, state, config, address, trace } = request;
      const agent = request.agent!;
      const key = state.key!;

      const upstreams = this.runtime.pools.upstreams(agent.id);
      if (!upstreams) throw new GatewayError('agent_unavailable', { retryAfterSeconds: 1 });
      const headers = upstreamRequestHeaders(req.headers, {
        requestId: state.requestId,
        agentId: agent.id,
        forwardedFor: address.forwardedFor,
        forwardedProto: config.listen.tls === undefined ? 'http' : 'https',
        forwardedHost: requestHost(req),
        keyId: key.keyId,
        accountId: key.account,
        traceparent: trace.traceparent,
      });
      const route = state.route!;
      if (agent.protocol === 'a2a') {
        this.forwardA2a(request, parsed as Record<string, unknown>, headers);
        return;
      }
      forwardToUpstream(
        { res, state, agent, upstreams, route, stream: config.stream, activeStreams: this.activeStreams, deadlines: this.deadlines, a2a: undefined },
        { body, headers },
        this.answerForwardFailure,
      );
    } catch (error) {
      this.fail(request, error);
    }
  }

  /** An A2A agent (docs/a2a.md): the same exchange, with a JSON-RPC call made from the request and the agent's card. */
  private forwardA2a(request: ChatRequest, parsed: Record<string, unknown>, headers: string[]): void {
    const { res, state, config } = request;
    const agent = request.agent!;
    const a2a = this.runtime.a2a;
    const card = a2a?.cards.get(agent.id);
    const upstreams = this.runtime.pools.upstreams(agent.id)!;
    // No card read (yet), or the adapter still loading after a reload: how to speak to the agent is unknown.
    if (a2a === undefined || card === undefined) throw new GatewayError('agent_unavailable', { retryAfterSeconds: 2, message: "The agent's A2A card could not be read; retry after a few seconds." });
    const call = a2a.call(parsed, card, state.route!, headers);
    if (state.trace !== undefined) state.trace.rpcMethod(a2a.sendMethod(card.version, call.exchange.streaming));
    forwardToUpstream(
      { res, state, agent, upstreams, route: state.route!, stream: config.stream, activeStreams: this.activeStreams, deadlines: this.deadlines, a2a: call.exchange },
      { body: call.body, headers: call.headers },
      this.answerForwardFailure,
    );
  }

  /** JournaledResponse's hook, bound once: the audit record as the response ends. */
  private readonly recordAtEnd = (context: unknown): AuditLog | undefined => {
    const request = context as ChatRequest;
    settleAnswerCost(request.state, request.agent?.model, request.config.pricing);
    return recordAtEnd(request.state, request.res, this.auditLog);
  };

  /** When the response closes, whatever happened: the audit record (unless made as it ended), metrics and the log line. */
  finish(request: ChatRequest): void {
    request.finished = true;
    // Whatever ended the stream (its end, the client, the runner, a deadline): the slot is free.
    if (request.slot !== undefined) request.slot.release();
    // The answer's model and cost (decision 0066), before anything charges, counts or records
    // them; settled already when the audit record was made as the response ended.
    if (!request.state.audited) settleAnswerCost(request.state, request.agent?.model, request.config.pricing);
    countAnswerFacts(request.state, request.agent);
    // The answer's tokens (or, without a valid count, what was relayed), cost and tool calls; batched by the limiter.
    if (request.admission !== undefined) request.admission.charge(this.rateLimiter, request.state, request.config.pricing);
    const { req, res, state } = request;
    // An HTTP/2 stream reset before anything was answered or forwarded (rapid reset, decision
    // 0045) costs a counter, not an audit record and a log line each.
    if (req.httpVersionMajor === 2 && !res.headersSent && state.upstreamStartMs < 0 && state.trace === undefined) {
      metrics.http2StreamsCancelled.inc();
      return;
    }
    finishRequest(state, res, this.auditLog, this.logRequest, this.tracing);
  }

  /** Any stage's error: answered, unless the client is gone. */
  fail(request: ChatRequest, error: unknown): void {
    answerError(error, request.req, request.res, request.state, this.logger);
  }

  // Out of undici's callback: the answer is written after undici has finished with the failed
  // request. One function for every request.
  private readonly answerForwardFailure: ForwardFailureHandler = (error, res, state) => {
    process.nextTick(answerError, error, res.req, res, state, this.logger);
  };
}
