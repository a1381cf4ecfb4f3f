// One request to an agent runner, as an undici dispatch handler. It sends the request, keeps
// the runner's headers deadline, and once the headers arrive hands the answer to a relay: an
// event stream on `/chat/stream` to the SSE relay (sse-relay.ts), anything else to the JSON
// relay (json-relay.ts). Everything comes from undici's callbacks directly: no
// AbortController, no promise or async iterator per chunk (docs/performance.md).
//
// A request that was never sent is tried again on another target of the agent (each target
// at most once, within the same headers deadline). "Never sent" is known from undici's
// callbacks: undici calls onRequestStart for a request on a connected socket just before
// it writes the request's first byte, so an error that arrives before onRequestStart
// (connect refused or timed out, a name that does not resolve, the connection lost before
// the request was handed to it) left the runner without a byte of it. An error after
// onRequestStart may have reached the runner, and a chat request costs tokens: it is
// answered, never repeated (docs/upstreams.md, "Retries"). A request refused by the guard
// against reconnects after an abort (no-reconnect-after-abort.ts) was never sent either: it
// goes again, without counting against the runner.
//
// Over 300 lines on purpose: undici calls one handler object, and its callbacks, the headers
// deadline, the retries and the slow-reader pause all read the same attempt state (target,
// sent, relay); the relays and the error classification already live apart.
import type { Dispatcher } from 'undici';
import { GatewayError } from '../errors.js';
import { metrics } from '../metrics/metrics.js';
import type { UpstreamTarget } from './upstream-target.js';
import type { UpstreamFailureKind } from '../request/upstream-failure-kind.js';
import type { DeadlineEntry } from './deadline-sweeper.js';
import {
  UPSTREAM_TIMED_OUT,
  type ForwardFailureHandler,
  type ForwardRequest,
  type RelayedExchange,
  type ResponseRelay,
  type UpstreamCall,
} from './forward-request.js';
import { JsonRelay } from './json-relay.js';
import { SseRelay } from './sse-relay.js';
import { AGENT_RETRY_AFTER_SECONDS, classifyUpstreamError } from './upstream-errors.js';
import { isAbortedReconnectSkipped } from './no-reconnect-after-abort.js';

class ClientClosedError extends Error {
  constructor() {
    super('the client closed the connection');
    this.name = 'ClientClosedError';
  }
}

/**
 * One shared abort reason: clients leaving is routine (thousands at once when a fleet
 * reconnects), and its stack would say nothing, so no Error and stack trace per abort
 * (docs/decisions/0004-idle-stream-memory.md).
 */
const CLIENT_CLOSED = new ClientClosedError();

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
  new UpstreamDispatch(request, onFailure).start(call);
}

class UpstreamDispatch implements Dispatcher.DispatchHandler, DeadlineEntry, RelayedExchange {
  settled = false;
  lastUpstreamMs = 0;
  private controller: Dispatcher.DispatchController | null = null;
  /** Null until the runner's headers are relayed. */
  private relay: ResponseRelay | null = null;
  /** False while paused for a slow reader: the runner's silence is then ours, not its. */
  private watchingIdle = true;
  private waitingForDrain = false;
  // Until the headers arrive, their deadline (agents.<id>.timeout) is checked by the server's
  // DeadlineSweeper, not by a timer per request; undici's own headers and body timers are
  // switched off for the same reason (docs/decisions/0007-upstream-deadlines-swept.md).
  sweepPrev: DeadlineEntry | null = null;
  sweepNext: DeadlineEntry | null = null;
  sweeping = false;
  private headersDeadlineMs = 0;
  /** The target of the current attempt, counted on it until the exchange settles. */
  private target: UpstreamTarget | null = null;
  /** Kept for another attempt until the runner answers; then released. */
  private call: UpstreamCall | null = null;
  /** undici started writing the current attempt (onRequestStart): it must not be repeated. */
  private sent = false;
  /** Targets already tried; null on the common path, where the first attempt goes through. */
  private tried: UpstreamTarget[] | null = null;

  constructor(
    readonly request: ForwardRequest,
    private readonly onFailure: ForwardFailureHandler,
  ) {}

  start(call: UpstreamCall): void {
    const { res, state, agent } = this.request;
    // 'close' comes once; `on` spares the wrapper `once` allocates per request.
    res.on('close', this.onClientClose);
    const now = performance.now();
    state.upstreamStartMs = now;
    // Counted from the hand-off to the pool: waiting for a pooled connection and connecting
    // are part of what the client waits for, and a request that timed out while queued is
    // never sent (onRequestStart aborts it). A retry runs within the same deadline.
    this.headersDeadlineMs = now + agent.headersTimeoutMs;
    this.request.deadlines.add(this);
    this.call = call;
    this.send();
  }

  /** One attempt: a target (none left: the request fails), its queue bound, the dispatch. */
  private send(): void {
    const upstreams = this.request.upstreams;
    const target = upstreams.pick(this.tried);
    if (target === undefined) {
      this.failBeforeHeaders('connect');
      return;
    }
    if (!upstreams.admit(target)) {
      this.settle(new GatewayError('agent_unavailable', { message: 'The agent has too many requests waiting; retry shortly.', retryAfterSeconds: AGENT_RETRY_AFTER_SECONDS }));
      return;
    }
    this.target = target;
    this.sent = false;
    const call = this.call!;
    const path = this.request.route === 'chat' ? target.chatPath : target.streamPath;
    // A traced request: each attempt is a client span, and the runner sees it as its parent.
    // traceparent is the last header (upstreamRequestHeaders); undici copies the headers as
    // it takes the request, so the next attempt may overwrite it.
    const trace = this.request.state.trace;
    if (trace !== undefined) call.headers[call.headers.length - 1] = trace.attemptStarted(target.origin, path);
    target.pool.dispatch(
      {
        method: 'POST',
        path,
        headers: call.headers,
        body: call.body,
        // Enforced by the exchange and its relay instead.
        headersTimeout: 0,
        bodyTimeout: 0,
      },
      this,
    );
  }

  /** The attempt failed before a byte of it was written: the next target gets it, out of undici's callback. */
  private retryElsewhere(target: UpstreamTarget, kind: UpstreamFailureKind): void {
    const upstreams = this.request.upstreams;
    upstreams.failed(target, kind);
    upstreams.release(target);
    this.target = null;
    this.request.state.trace?.attemptFailed(kind);
    (this.tried ??= []).push(target);
    metrics.upstreamRetries.inc({ agent: this.request.agent.id });
    process.nextTick(retryAttempt, this);
  }

  /**
   * The Client this attempt landed on refused its connect for another request's abort
   * (no-reconnect-after-abort.ts): nothing was sent and the runner did nothing wrong, so the
   * attempt goes again, on any target, without counting a failure or a retry against it. The
   * Pool has dropped that Client by the time the next tick runs. Each refusal needs another
   * client's abort in the same narrow window, and the headers deadline still bounds it.
   */
  private retryAfterAbortGuard(target: UpstreamTarget): void {
    this.request.upstreams.release(target);
    this.request.state.trace?.attemptFailed('reconnect_refused');
    this.target = null;
    process.nextTick(retryAttempt, this);
  }

  /** For retryAttempt: the client may have left or the deadline passed meanwhile. */
  resend(): void {
    if (!this.settled) this.send();
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    this.sent = true;
    if (this.settled) controller.abort(CLIENT_CLOSED);
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>): void {
    // An informational answer (103 Early Hints, 102): the runner's real answer follows; hints
    // are for a browser's page loads, not an API client, so they are not relayed. (An
    // unsolicited 100 is refused by undici itself as a bad response.)
    if (this.settled || statusCode < 200) return;
    this.controller = controller;
    this.call = null;
    this.request.upstreams.responded(this.target!, statusCode);
    const trace = this.request.state.trace;
    if (trace !== undefined) trace.attemptAnswered(statusCode);
    let relay: ResponseRelay;
    const a2a = this.request.a2a;
    if (a2a !== undefined) {
      // An A2A agent's JSON-RPC answer or event stream, on either route (a2a/a2a-relay.ts).
      relay = a2a.relay(this);
    } else if (this.request.route === 'chat/stream' && statusCode < 300) {
      if (!isEventStream(headers['content-type'])) {
        this.failBeforeHeaders('bad_response', 'The agent answered the stream route without an event stream.');
        controller.abort(new Error('not an event stream'));
        return;
      }
      relay = new SseRelay(this);
    } else {
      // `/chat`, and any error status on the stream route: relayed unchanged.
      relay = new JsonRelay(this);
    }
    const gatewayHeaders = this.request.state.responseHeaders.length;
    try {
      relay.start(statusCode, headers);
    } catch {
      this.request.state.responseHeaders.length = gatewayHeaders;
      // writeHead refused the runner's head (a header node:http2 will not send): nothing
      // reached the client, so it gets the gateway's own error, and the audit that status.
      this.headersRefused(controller);
      return;
    }
    this.relay = relay;
    // The relay watches its own deadlines from here.
    this.request.deadlines.remove(this);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.settled) return;
    this.request.state.bytesOut += chunk.length;
    this.relay!.data(controller, chunk);
  }

  onResponseEnd(): void {
    if (this.settled) return;
    this.request.state.upstreamEndMs = performance.now();
    this.relay!.end();
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    if (this.settled) return;
    if (!this.sent && isAbortedReconnectSkipped(error)) {
      this.retryAfterAbortGuard(this.target!);
      return;
    }
    const { kind } = classifyUpstreamError(error);
    if (!this.sent && (kind === 'connect' || kind === 'reset') && this.request.upstreams.targets.length > (this.tried?.length ?? 0) + 1) {
      this.retryElsewhere(this.target!, kind);
      return;
    }
    this.request.state.upstreamEndMs = performance.now();
    if (this.relay === null) this.failBeforeHeaders(kind);
    else this.relay.fail(kind);
  }

  /** DeadlineEntry: called by the sweeper until the exchange settles or a relay takes over. */
  checkDeadlines(nowMs: number): void {
    if (this.settled || this.relay !== null || nowMs < this.headersDeadlineMs) return;
    this.failBeforeHeaders('headers_timeout');
    this.controller?.abort(UPSTREAM_TIMED_OUT);
  }

  get attemptTarget(): UpstreamTarget | null {
    return this.target;
  }

  idleDeadlineMs(): number {
    return this.watchingIdle ? this.lastUpstreamMs + this.request.stream.idleTimeoutMs : Infinity;
  }

  /**
   * A slow reader: stop pulling from the runner until the client's socket drains. The
   * 'drain' listener is added only now, not for every request (an add and a remove per
   * request showed in the profile); a late call after the exchange settled is a no-op.
   */
  pauseUntilDrain(controller: Dispatcher.DispatchController): void {
    controller.pause();
    this.watchingIdle = false;
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
    this.relay!.drained(now);
    this.controller.resume();
  }

  recordFailure(kind: UpstreamFailureKind): void {
    const { state, agent } = this.request;
    if (this.target !== null) this.request.upstreams.failed(this.target, kind);
    state.failureKind = kind;
    if (state.upstreamEndMs < 0) state.upstreamEndMs = performance.now();
    metrics.upstreamErrors.inc({ agent: agent.id, kind });
    state.trace?.attemptFailed(kind);
  }

  abort(reason: Error): void {
    this.controller?.abort(reason);
  }

  /**
   * The client left before its answer was complete: stop the runner. Its request's audit
   * record is already written (the pipeline's 'close' listener was added first), so nothing
   * is recorded here.
   */
  private readonly onClientClose = (): void => {
    // writableEnded too: an HTTP/2 stream the client cancelled reports writableFinished.
    const res = this.request.res;
    if (this.settled || (res.writableFinished && res.writableEnded)) return;
    this.settle();
    this.controller?.abort(CLIENT_CLOSED);
  };

  private headersRefused(controller: Dispatcher.DispatchController): void {
    const { res, state } = this.request;
    state.upstreamStatus = 0;
    // The refused head stays on the response object and would fail the error answer too.
    for (const name of res.getHeaderNames()) res.removeHeader(name);
    this.failBeforeHeaders('bad_response', 'The agent answered with headers the gateway cannot relay.');
    controller.abort(new Error('unrelayable response headers'));
  }

  private failBeforeHeaders(kind: UpstreamFailureKind, message?: string): void {
    this.recordFailure(kind);
    this.settle(new GatewayError('agent_unavailable', { message, retryAfterSeconds: AGENT_RETRY_AFTER_SECONDS }));
  }

  settle(error?: GatewayError): void {
    if (this.settled) return;
    this.settled = true;
    this.call = null;
    if (this.target !== null) {
      this.request.upstreams.release(this.target);
      this.target = null;
    }
    this.request.deadlines.remove(this);
    this.relay?.release();
    if (error) this.onFailure(error, this.request.res, this.request.state);
  }
}

function retryAttempt(dispatch: UpstreamDispatch): void {
  dispatch.resend();
}
