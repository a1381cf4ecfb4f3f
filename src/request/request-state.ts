// Everything one request accumulates for its audit record, log line and metrics. One
// object per request with a fixed shape, filled in by the pipeline stages as they run.
import type { ServerResponse } from 'node:http';
import type { AuthenticatedKey } from '../keys/key-record.js';
import type { UpstreamFailureKind } from './upstream-failure-kind.js';
import type { RateLimitRefusal } from './rate-limit-refusal.js';
import type { ChatRoute } from './chat-route.js';
import type { RequestTrace } from './request-trace.js';
import { newRequestId, saneClientRequestId } from './request-ids.js';

export class RequestState {
  /** The audit record's `id`: made by the gateway, unique (docs/audit.md). */
  readonly id: string;
  /** The exchange's X-Request-Id: the client's when it sent a sane one, else `id`. */
  readonly requestId: string;
  agentId: string | undefined = undefined;
  route: ChatRoute | undefined = undefined;
  key: AuthenticatedKey | undefined = undefined;
  /** The audit record was made as the response ended (JournaledResponse); finish() makes none then. */
  audited = false;
  tokensUsed: number | null = null;
  // What the answer names (docs/design.md, "Agent-aware policy"), read by the relays
  // (src/proxy/tokens-used.ts, sse-relay.ts) and settled when the answer ends (answer-cost.ts).
  /** `metadata.model` of the answer (a stream's `done` `model`), else the agent's configured `model`, else null. */
  model: string | null = null;
  /** Tool names the runner called, in order (at most MAX_TOOL_CALLS_RECORDED); null: none seen. */
  toolCalls: string[] | null = null;
  /** The relay read the answer to its end (a `/chat` body, a stream's `done`): its model is known (src/request/cost.ts). */
  answerRead = false;
  /** tokens_used / 1000 x the model's price (src/request/cost.ts); null: no count, or no price for the model. */
  costUsd: number | null = null;
  /** Tools left out of the forwarded list because their quota is spent (Tools-Withheld); null: none. */
  toolsWithheld: readonly string[] | null = null;
  /** Events of a stream relayed to the client, `done` excepted: what a stream without a count is charged (token-charge.ts). */
  eventsRelayed = 0;
  /**
   * Bytes of the answer's own events the client was sent, when a stream without a count is
   * estimated from its bytes, as a JSON answer is, instead of from its events: the A2A relay's
   * streams, whose events may each carry any amount of text. -1: estimated from its events.
   */
  streamBytesCharged = -1;
  /** performance.now() marks; -1 until the upstream is called. */
  upstreamStartMs = -1;
  upstreamEndMs = -1;
  bytesIn = 0;
  bytesOut = 0;
  userId: string | null = null;
  /**
   * The tools the runner was given: the request's own `tools`, or the list the gateway
   * forwarded in place of an absent one (a key's scope, src/policy/tool-scope.ts); null when
   * unknown (the request named none and none was forwarded: the agent's own default).
   */
  toolsGiven: readonly string[] | null = null;
  sessionId: string | null = null;
  traceId = '';
  /** Set only while tracing is on and this request's trace is sampled (docs/observability.md). */
  trace: RequestTrace | undefined = undefined;
  // What the stages saw, from which the audit outcome is decided once, when the response
  // closes (requestOutcome, src/http/request-outcome.ts). Stages record facts, not outcomes.
  /** Why the rate limiter refused the request (undefined: it did not). */
  refusal: RateLimitRefusal | undefined = undefined;
  /** The gateway ended the request in error itself: an unexpected exception, or shutdown ending its stream. */
  endedInError = false;
  /** The stream ended after its `done` event. */
  streamDone = false;
  /** How the runner failed, if it did. */
  failureKind: UpstreamFailureKind | undefined = undefined;
  /** The gateway's own error answer: its type, and its status (0 while there is none). */
  errorType: string | undefined = undefined;
  errorStatus = 0;
  /** The runner's status, once its answer is being relayed (0 until then). */
  upstreamStatus = 0;
  /**
   * Headers the gateway adds to the response (X-Request-Id, rate-limit headers), as flat
   * name/value pairs. They go out in one `res.writeHead` with the relayed ones, which
   * skips node:http's per-header map (docs/performance.md); an error answer applies them
   * with setHeader instead (applyGatewayHeaders).
   */
  readonly responseHeaders: Array<string | string[]>;
  /** Whether responseHeaders holds the rate-limit headers (then the upstream's copies are dropped). */
  hasRateLimitHeaders = false;

  constructor(
    clientRequestId: string | string[] | undefined,
    readonly clientIp: string,
    /** Wall-clock start (ms since epoch), from the injected clock. */
    readonly startedAtMs: number,
    /** Monotonic start, for durations. */
    readonly startedMonoMs: number,
  ) {
    this.id = newRequestId(startedAtMs);
    this.requestId = saneClientRequestId(clientRequestId) ?? this.id;
    this.responseHeaders = ['X-Request-Id', this.requestId];
  }

  /** For answers the gateway writes itself (errors), which build their headers with setHeader. */
  applyGatewayHeaders(res: ServerResponse): void {
    const headers = this.responseHeaders;
    for (let i = 0; i < headers.length; i += 2) res.setHeader(headers[i] as string, headers[i + 1]!);
  }

  upstreamLatencyMs(): number | null {
    if (this.upstreamStartMs < 0) return null;
    const end = this.upstreamEndMs < 0 ? performance.now() : this.upstreamEndMs;
    return end - this.upstreamStartMs;
  }
}
