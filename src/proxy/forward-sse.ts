// POST /chat/stream: relay the upstream's Server-Sent Events chunk by chunk (DESIGN.md 2
// "Streaming"). Headers go out the moment the upstream's arrive; each chunk is written as
// it arrives; the side-parser reads the same chunks to count events and find `done`.
import type { ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import { streamErrorEvent, GatewayError, type StreamErrorType } from '../http/errors.js';
import { metrics } from '../metrics/metrics.js';
import type { ActiveStreams, EndableStream } from './active-streams.js';
import { forEachRelayedHeader } from './header-hygiene.js';
import { requestUpstream, forwardJsonBody, type ForwardRequest } from './forward-json.js';
import { SseSideParser, tokensFromDoneData } from './sse-parser.js';
import { AGENT_RETRY_AFTER_SECONDS, type UpstreamFailureKind } from './upstream-errors.js';

export interface StreamTimings {
  heartbeatMs: number;
  idleTimeoutMs: number;
  maxDurationMs: number;
}

const PING_EVENT = Buffer.from(': ping\n\n');
const PING_LINE = Buffer.from(': ping\n');

function isEventStream(contentType: string | string[] | undefined): boolean {
  return typeof contentType === 'string' && contentType.toLowerCase().startsWith('text/event-stream');
}

export async function forwardSse(request: ForwardRequest, timings: StreamTimings, activeStreams: ActiveStreams): Promise<void> {
  const { res, state, agent } = request;
  const controller = new AbortController();
  const abortIfUnfinished = (): void => {
    if (!res.writableFinished) controller.abort();
  };
  res.once('close', abortIfUnfinished);

  // Our own idle timer replaces undici's bodyTimeout, so it can pause under back-pressure.
  const upstream = await requestUpstream(request, request.target.streamPath, controller.signal, 0);
  if (!upstream) return;

  if (upstream.statusCode >= 300) {
    // Upstream errors pass through unchanged, whatever their content type.
    await forwardJsonBody(request, upstream, controller);
    return;
  }
  if (!isEventStream(upstream.headers['content-type'])) {
    upstream.body.destroy();
    controller.abort();
    state.upstreamEndMs = performance.now();
    state.failureKind = 'bad_response';
    state.outcome = 'upstream_error';
    metrics.upstreamErrors.inc({ agent: agent.id, kind: 'bad_response' });
    throw new GatewayError('agent_unavailable', {
      message: 'The agent answered the stream route without an event stream.',
      retryAfterSeconds: AGENT_RETRY_AFTER_SECONDS,
    });
  }

  res.statusCode = upstream.statusCode;
  forEachRelayedHeader(upstream.headers, (name, value) => {
    if (name !== 'content-length' && name !== 'content-encoding') res.setHeader(name, value);
  });
  res.setHeader('Cache-Control', 'no-cache');
  res.setHeader('X-Accel-Buffering', 'no');
  res.socket?.setNoDelay(true);
  res.flushHeaders();

  await new Promise<void>((resolve) => {
    new SseRelay(request, upstream.body, controller, timings, activeStreams, resolve).start();
  });
}

/** One relayed stream: its timers, back-pressure and the way it ends. */
class SseRelay implements EndableStream {
  private readonly parser: SseSideParser;
  private readonly heartbeatTimer: NodeJS.Timeout;
  private readonly idleTimer: NodeJS.Timeout;
  private readonly maxDurationTimer: NodeJS.Timeout;
  private sawDone = false;
  private sawFirstByte = false;
  private ended = false;
  private readonly eventsCounter;

  constructor(
    private readonly request: ForwardRequest,
    private readonly body: Readable,
    private readonly controller: AbortController,
    private readonly timings: StreamTimings,
    private readonly activeStreams: ActiveStreams,
    private readonly onEnded: () => void,
  ) {
    this.eventsCounter = metrics.streamEvents.labels(request.agent.id);
    this.parser = new SseSideParser({
      onEvent: (name, data) => {
        this.eventsCounter.inc();
        if (name === 'done') {
          this.sawDone = true;
          const tokens = tokensFromDoneData(data);
          request.state.tokensUsed = tokens;
        }
      },
    });
    this.heartbeatTimer = setTimeout(() => this.heartbeat(), timings.heartbeatMs);
    this.idleTimer = setTimeout(() => this.fail('idle_timeout', 'upstream_timeout', 'timeout'), timings.idleTimeoutMs);
    this.maxDurationTimer = setTimeout(() => this.fail('max_duration', 'stream_timeout', 'timeout'), timings.maxDurationMs);
  }

  start(): void {
    const { res } = this.request;
    this.activeStreams.add(this);
    metrics.activeStreams.inc();
    this.body.on('data', (chunk: Buffer) => this.onChunk(chunk));
    this.body.on('end', () => this.onUpstreamEnd());
    this.body.on('error', () => {
      if (!this.controller.signal.aborted) this.fail('reset', 'upstream_error', 'upstream_error');
    });
    res.on('drain', () => {
      if (this.ended) return;
      this.idleTimer.refresh();
      this.body.resume();
    });
    res.once('close', () => {
      if (!this.ended) {
        this.request.state.outcome = 'client_closed';
        this.finish();
      }
    });
  }

  private onChunk(chunk: Buffer): void {
    if (this.ended) return;
    const { res, state } = this.request;
    if (!this.sawFirstByte) {
      this.sawFirstByte = true;
      metrics.streamFirstToken.observe({ agent: this.request.agent.id }, (performance.now() - state.startedMonoMs) / 1000);
    }
    state.bytesOut += chunk.length;
    const flushed = res.write(chunk);
    this.parser.push(chunk);
    this.heartbeatTimer.refresh();
    if (flushed) {
      this.idleTimer.refresh();
    } else {
      // Slow reader: stop pulling from the upstream until the client catches up. The idle
      // timer is the upstream's silence, so it does not run while we are the ones waiting.
      this.body.pause();
      clearTimeout(this.idleTimer);
    }
  }

  private heartbeat(): void {
    if (this.ended) return;
    const { res } = this.request;
    // A ping must not split an event: a blank line would dispatch it early.
    if (this.parser.atEventBoundary) res.write(PING_EVENT);
    else if (this.parser.atLineBoundary) res.write(PING_LINE);
    this.heartbeatTimer.refresh();
  }

  private onUpstreamEnd(): void {
    if (this.ended) return;
    this.request.state.upstreamEndMs = performance.now();
    if (this.sawDone) {
      this.request.state.outcome = 'ok';
      this.finish();
      this.request.res.end();
      return;
    }
    this.fail('reset', 'upstream_error', 'upstream_error');
  }

  /** Shutdown and other external ends. */
  endWithError(type: StreamErrorType): void {
    if (this.ended) return;
    this.request.state.outcome = 'error';
    this.controller.abort();
    this.writeErrorAndEnd(type);
  }

  private fail(kind: UpstreamFailureKind, type: StreamErrorType, outcome: 'timeout' | 'upstream_error'): void {
    if (this.ended) return;
    const { state, agent } = this.request;
    state.failureKind = kind;
    state.outcome = outcome;
    if (state.upstreamEndMs < 0) state.upstreamEndMs = performance.now();
    metrics.upstreamErrors.inc({ agent: agent.id, kind });
    this.controller.abort();
    this.writeErrorAndEnd(type);
  }

  private writeErrorAndEnd(type: StreamErrorType): void {
    const { res, state } = this.request;
    this.finish();
    if (res.destroyed) return;
    // Close any half-written line or event first, so the error event parses on its own.
    const prefix = this.parser.atEventBoundary ? '' : this.parser.atLineBoundary ? '\n' : '\n\n';
    const text = prefix + streamErrorEvent(type, state.requestId);
    state.bytesOut += Buffer.byteLength(text);
    res.end(text);
  }

  private finish(): void {
    if (this.ended) return;
    this.ended = true;
    clearTimeout(this.heartbeatTimer);
    clearTimeout(this.idleTimer);
    clearTimeout(this.maxDurationTimer);
    this.activeStreams.delete(this);
    metrics.activeStreams.dec();
    if (!this.body.destroyed) this.body.destroy();
    this.onEnded();
  }
}
