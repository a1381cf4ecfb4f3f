// Relays a `/chat/stream` event stream chunk by chunk, never holding a byte back
// (docs/design.md, "Wire contract", "Streaming"; docs/streaming.md). A side-parser
// (sse-parser.ts) reads the same chunks to count events, to take `tokens_used` and the model
// from the `done` event and the tool names from `tool_call` events. Heartbeats keep a quiet
// stream open; the idle and max-duration deadlines, a runner failing mid-stream and shutdown
// end it with a final `event: error`, written so that it parses as an event of its own.
import type { Dispatcher } from 'undici';
import { streamErrorEvent, type StreamErrorType } from '../errors.js';
import { metrics } from '../metrics/metrics.js';
import { RATE_LIMIT_HEADER_NAMES } from '../ratelimit/rate-limit-headers.js';
import type { UpstreamFailureKind } from '../request/upstream-failure-kind.js';
import type { EndableStream } from './active-streams.js';
import type { RelayedExchange, ResponseRelay } from './forward-request.js';
import { appendRelayedHeaders } from './header-hygiene.js';
import { SseSideParser, type SseEventSink } from './sse-parser.js';
import { readToolCallData, tokensFromDoneData } from './tokens-used.js';
import { traceDoneEvent, traceToolCallEvent } from '../telemetry/answer-facts.js';

/**
 * Upstream headers a stream does not relay: the gateway re-frames the body (chunked,
 * never compressed by us) and sets its own caching headers for an event stream.
 */
const NOT_RELAYED_ON_STREAMS: ReadonlySet<string> = new Set(['content-length', 'content-encoding', 'cache-control', 'x-accel-buffering']);
const NOT_RELAYED_ON_LIMITED_STREAMS: ReadonlySet<string> = new Set([...NOT_RELAYED_ON_STREAMS, ...RATE_LIMIT_HEADER_NAMES]);
const PING_EVENT = Buffer.from(': ping\n\n');
const PING_LINE = Buffer.from(': ping\n');

export class SseRelay implements ResponseRelay, EndableStream, SseEventSink {
  private readonly parser: SseSideParser;
  private readonly eventsCounter: { inc(): void };
  // A stream has three deadlines (heartbeat, idle, max duration) and one timer, armed for
  // the earliest: per event only two timestamps move, instead of two timers being
  // re-inserted, and an idle stream holds one timer instead of three
  // (docs/decisions/0004-idle-stream-memory.md).
  private timer: NodeJS.Timeout | null = null;
  private timerDueMs = 0;
  private readonly onTimerDue = (): void => this.onTimer();
  /** Last write to the client (event or ping): the heartbeat counts from here. */
  private lastClientWriteMs = 0;
  private streamDeadlineMs = 0;
  private sawDone = false;
  private sawFirstByte = false;

  constructor(private readonly exchange: RelayedExchange) {
    // `tool_call` events are decoded for every stream: the tool-call metric (and a trace's
    // span events, the audit's tool_calls) need their names (decision 0066).
    this.parser = new SseSideParser(this, true);
    this.eventsCounter = metrics.streamEvents.labels(exchange.request.agent.id);
  }

  start(statusCode: number, headers: Record<string, string | string[] | undefined>): void {
    const { res, stream, state, activeStreams } = this.exchange.request;
    state.upstreamStatus = statusCode;
    const out = state.responseHeaders;
    appendRelayedHeaders(headers, out, state.hasRateLimitHeaders ? NOT_RELAYED_ON_LIMITED_STREAMS : NOT_RELAYED_ON_STREAMS);
    out.push('Cache-Control', 'no-cache', 'X-Accel-Buffering', 'no');
    res.writeHead(statusCode, out);
    res.socket?.setNoDelay(true);
    res.flushHeaders();
    const now = performance.now();
    this.lastClientWriteMs = now;
    this.exchange.lastUpstreamMs = now;
    this.streamDeadlineMs = now + stream.maxDurationMs;
    this.armTimer(now);
    activeStreams.add(this);
    metrics.activeStreams.inc();
  }

  data(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    const exchange = this.exchange;
    const { res, state, agent } = exchange.request;
    if (!this.sawFirstByte) {
      this.sawFirstByte = true;
      metrics.streamFirstToken.observe({ agent: agent.id }, (performance.now() - state.startedMonoMs) / 1000);
      if (state.trace !== undefined) state.trace.firstToken();
    }
    const flushed = res.write(chunk);
    this.parser.push(chunk);
    // Deadlines only move later here, so the armed timer stays valid (it re-checks).
    const now = performance.now();
    this.lastClientWriteMs = now;
    exchange.lastUpstreamMs = now;
    // The idle timeout measures the runner's silence, so it does not run while we are the
    // ones waiting.
    if (!flushed) exchange.pauseUntilDrain(controller);
  }

  /** SseEventSink: every event the side-parser completes. */
  onEvent(doneData: string | null): void {
    this.eventsCounter.inc();
    if (doneData === null) {
      this.exchange.request.state.eventsRelayed += 1;
    } else {
      this.sawDone = true;
      const state = this.exchange.request.state;
      state.answerRead = true;
      state.tokensUsed = tokensFromDoneData(doneData, state);
      if (state.trace !== undefined) traceDoneEvent(state.trace, doneData);
    }
  }

  /** SseEventSink: a `tool_call` event: its tool's name, for the audit, the metrics and a trace. */
  onToolCall(data: string): void {
    const state = this.exchange.request.state;
    readToolCallData(data, state);
    if (state.trace !== undefined) traceToolCallEvent(state.trace, data);
  }

  end(): void {
    if (!this.sawDone) {
      this.failStream('reset', 'upstream_error');
      return;
    }
    const { res, state } = this.exchange.request;
    state.streamDone = true;
    this.exchange.settle();
    res.end();
  }

  fail(kind: UpstreamFailureKind): void {
    this.failStream(kind, 'upstream_error');
  }

  /** The idle deadline restarts now and may come before the one the timer is armed for. */
  drained(nowMs: number): void {
    if (this.exchange.idleDeadlineMs() < this.timerDueMs) this.armTimer(nowMs);
  }

  /** EndableStream: shutdown ends open streams with a final error event. */
  endWithError(type: StreamErrorType): void {
    if (this.exchange.settled) return;
    this.exchange.request.state.endedInError = true;
    this.writeErrorAndEnd(type);
    this.exchange.abort(new Error(type));
  }

  release(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.exchange.request.activeStreams.delete(this);
    metrics.activeStreams.dec();
  }

  private armTimer(now: number): void {
    if (this.timer) clearTimeout(this.timer);
    const { heartbeatMs } = this.exchange.request.stream;
    this.timerDueMs = Math.min(this.lastClientWriteMs + heartbeatMs, this.streamDeadlineMs, this.exchange.idleDeadlineMs());
    // Rounded up: a timer that fires before its deadline only costs a re-arm, never a miss.
    this.timer = setTimeout(this.onTimerDue, Math.max(1, Math.ceil(this.timerDueMs - now)));
  }

  private onTimer(): void {
    this.timer = null;
    if (this.exchange.settled) return;
    const now = performance.now();
    if (now >= this.streamDeadlineMs) {
      this.failStream('max_duration', 'stream_timeout');
      return;
    }
    if (now >= this.exchange.idleDeadlineMs()) {
      this.failStream('idle_timeout', 'upstream_timeout');
      return;
    }
    if (now >= this.lastClientWriteMs + this.exchange.request.stream.heartbeatMs) {
      const parser = this.parser;
      const { res } = this.exchange.request;
      // A ping must not split an event: a blank line would dispatch it early.
      if (parser.atEventBoundary) res.write(PING_EVENT);
      else if (parser.atLineBoundary) res.write(PING_LINE);
      this.lastClientWriteMs = now;
    }
    this.armTimer(now);
  }

  private failStream(kind: UpstreamFailureKind, type: StreamErrorType): void {
    if (this.exchange.settled) return;
    this.exchange.recordFailure(kind);
    // Settle first: undici reports the abort back through onResponseError synchronously.
    this.writeErrorAndEnd(type);
    this.exchange.abort(new Error(kind));
  }

  private writeErrorAndEnd(type: StreamErrorType): void {
    const { res, state } = this.exchange.request;
    const parser = this.parser;
    this.exchange.settle();
    if (res.destroyed) return;
    // Close any half-written line or event first, so the error event parses on its own.
    const prefix = parser.atEventBoundary ? '' : parser.atLineBoundary ? '\n' : '\n\n';
    const text = prefix + streamErrorEvent(type, state.requestId);
    state.bytesOut += Buffer.byteLength(text);
    res.end(text);
  }
}
