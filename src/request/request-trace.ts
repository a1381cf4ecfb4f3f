// What the request's stages tell its trace (docs/observability.md "Spans"), as an interface
// here, below proxy/ and http/, so the request state can hold one without importing the
// telemetry module that implements it (src/telemetry/request-spans.ts). A request has a
// RequestTrace only while tracing is on and its trace is sampled: every call site checks
// `state.trace !== undefined` and does nothing else when it is not.
import type { UpstreamFailureKind } from './upstream-failure-kind.js';

/** How one attempt at the runner ended without an answer: a failure kind, or a guard that made it go again. */
export type AttemptFailure = UpstreamFailureKind | 'reconnect_refused';

/** What a trace says of the agent a request was routed to: its config's `provider` and `model`. */
export interface TracedAgent {
  readonly provider?: string;
  readonly model?: string;
}

export interface RequestTrace {
  /** The request was routed to this agent: the server span names its provider and model. */
  agentMatched(agent: TracedAgent): void;
  /**
   * A new attempt at the runner (`origin`, `path`) starts: a client span, the previous
   * attempt's span ended first. Returns the `traceparent` the attempt carries, naming that
   * client span as the runner's parent.
   */
  attemptStarted(origin: string, path: string): string;
  /** The runner is called over JSON-RPC (an A2A agent) with this method: each attempt's client span names it. */
  rpcMethod(method: string): void;
  /** The runner answered the current attempt with this status. */
  attemptAnswered(status: number): void;
  /** The current attempt failed (before or after the runner's headers). */
  attemptFailed(failure: AttemptFailure): void;
  /** The validated request body: its generation parameters (max_tokens, temperature), never its message. */
  requested(body: Readonly<Record<string, unknown>>): void;
  /** The first byte of the runner's event stream. */
  firstToken(): void;
  /** A tool the runner called, by name only. */
  toolCall(name: string): void;
  /** The model the answer names (its `metadata.model`, or a `done` event's `model`). */
  responseModel(model: string): void;
  /** Token counts the answer splits out (input and output), beside the total in tokens_used. */
  usageSplit(inputTokens: number | null, outputTokens: number | null): void;
}
