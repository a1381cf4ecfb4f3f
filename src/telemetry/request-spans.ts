// One sampled request's spans (docs/observability.md "Spans"): the server span
// `invoke_agent {agent}` for the whole request, and a client span for each attempt at the
// runner, its child, whose id the attempt's `traceparent` names. Events on the server span
// mark the stream's first byte and each tool call. The spans are held here and ended
// explicitly: no context manager, no AsyncLocalStorage, nothing patched.
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span, type Tracer } from '@opentelemetry/api';
import type { AttemptFailure, RequestTrace, TracedAgent } from '../request/request-trace.js';
import type { RequestState } from '../request/request-state.js';
import { ATTR, EVENT, PROVIDER_DEFAULT, SPAN_NAME } from './span-attributes.js';

export class RequestSpans implements RequestTrace {
  /** The server span as the attempts' parent. */
  private readonly parent: Context;
  private attempt: Span | undefined = undefined;
  private attempts = 0;
  private attemptFailedOrErred = false;
  /** An A2A agent's JSON-RPC method; undefined for an Agent Chat runner. */
  private method: string | undefined = undefined;
  private model: string | undefined = undefined;
  /** The routed agent's `provider` (gen_ai.provider.name, required by the conventions) and configured `model`. */
  private provider = PROVIDER_DEFAULT;
  private requestModel: string | undefined = undefined;
  private inputTokens: number | null = null;
  private outputTokens: number | null = null;

  constructor(
    private readonly tracer: Tracer,
    private readonly server: Span,
    private readonly state: RequestState,
    /** telemetry.include_user_id */
    private readonly includeUserId: boolean,
  ) {
    this.parent = trace.setSpan(ROOT_CONTEXT, server);
  }

  attemptStarted(origin: string, path: string): string {
    this.endAttempt();
    const url = new URL(origin);
    const attributes: Attributes = {
      [ATTR.httpMethod]: 'POST',
      [ATTR.serverAddress]: url.hostname,
      [ATTR.serverPort]: url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port),
      [ATTR.urlFull]: origin + path,
    };
    const agent = this.state.agentId;
    if (agent !== undefined) attributes[ATTR.agentName] = agent;
    if (this.method !== undefined) {
      attributes[ATTR.rpcSystemName] = 'jsonrpc';
      attributes[ATTR.rpcMethod] = this.method;
    }
    // Every attempt after the first is a resend (HTTP semantic conventions): retries are visible.
    if (this.attempts > 0) attributes[ATTR.resendCount] = this.attempts;
    this.attempts += 1;
    this.attemptFailedOrErred = false;
    const span = this.tracer.startSpan(`POST ${path}`, { kind: SpanKind.CLIENT, attributes }, this.parent);
    this.attempt = span;
    const context = span.spanContext();
    return `00-${context.traceId}-${context.spanId}-01`;
  }

  agentMatched(agent: TracedAgent): void {
    if (agent.provider !== undefined) this.provider = agent.provider;
    this.requestModel = agent.model;
  }

  rpcMethod(method: string): void {
    this.method = method;
  }

  attemptAnswered(status: number): void {
    const span = this.attempt;
    if (span === undefined) return;
    span.setAttribute(ATTR.httpStatus, status);
    if (status >= 500) this.markAttemptFailed(String(status));
  }

  attemptFailed(failure: AttemptFailure): void {
    this.markAttemptFailed(failure);
  }

  requested(body: Readonly<Record<string, unknown>>): void {
    const attributes: Attributes = {};
    // Validated by then: a number within bounds when present.
    if (typeof body.max_tokens === 'number') attributes[ATTR.requestMaxTokens] = body.max_tokens;
    if (typeof body.temperature === 'number') attributes[ATTR.requestTemperature] = body.temperature;
    this.server.setAttributes(attributes);
  }

  firstToken(): void {
    this.server.addEvent(EVENT.firstToken);
  }

  toolCall(name: string): void {
    this.server.addEvent(EVENT.toolCall, { [ATTR.toolName]: name });
  }

  responseModel(model: string): void {
    this.model = model;
  }

  usageSplit(inputTokens: number | null, outputTokens: number | null): void {
    this.inputTokens = inputTokens;
    this.outputTokens = outputTokens;
  }

  /** The response closed: the server span takes what the request's state says, and every span ends. */
  end(status: number, outcome: string): void {
    const state = this.state;
    // The last attempt's span ends with the runner's last byte, or now if it never came.
    this.endAttempt(state.upstreamEndMs < 0 ? undefined : state.upstreamEndMs);
    const server = this.server;
    const agent = state.agentId;
    if (agent !== undefined) server.updateName(`${SPAN_NAME} ${agent}`);
    const attributes: Attributes = {
      [ATTR.operationName]: SPAN_NAME,
      [ATTR.providerName]: this.provider,
      [ATTR.httpStatus]: status,
      [ATTR.outcome]: outcome,
      [ATTR.requestId]: state.requestId,
    };
    if (agent !== undefined) attributes[ATTR.agentName] = agent;
    if (state.route !== undefined) attributes[ATTR.route] = state.route;
    const key = state.key;
    if (key !== undefined) {
      attributes[ATTR.keyId] = key.keyId;
      attributes[ATTR.account] = key.account;
      attributes[ATTR.plan] = key.plan;
    }
    if (state.sessionId !== null) attributes[ATTR.conversationId] = state.sessionId;
    if (this.includeUserId && state.userId !== null) attributes[ATTR.userId] = state.userId;
    if (state.tokensUsed !== null) attributes[ATTR.tokensUsed] = state.tokensUsed;
    if (this.inputTokens !== null) attributes[ATTR.usageInputTokens] = this.inputTokens;
    if (this.outputTokens !== null) attributes[ATTR.usageOutputTokens] = this.outputTokens;
    if (this.requestModel !== undefined) attributes[ATTR.requestModel] = this.requestModel;
    if (this.model !== undefined) attributes[ATTR.responseModel] = this.model;
    const errorType = requestErrorType(state, status);
    if (errorType !== undefined) attributes[ATTR.errorType] = errorType;
    server.setAttributes(attributes);
    // Server spans: a 4xx is the client's doing and leaves the status unset (HTTP semantic
    // conventions); the gateway's or the runner's failure is an error.
    if (status >= 500 || state.failureKind !== undefined || state.endedInError) server.setStatus({ code: SpanStatusCode.ERROR, message: errorType });
    server.end();
  }

  private markAttemptFailed(errorType: string): void {
    const span = this.attempt;
    if (span === undefined || this.attemptFailedOrErred) return;
    this.attemptFailedOrErred = true;
    span.setAttribute(ATTR.errorType, errorType);
    span.setStatus({ code: SpanStatusCode.ERROR, message: errorType });
  }

  private endAttempt(endTimeMs?: number): void {
    const span = this.attempt;
    if (span === undefined) return;
    this.attempt = undefined;
    // A performance.now() mark: the SDK reads a number below the time origin as one.
    span.end(endTimeMs);
  }
}

/**
 * The span's `error.type`: the gateway's own error answer by its registry type (src/errors.ts),
 * else how the runner failed (the upstream failure kind), else the stream error shutdown
 * sent, else the runner's 5xx status.
 */
function requestErrorType(state: RequestState, status: number): string | undefined {
  if (state.errorType !== undefined) return state.errorType;
  if (state.failureKind !== undefined) return state.failureKind;
  // Ended in error without an error answer: a stream that shutdown closed with its final event.
  if (state.endedInError) return 'shutting_down';
  if (status >= 500) return String(status);
  return undefined;
}
