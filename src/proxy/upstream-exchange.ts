// One request to an agent runner, as an undici dispatch handler: the runner's status,
// headers and body chunks are relayed to the client from undici's callbacks directly —
// no AbortController, no promise or async iterator per chunk (see docs/performance.md).
// `/chat` relays the answer as it comes; `/chat/stream` relays Server-Sent Events chunk by
// chunk (DESIGN.md 2 "Streaming") with heartbeats, idle/max-duration timers and a final
// `event: error` on abnormal ends, while a side-parser reads `done.tokens_used`.
import type { ServerResponse } from 'node:http';
import type { Dispatcher } from 'undici';
import type { AgentConfig } from '../config/schema.js';
import { GatewayError, streamErrorEvent, type StreamErrorType } from '../errors.js';
import type { RequestState } from '../request/request-state.js';
import type { ChatRoute } from '../request/chat-route.js';
import { metrics } from '../metrics/metrics.js';
import type { ActiveStreams, EndableStream } from './active-streams.js';
import type { DeadlineEntry, DeadlineSweeper } from './deadline-sweeper.js';
import { tokensFromChatResponse } from './chat-tokens.js';
import { RATE_LIMIT_HEADER_NAMES } from '../ratelimit/rate-limit-headers.js';
import { appendRelayedHeaders } from './header-hygiene.js';
import { SseSideParser, tokensFromDoneData, type SseEventSink } from './sse-parser.js';
import { AGENT_RETRY_AFTER_SECONDS, classifyUpstreamError, outcomeForFailure } from './upstream-errors.js';
import { type UpstreamFailureKind } from '../request/upstream-failure-kind.js';
import type { UpstreamTarget } from './upstream-pools.js';

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
  target: UpstreamTarget;
  route: ChatRoute;
  stream: StreamTimings;
  activeStreams: ActiveStreams;
  /** Checks the runner's headers deadline and a `/chat` body's idle deadline. */
  deadlines: DeadlineSweeper;
}

/** What is sent once and then not kept: undici has its own copy of the headers as text. */
export interface UpstreamCall {
  /** Flat name/value pairs (upstreamRequestHeaders). */
  headers: string[];
  body: Buffer;
}

/** JSON bodies up to this size are kept (by reference) to read `metadata.tokens_used` afterwards. */
const MAX_TOKEN_SCAN_BYTES = 1024 * 1024;
/**
 * Upstream headers a stream does not relay: the gateway re-frames the body (chunked,
 * never compressed by us) and sets its own caching headers for an event stream.
 */
const NOT_RELAYED_ON_STREAMS: ReadonlySet<string> = new Set(['content-length', 'content-encoding', 'cache-control', 'x-accel-buffering']);
const NOT_RELAYED_ON_LIMITED_STREAMS: ReadonlySet<string> = new Set([...NOT_RELAYED_ON_STREAMS, ...RATE_LIMIT_HEADER_NAMES]);
const PING_EVENT = Buffer.from(': ping\n\n');
const PING_LINE = Buffer.from(': ping\n');

class ClientClosedError extends Error {
  constructor() {
    super('the client closed the connection');
    this.name = 'ClientClosedError';
  }
}

/**
 * One shared abort reason: clients leaving is routine (thousands at once when a fleet
 * reconnects), and its stack would say nothing, so no Error and stack trace per abort.
 */
const CLIENT_CLOSED = new ClientClosedError();
/** Abort reason when the exchange's own deadline passed (the answer was already decided). */
const UPSTREAM_TIMED_OUT = new Error('the runner did not answer in time');

function isEventStream(contentType: string | string[] | undefined): boolean {
  return typeof contentType === 'string' && contentType.toLowerCase().startsWith('text/event-stream');
}

/**
 * Sends the request upstream and relays the answer. `onFailure` is called (with
 * `agent_unavailable`) only while nothing has been sent to the client yet; everything else
 * the exchange answers itself. Nothing is returned to wait on: the caller's frame (and all
 * it holds) is released while a stream runs, instead of living as long as the stream.
 */
export function forwardToUpstream(request: ForwardRequest, call: UpstreamCall, onFailure: ForwardFailureHandler): void {
  new UpstreamExchange(request, onFailure).start(call);
}

/** One function per server, not a closure per request: the exchange hands it what it needs. */
export type ForwardFailureHandler = (error: GatewayError, res: ServerResponse, state: RequestState) => void;

class UpstreamExchange implements Dispatcher.DispatchHandler, EndableStream, SseEventSink, DeadlineEntry {
  private controller: Dispatcher.DispatchController | null = null;
  private settled = false;
  private headersRelayed = false;
  private streaming = false;
  private kept: Buffer[] | null = null;
  private keptBytes = 0;
  private parser: SseSideParser | null = null;
  // Until a stream starts, the deadlines (the runner's response headers within
  // agents.<id>.timeout, then a `/chat` body's idle timeout) are checked by the server's
  // DeadlineSweeper, not by a timer per request; undici's own headers and body timers are
  // switched off for the same reason (deadline-sweeper.ts).
  sweepPrev: DeadlineEntry | null = null;
  sweepNext: DeadlineEntry | null = null;
  sweeping = false;
  private headersDeadlineMs = 0;
  // A stream has three deadlines (heartbeat, idle, max duration) and one timer, armed for
  // the earliest: per event only two timestamps move, instead of two timers being
  // re-inserted, and an idle stream holds one timer instead of three (docs/performance.md).
  private timer: NodeJS.Timeout | null = null;
  private timerDueMs = 0;
  /** Made on a stream's first timer (a `/chat` exchange never needs one). */
  private timerCallback: (() => void) | null = null;
  /** Last write to the client (event or ping): the heartbeat counts from here. */
  private lastClientWriteMs = 0;
  /** Last byte from the runner while we were reading: the idle timeout counts from here. */
  private lastUpstreamMs = 0;
  /** False while paused for a slow reader: the runner's silence is then ours, not its. */
  private watchingIdle = true;
  private waitingForDrain = false;
  private streamDeadlineMs = 0;
  private sawDone = false;
  private sawFirstByte = false;
  private eventsCounter: { inc(): void } | null = null;

  constructor(
    private readonly request: ForwardRequest,
    private readonly onFailure: ForwardFailureHandler,
  ) {}

  start(call: UpstreamCall): void {
    const { res, state, agent, target, route } = this.request;
    // 'close' comes once; `on` spares the wrapper `once` allocates per request.
    res.on('close', this.onClientClose);
    const now = performance.now();
    state.upstreamStartMs = now;
    // Counted from the hand-off to the pool: waiting for a pooled connection and connecting
    // are part of what the client waits for, and a request that timed out while queued is
    // never sent (onRequestStart aborts it).
    this.headersDeadlineMs = now + agent.headersTimeoutMs;
    this.request.deadlines.add(this);
    target.pool.dispatch(
      {
        method: 'POST',
        path: route === 'chat' ? target.chatPath : target.streamPath,
        headers: call.headers,
        body: call.body,
        // Enforced by the exchange (checkDeadlines) instead.
        headersTimeout: 0,
        bodyTimeout: 0,
      },
      this,
    );
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.settled) controller.abort(CLIENT_CLOSED);
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>): void {
    if (this.settled) return;
    this.controller = controller;
    const { res, route } = this.request;
    if (route === 'chat/stream' && statusCode < 300) {
      if (!isEventStream(headers['content-type'])) {
        this.failBeforeHeaders('bad_response', 'The agent answered the stream route without an event stream.');
        controller.abort(new Error('not an event stream'));
        return;
      }
      this.startStream(statusCode, headers);
      return;
    }
    // `/chat`, and any error status on the stream route: relayed unchanged.
    const { state } = this.request;
    if (statusCode >= 500) state.outcome = 'upstream_error';
    const out = state.responseHeaders;
    appendRelayedHeaders(headers, out, state.hasRateLimitHeaders ? RATE_LIMIT_HEADER_NAMES : undefined);
    res.writeHead(statusCode, out);
    const contentType = headers['content-type'];
    if (statusCode < 300 && typeof contentType === 'string' && contentType.includes('json')) this.kept = [];
    this.headersRelayed = true;
    this.lastUpstreamMs = performance.now();
  }

  private startStream(statusCode: number, headers: Record<string, string | string[] | undefined>): void {
    const { res, stream, state } = this.request;
    const out = state.responseHeaders;
    appendRelayedHeaders(headers, out, state.hasRateLimitHeaders ? NOT_RELAYED_ON_LIMITED_STREAMS : NOT_RELAYED_ON_STREAMS);
    out.push('Cache-Control', 'no-cache', 'X-Accel-Buffering', 'no');
    res.writeHead(statusCode, out);
    res.socket?.setNoDelay(true);
    res.flushHeaders();
    this.headersRelayed = true;
    this.streaming = true;
    // A stream's own timer takes over (heartbeats need it anyway).
    this.request.deadlines.remove(this);
    this.parser = new SseSideParser(this);
    this.eventsCounter = metrics.streamEvents.labels(this.request.agent.id);
    const now = performance.now();
    this.lastClientWriteMs = now;
    this.lastUpstreamMs = now;
    this.streamDeadlineMs = now + stream.maxDurationMs;
    this.armTimer(now);
    this.request.activeStreams.add(this);
    metrics.activeStreams.inc();
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.settled) return;
    const { res, state } = this.request;
    state.bytesOut += chunk.length;
    if (this.streaming) {
      if (!this.sawFirstByte) {
        this.sawFirstByte = true;
        metrics.streamFirstToken.observe({ agent: this.request.agent.id }, (performance.now() - state.startedMonoMs) / 1000);
      }
      const flushed = res.write(chunk);
      this.parser!.push(chunk);
      // Deadlines only move later here, so the armed timer stays valid (it re-checks).
      const now = performance.now();
      this.lastClientWriteMs = now;
      this.lastUpstreamMs = now;
      if (!flushed) {
        // The idle timeout measures the runner's silence, so it does not run while we are the
        // ones waiting.
        this.pauseUntilDrain(controller);
        this.watchingIdle = false;
      }
      return;
    }
    if (this.kept && this.keptBytes + chunk.length <= MAX_TOKEN_SCAN_BYTES) {
      this.kept.push(chunk);
      this.keptBytes += chunk.length;
    }
    this.lastUpstreamMs = performance.now();
    if (!res.write(chunk)) {
      this.pauseUntilDrain(controller);
      this.watchingIdle = false;
    }
  }

  /**
   * A slow reader: stop pulling from the runner until the client's socket drains. The
   * 'drain' listener is added only now, not for every request (an add and a remove per
   * request showed in the profile); a late call after the exchange settled is a no-op.
   */
  private pauseUntilDrain(controller: Dispatcher.DispatchController): void {
    controller.pause();
    if (this.waitingForDrain) return;
    this.waitingForDrain = true;
    // A closure only for the rare exchange that waits: not one per request.
    this.request.res.once('drain', () => this.onDrain());
  }

  private onDrain(): void {
    this.waitingForDrain = false;
    if (this.settled || !this.controller?.paused) return;
    const now = performance.now();
    this.lastUpstreamMs = now;
    this.watchingIdle = true;
    // A stream's idle deadline restarts now and may come before the one its timer is armed
    // for; a `/chat` body's is read by the next sweep.
    if (this.streaming && now + this.request.stream.idleTimeoutMs < this.timerDueMs) this.armTimer(now);
    this.controller.resume();
  }

  onResponseEnd(): void {
    if (this.settled) return;
    const { res, state } = this.request;
    state.upstreamEndMs = performance.now();
    if (this.streaming) {
      if (!this.sawDone) {
        this.failStream('reset', 'upstream_error', 'upstream_error');
        return;
      }
      state.outcome = 'ok';
      this.settle();
      res.end();
      return;
    }
    const kept = this.kept;
    if (kept && this.keptBytes === state.bytesOut) state.tokensUsed = tokensFromChatResponse(kept, this.keptBytes);
    this.settle();
    res.end();
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    if (this.settled) return;
    const { state } = this.request;
    state.upstreamEndMs = performance.now();
    const failure = classifyUpstreamError(error);
    if (!this.headersRelayed) {
      this.failBeforeHeaders(failure.kind);
      return;
    }
    if (this.streaming) {
      this.failStream(failure.kind, 'upstream_error', outcomeForFailure(failure.kind) === 'timeout' ? 'timeout' : 'upstream_error');
      return;
    }
    this.failAfterHeaders(failure.kind);
  }

  /** DeadlineEntry: called by the sweeper until the exchange settles or becomes a stream. */
  checkDeadlines(nowMs: number): void {
    if (this.settled || this.streaming) return;
    if (!this.headersRelayed) {
      if (nowMs < this.headersDeadlineMs) return;
      this.failBeforeHeaders('headers_timeout');
      this.controller?.abort(UPSTREAM_TIMED_OUT);
      return;
    }
    // While we wait for a slow client the silence is ours, not the runner's.
    if (this.watchingIdle && nowMs >= this.lastUpstreamMs + this.request.stream.idleTimeoutMs) {
      this.failAfterHeaders('idle_timeout');
      this.controller?.abort(UPSTREAM_TIMED_OUT);
    }
  }

  /** SseEventSink: every event the side-parser completes. */
  onEvent(doneData: string | null): void {
    this.eventsCounter!.inc();
    if (doneData !== null) {
      this.sawDone = true;
      this.request.state.tokensUsed = tokensFromDoneData(doneData);
    }
  }

  /** EndableStream: shutdown ends open streams with a final error event. */
  endWithError(type: StreamErrorType): void {
    if (this.settled) return;
    this.request.state.outcome = 'error';
    this.writeErrorAndEnd(type);
    this.controller?.abort(new Error(type));
  }

  private readonly onClientClose = (): void => {
    if (this.settled || this.request.res.writableFinished) return;
    const { state } = this.request;
    state.outcome = 'client_closed';
    if (state.upstreamEndMs < 0) state.upstreamEndMs = performance.now();
    this.settle();
    this.controller?.abort(CLIENT_CLOSED);
  };

  private nextDeadlineMs(): number {
    const { stream } = this.request;
    let due = Math.min(this.lastClientWriteMs + stream.heartbeatMs, this.streamDeadlineMs);
    if (this.watchingIdle) due = Math.min(due, this.lastUpstreamMs + stream.idleTimeoutMs);
    return due;
  }

  private armTimer(now: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.timerDueMs = this.nextDeadlineMs();
    // Rounded up: a timer that fires before its deadline only costs a re-arm, never a miss.
    this.timerCallback ??= () => this.onTimer();
    this.timer = setTimeout(this.timerCallback, Math.max(1, Math.ceil(this.timerDueMs - now)));
  }

  private onTimer(): void {
    this.timer = null;
    if (this.settled) return;
    const now = performance.now();
    const { stream, res } = this.request;
    if (now >= this.streamDeadlineMs) {
      this.failStream('max_duration', 'stream_timeout', 'timeout');
      return;
    }
    if (this.watchingIdle && now >= this.lastUpstreamMs + stream.idleTimeoutMs) {
      this.failStream('idle_timeout', 'upstream_timeout', 'timeout');
      return;
    }
    if (now >= this.lastClientWriteMs + stream.heartbeatMs) {
      const parser = this.parser!;
      // A ping must not split an event: a blank line would dispatch it early.
      if (parser.atEventBoundary) res.write(PING_EVENT);
      else if (parser.atLineBoundary) res.write(PING_LINE);
      this.lastClientWriteMs = now;
    }
    this.armTimer(now);
  }

  /** A relayed (non-stream) answer broke off: headers are out, so the only honest signal left is to cut the connection. */
  private failAfterHeaders(kind: UpstreamFailureKind): void {
    const { res, state, agent } = this.request;
    if (state.upstreamEndMs < 0) state.upstreamEndMs = performance.now();
    state.failureKind = kind;
    state.outcome = outcomeForFailure(kind);
    metrics.upstreamErrors.inc({ agent: agent.id, kind });
    this.settle();
    res.destroy();
  }

  private failBeforeHeaders(kind: UpstreamFailureKind, message?: string): void {
    const { state, agent } = this.request;
    state.failureKind = kind;
    state.outcome = outcomeForFailure(kind);
    if (state.upstreamEndMs < 0) state.upstreamEndMs = performance.now();
    metrics.upstreamErrors.inc({ agent: agent.id, kind });
    this.settle(new GatewayError('agent_unavailable', { message, retryAfterSeconds: AGENT_RETRY_AFTER_SECONDS }));
  }

  private failStream(kind: UpstreamFailureKind, type: StreamErrorType, outcome: 'timeout' | 'upstream_error'): void {
    if (this.settled) return;
    const { state, agent } = this.request;
    state.failureKind = kind;
    state.outcome = outcome;
    if (state.upstreamEndMs < 0) state.upstreamEndMs = performance.now();
    metrics.upstreamErrors.inc({ agent: agent.id, kind });
    // Settle first: undici reports the abort back through onResponseError synchronously.
    this.writeErrorAndEnd(type);
    this.controller?.abort(new Error(kind));
  }

  private writeErrorAndEnd(type: StreamErrorType): void {
    const { res, state } = this.request;
    const parser = this.parser;
    this.settle();
    if (res.destroyed) return;
    // Close any half-written line or event first, so the error event parses on its own.
    const prefix = !parser || parser.atEventBoundary ? '' : parser.atLineBoundary ? '\n' : '\n\n';
    const text = prefix + streamErrorEvent(type, state.requestId);
    state.bytesOut += Buffer.byteLength(text);
    res.end(text);
  }

  private settle(error?: GatewayError): void {
    if (this.settled) return;
    this.settled = true;
    this.request.deadlines.remove(this);
    if (this.streaming) {
      if (this.timer) clearTimeout(this.timer);
      this.timer = null;
      this.request.activeStreams.delete(this);
      metrics.activeStreams.dec();
    }
    if (error) this.onFailure(error, this.request.res, this.request.state);
  }
}
