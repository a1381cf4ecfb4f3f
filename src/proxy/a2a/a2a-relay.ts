// The relay of an A2A agent's answer (docs/a2a.md): another implementation of the contract
// between the exchange and its relays (forward-request.ts), not a second pipeline. It reads
// the agent's JSON-RPC answer or event stream and hands what the gateway answers to the
// relays Agent Chat runners use: the JSON relay writes a `/chat` body, the SSE relay a
// stream's `token` and `done` events with its heartbeats, deadlines, token count and final
// `event: error`. A stream's events are translated as they come; a JSON-RPC answer (`/chat`,
// or the stream route on an agent that does not stream) is read whole, bounded, then answered.
import type { Dispatcher } from 'undici';
import { GatewayError, type StreamErrorType } from '../../errors.js';
import type { UpstreamFailureKind } from '../../request/upstream-failure-kind.js';
import type { DeadlineEntry } from '../deadline-sweeper.js';
import { UPSTREAM_TIMED_OUT, type RelayedExchange, type ResponseRelay } from '../forward-request.js';
import { JsonRelay } from '../json-relay.js';
import { SseRelay } from '../sse-relay.js';
import { AGENT_RETRY_AFTER_SECONDS } from '../upstream-errors.js';
import type { UpstreamTarget } from '../upstream-target.js';
import { cancelA2aTask } from './a2a-cancel.js';
import type { A2aExchange } from './a2a-exchange.js';
import { A2aOutcome, tokenEvent } from './a2a-outcome.js';
import { decodeAnswer, type A2aAnswer } from './a2a-protocol.js';
import { A2aSseReader } from './a2a-sse-reader.js';

/** A JSON-RPC answer larger than this is refused (agent_bad_response) instead of held. */
export const MAX_A2A_ANSWER_BYTES = 4 * 1024 * 1024;

const STREAM_HEADERS = { 'content-type': 'text/event-stream' };

function isEventStream(contentType: string | string[] | undefined): boolean {
  return typeof contentType === 'string' && contentType.toLowerCase().startsWith('text/event-stream');
}

export class A2aRelay implements ResponseRelay, DeadlineEntry {
  private readonly outcome = new A2aOutcome();
  /** The relay that writes the gateway's answer, once there is one to write. */
  private inner: JsonRelay | SseRelay | null = null;
  /** A streamed answer's framing; null while a JSON-RPC answer is read whole. */
  private reader: A2aSseReader | null = null;
  private collected: Buffer[] = [];
  private collectedBytes = 0;
  private statusCode = 0;
  private target: UpstreamTarget | null = null;
  private controller: Dispatcher.DispatchController | null = null;
  /** A `token` event was written: a final Task's text would repeat it. */
  private wroteText = false;
  /** stream.max_duration from the answer's head: a JSON-RPC answer dripped a byte at a time is cut there, as a runner's is. */
  private endByMs = 0;
  sweepPrev: DeadlineEntry | null = null;
  sweepNext: DeadlineEntry | null = null;
  sweeping = false;

  constructor(
    private readonly exchange: RelayedExchange,
    private readonly a2a: A2aExchange,
  ) {}

  start(statusCode: number, headers: Record<string, string | string[] | undefined>): void {
    const { state, route, deadlines } = this.exchange.request;
    this.statusCode = statusCode;
    state.upstreamStatus = statusCode;
    this.target = this.exchange.attemptTarget;
    const now = performance.now();
    this.exchange.lastUpstreamMs = now;
    // An agent's event count says nothing of its size: without a count, a stream's usage is
    // estimated from the bytes of the events written for it, as a JSON answer's is (token-charge.ts).
    state.streamBytesCharged = 0;
    if (statusCode < 300 && route === 'chat/stream' && isEventStream(headers['content-type'])) {
      this.reader = new A2aSseReader();
      const inner = new SseRelay(this.exchange);
      this.inner = inner;
      inner.start(200, STREAM_HEADERS);
    } else {
      // The body's idle and overall deadlines, until it is whole.
      this.endByMs = now + this.exchange.request.stream.maxDurationMs;
      deadlines.add(this);
    }
  }

  data(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.controller = controller;
    // The exchange counted the agent's bytes; the client's are what the gateway writes.
    this.exchange.request.state.bytesOut -= chunk.length;
    if (this.reader !== null) {
      this.readEvents(controller, chunk, this.reader);
      return;
    }
    this.exchange.lastUpstreamMs = performance.now();
    this.collectedBytes += chunk.length;
    if (this.collectedBytes > MAX_A2A_ANSWER_BYTES) {
      this.refuse('bad_response', new GatewayError('agent_bad_response', { message: `The agent's answer is larger than ${MAX_A2A_ANSWER_BYTES} bytes.` }));
      this.exchange.abort(new Error('A2A answer too large'));
      return;
    }
    this.collected.push(chunk);
  }

  end(): void {
    if (this.reader !== null) {
      const last = this.reader.flush();
      if (last !== null) this.onEvent(this.controller!, decodeAnswer(this.a2a.version, last, this.a2a.rpcId));
      if (this.exchange.settled) return;
      if (this.outcome.answered) this.write(this.controller!, this.outcome.doneEvent(this.latencyMs()));
      // Without a whole answer the SSE relay ends the stream with `upstream_error`.
      this.inner!.end();
      return;
    }
    this.answerWhole(Buffer.concat(this.collected, this.collectedBytes));
  }

  fail(kind: UpstreamFailureKind): void {
    if (this.inner !== null) {
      this.inner.fail(kind);
      return;
    }
    this.refuse(kind, new GatewayError('agent_unavailable', { retryAfterSeconds: AGENT_RETRY_AFTER_SECONDS }));
  }

  drained(nowMs: number): void {
    this.inner?.drained(nowMs);
  }

  /** DeadlineEntry: while a JSON-RPC answer is collected, its idle deadline and its overall one (stream.max_duration). */
  checkDeadlines(nowMs: number): void {
    if (this.exchange.settled) return;
    const overall = nowMs >= this.endByMs;
    if (!overall && nowMs < this.exchange.idleDeadlineMs()) return;
    this.refuse(overall ? 'max_duration' : 'idle_timeout', new GatewayError('agent_unavailable', { retryAfterSeconds: AGENT_RETRY_AFTER_SECONDS }));
    this.exchange.abort(UPSTREAM_TIMED_OUT);
  }

  release(): void {
    this.exchange.request.deadlines.remove(this);
    this.inner?.release();
    this.collected = [];
    // The client left, a deadline passed or the gateway stops while the task runs: stop it.
    if (this.outcome.running && this.target !== null) {
      cancelA2aTask(this.target, this.a2a.version, this.outcome.taskId!, this.exchange.request.agent.id);
    }
  }

  private readEvents(controller: Dispatcher.DispatchController, chunk: Buffer, reader: A2aSseReader): void {
    const events = reader.push(chunk);
    if (events === null) {
      this.endStream('agent_bad_response', 'bad_response');
      return;
    }
    const before = this.exchange.request.state.bytesOut;
    for (const data of events) {
      this.onEvent(controller, decodeAnswer(this.a2a.version, data, this.a2a.rpcId));
      if (this.exchange.settled) return;
    }
    // Nothing to write (a status without text): the agent's silence still ended now.
    if (this.exchange.request.state.bytesOut === before) this.exchange.lastUpstreamMs = performance.now();
  }

  private onEvent(controller: Dispatcher.DispatchController, answer: A2aAnswer): void {
    if (!answer.ok) {
      if (answer.problem === 'rpc_error') this.endStream('agent_error');
      else this.endStream('agent_bad_response', 'bad_response');
      return;
    }
    const update = answer.update;
    this.outcome.apply(update);
    if (this.outcome.failed) {
      this.endStream('agent_task_failed');
      return;
    }
    // A Task carries the whole answer so far: only its first text is new.
    const text = update.kind === 'task' && this.wroteText ? '' : update.text;
    if (text !== '') {
      this.wroteText = true;
      this.write(controller, tokenEvent(text));
    }
  }

  private write(controller: Dispatcher.DispatchController, text: string): void {
    const bytes = Buffer.from(text);
    const state = this.exchange.request.state;
    state.bytesOut += bytes.length;
    state.streamBytesCharged += bytes.length;
    this.inner!.data(controller, bytes);
  }

  private endStream(type: StreamErrorType, failure?: UpstreamFailureKind): void {
    const state = this.exchange.request.state;
    state.errorType = type;
    if (failure !== undefined) this.exchange.recordFailure(failure);
    (this.inner as SseRelay).endWithError(type);
  }

  /** A JSON-RPC answer read whole: the gateway's answer, or its error, from it. */
  private answerWhole(body: Buffer): void {
    const { state, route } = this.exchange.request;
    if (this.statusCode >= 500) {
      this.refuse(undefined, new GatewayError('agent_unavailable', { retryAfterSeconds: AGENT_RETRY_AFTER_SECONDS }));
      return;
    }
    const answer = decodeAnswer(this.a2a.version, body.toString('utf8'), this.a2a.rpcId);
    if (!answer.ok && answer.problem === 'rpc_error') {
      const code = answer.code === null ? '' : ` (JSON-RPC code ${answer.code})`;
      this.refuse(undefined, new GatewayError('agent_error', { message: `The agent answered the request with an A2A error${code}.` }));
      return;
    }
    if (!answer.ok || this.statusCode >= 300 || (answer.update.kind !== 'task' && answer.update.kind !== 'message')) {
      this.refuse('bad_response', new GatewayError('agent_bad_response'));
      return;
    }
    this.outcome.apply(answer.update);
    if (this.outcome.failed) {
      this.refuse(undefined, new GatewayError('agent_task_failed'));
      return;
    }
    const controller = this.controller!;
    if (route === 'chat') {
      const out = Buffer.from(this.outcome.chatBody(answer.update.text, this.latencyMs()));
      state.bytesOut = out.length;
      const inner = new JsonRelay(this.exchange);
      this.inner = inner;
      inner.start(200, { 'content-type': 'application/json', 'content-length': String(out.length) });
      inner.data(controller, out);
      inner.end();
      return;
    }
    // The stream route on an agent that does not stream: one `token`, then `done`.
    state.bytesOut = 0;
    const inner = new SseRelay(this.exchange);
    this.inner = inner;
    inner.start(200, STREAM_HEADERS);
    if (answer.update.text !== '') this.write(controller, tokenEvent(answer.update.text));
    this.write(controller, this.outcome.doneEvent(this.latencyMs()));
    inner.end();
  }

  /** Nothing was written yet: the gateway answers the error itself. */
  private refuse(failure: UpstreamFailureKind | undefined, error: GatewayError): void {
    if (this.exchange.settled) return;
    if (failure !== undefined) this.exchange.recordFailure(failure);
    this.exchange.settle(error);
  }

  private latencyMs(): number {
    return Math.round(performance.now() - this.exchange.request.state.startedMonoMs);
  }
}
