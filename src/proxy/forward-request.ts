// What a request forwarded to an agent runner is made of: what its exchange keeps, what it
// sends, and what the exchange (upstream-dispatch.ts) and the relay of the runner's answer
// (json-relay.ts, sse-relay.ts) ask of each other.
import type { ServerResponse } from 'node:http';
import type { Dispatcher } from 'undici';
import type { AgentConfig } from '../config/schema.js';
import type { GatewayError } from '../errors.js';
import type { ChatRoute } from '../request/chat-route.js';
import type { RequestState } from '../request/request-state.js';
import type { UpstreamFailureKind } from '../request/upstream-failure-kind.js';
import type { ActiveStreams } from './active-streams.js';
import type { DeadlineSweeper } from './deadline-sweeper.js';
import type { AgentUpstreams } from './agent-upstreams.js';
import type { A2aVersion } from './a2a/a2a-protocol.js';
import type { UpstreamTarget } from './upstream-target.js';

/**
 * What an A2A call keeps for its answer (a2a/a2a-exchange.ts makes it). It brings its own
 * relay, so this file and upstream-dispatch.ts load none of the A2A modules: a gateway whose
 * agents all speak the native protocol never loads them (docs/performance.md).
 */
export interface A2aExchange {
  version: A2aVersion;
  /** The call is a streaming send (the stream route on an agent whose card says it streams). */
  streaming: boolean;
  /** The JSON-RPC id the call was sent with: every answer and event must carry it back. */
  rpcId: string;
  /** The relay of the agent's JSON-RPC answer or event stream, on either route (a2a/a2a-relay.ts). */
  relay(exchange: RelayedExchange): ResponseRelay;
}

export interface StreamTimings {
  heartbeatMs: number;
  idleTimeoutMs: number;
  maxDurationMs: number;
}

/** What the exchange keeps for its whole life (a stream's: minutes). */
export interface ForwardRequest {
  res: ServerResponse;
  state: RequestState;
  agent: AgentConfig;
  /** The agent's targets: the exchange picks one per attempt. */
  upstreams: AgentUpstreams;
  route: ChatRoute;
  stream: StreamTimings;
  activeStreams: ActiveStreams;
  /** Checks the runner's headers deadline and a `/chat` body's idle deadline. */
  deadlines: DeadlineSweeper;
  /** Set when the agent speaks A2A: its answer goes to the A2A relays (a2a/a2a-relays.ts). */
  a2a: A2aExchange | undefined;
}

/** What is sent once and then not kept: undici has its own copy of the headers as text. */
export interface UpstreamCall {
  /** Flat name/value pairs (upstreamRequestHeaders). */
  headers: string[];
  body: Buffer;
}

/** One function per server, not a closure per request: the exchange hands it what it needs. */
export type ForwardFailureHandler = (error: GatewayError, res: ServerResponse, state: RequestState) => void;

/** Abort reason when a deadline of the exchange passed (the answer was already decided). */
export const UPSTREAM_TIMED_OUT = new Error('the runner did not answer in time');

/** The runner's answer from its headers on, as relayed to the client. */
export interface ResponseRelay {
  /** Writes the status and headers; the relay then watches its own deadlines. */
  start(statusCode: number, headers: Record<string, string | string[] | undefined>): void;
  /** A chunk of the body (already counted in the request's bytesOut). */
  data(controller: Dispatcher.DispatchController, chunk: Buffer): void;
  /** The runner's body ended. */
  end(): void;
  /** The runner's body broke off. */
  fail(kind: UpstreamFailureKind): void;
  /** The client's socket drained and the runner is read again. */
  drained(nowMs: number): void;
  /** The exchange settled: stop watching deadlines. */
  release(): void;
}

/** What a relay asks of the exchange that hands it the answer. */
export interface RelayedExchange {
  readonly request: ForwardRequest;
  /** Once true, nothing more is written to the client or recorded. */
  readonly settled: boolean;
  /** Last byte from the runner while we were reading: the idle timeout counts from here. */
  lastUpstreamMs: number;
  /** When the runner's silence passes stream.idle_timeout; never while we wait for a slow client. */
  idleDeadlineMs(): number;
  /** Stops reading the runner until the client's socket drains. */
  pauseUntilDrain(controller: Dispatcher.DispatchController): void;
  /** Records how the runner failed: the request's failure kind, its end, the metric. */
  recordFailure(kind: UpstreamFailureKind): void;
  /** Ends the exchange; with an error, answered by the gateway (only while nothing was written). */
  settle(error?: GatewayError): void;
  /** The target of the current attempt (null once settled): where an A2A task lives. */
  readonly attemptTarget: UpstreamTarget | null;
  /** Aborts the request to the runner, if undici has started it. */
  abort(reason: Error): void;
}
