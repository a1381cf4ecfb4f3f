// Relays a runner's answer as it comes: `/chat`, and any error status on the stream route. A
// JSON answer is kept by reference as it passes, to read its `metadata.tokens_used`, model and
// tool calls at the end (tokens-used.ts); one over 1 MiB is read by a bounded streaming scan
// instead, for its tool calls and model (answer-scans.ts). A body that stays silent for stream.idle_timeout is cut; the check is the
// server's DeadlineSweeper's, not a timer per request
// (docs/decisions/0007-upstream-deadlines-swept.md).
import type { Dispatcher } from 'undici';
import { RATE_LIMIT_HEADER_NAMES } from '../ratelimit/rate-limit-headers.js';
import type { UpstreamFailureKind } from '../request/upstream-failure-kind.js';
import type { DeadlineEntry } from './deadline-sweeper.js';
import { UPSTREAM_TIMED_OUT, type RelayedExchange, type ResponseRelay } from './forward-request.js';
import { appendRelayedHeaders } from './header-hygiene.js';
import { ChatAnswerScan } from './answer-scans.js';
import { tokensFromChatResponse } from './tokens-used.js';
import { traceJsonAnswer } from '../telemetry/answer-facts.js';

/** JSON bodies up to this size are kept (by reference) to read `metadata.tokens_used` afterwards. */
const MAX_TOKEN_SCAN_BYTES = 1024 * 1024;

export class JsonRelay implements ResponseRelay, DeadlineEntry {
  private kept: Buffer[] | null = null;
  private keptBytes = 0;
  /**
   * A JSON answer too large to keep: its tool calls and model are read by a bounded
   * streaming scan as it passes (issue 45, H3-03), so a quota counts them whatever the size.
   */
  private scan: ChatAnswerScan | null = null;
  /**
   * The chunk that completes a relayed Content-Length, held until the answer ends: the
   * client holds a whole answer the moment its last byte is out, so that byte must go with
   * res.end(), which waits for the audit record's journal write (JournaledResponse, decision
   * 0022). Every earlier chunk (and every chunk of a body without a length, which only
   * res.end()'s last chunk completes) is written as it comes, so a runner that stalls
   * mid-answer still has its head and first bytes relayed. Kept by reference, like `kept`.
   */
  private held: Buffer | undefined = undefined;
  /** Bytes of the relayed Content-Length still to come; -1 without one. */
  private lengthLeft = -1;
  /** stream.max_duration from the answer's head: a body dripped a byte at a time is cut there. */
  private endByMs = 0;
  sweepPrev: DeadlineEntry | null = null;
  sweepNext: DeadlineEntry | null = null;
  sweeping = false;

  constructor(private readonly exchange: RelayedExchange) {}

  start(statusCode: number, headers: Record<string, string | string[] | undefined>): void {
    const { res, state, deadlines } = this.exchange.request;
    state.upstreamStatus = statusCode;
    const out = state.responseHeaders;
    appendRelayedHeaders(headers, out, state.hasRateLimitHeaders ? RATE_LIMIT_HEADER_NAMES : undefined);
    res.writeHead(statusCode, out);
    const length = headers['content-length'];
    this.lengthLeft = typeof length === 'string' ? Number(length) : -1;
    const contentType = headers['content-type'];
    if (statusCode < 300 && typeof contentType === 'string' && contentType.includes('json')) this.kept = [];
    const now = performance.now();
    this.exchange.lastUpstreamMs = now;
    this.endByMs = now + this.exchange.request.stream.maxDurationMs;
    deadlines.add(this);
  }

  data(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    const kept = this.kept;
    if (kept !== null) {
      if (this.keptBytes + chunk.length <= MAX_TOKEN_SCAN_BYTES) {
        kept.push(chunk);
        this.keptBytes += chunk.length;
      } else {
        this.scanInstead(kept, chunk);
      }
    } else if (this.scan !== null) {
      this.scan.push(chunk);
    }
    const exchange = this.exchange;
    exchange.lastUpstreamMs = performance.now();
    if (this.lengthLeft >= 0) {
      this.lengthLeft -= chunk.length;
      if (this.lengthLeft <= 0) {
        this.held = chunk;
        return;
      }
    }
    if (!exchange.request.res.write(chunk)) exchange.pauseUntilDrain(controller);
  }

  end(): void {
    const { res, state } = this.exchange.request;
    state.answerRead = true;
    const kept = this.kept;
    // Only a body kept whole is read: a longer one's tokens stay unknown.
    if (kept !== null && this.keptBytes === state.bytesOut) {
      // With the model and tool calls it names, read in the same pass: the tool-call metric
      // needs the names of every answer, so they are always asked for (decision 0066).
      state.tokensUsed = tokensFromChatResponse(kept, this.keptBytes, state);
      // A traced request's span takes the model and tool calls the answer names.
      if (state.trace !== undefined) traceJsonAnswer(state.trace, kept, this.keptBytes);
    } else if (this.scan !== null) {
      // Too large to keep: its count stays unknown (charged by its bytes), its tool calls and model are read.
      this.scan.finishInto(state);
      this.scan = null;
    }
    this.exchange.settle();
    const held = this.held;
    this.held = undefined;
    // The answer's last bytes (and, for a one-chunk answer, its head too) go with the end.
    if (held === undefined) res.end();
    else res.end(held);
  }

  /** The answer outgrew what is kept: what was kept and the rest go through the streaming scan instead. */
  private scanInstead(kept: Buffer[], chunk: Buffer): void {
    const scan = new ChatAnswerScan();
    for (const part of kept) scan.push(part);
    scan.push(chunk);
    this.scan = scan;
    this.kept = null;
    this.keptBytes = 0;
  }

  /** The answer broke off: its headers are out, so the only honest signal left is to cut the connection. */
  fail(kind: UpstreamFailureKind): void {
    // Never sent: the client must not get what looks like a whole answer.
    this.held = undefined;
    this.exchange.recordFailure(kind);
    this.exchange.settle();
    this.exchange.request.res.destroy();
  }

  /** DeadlineEntry: the body's idle deadline and its overall one (stream.max_duration), until the exchange settles. */
  checkDeadlines(nowMs: number): void {
    if (this.exchange.settled) return;
    const overall = nowMs >= this.endByMs;
    if (!overall && nowMs < this.exchange.idleDeadlineMs()) return;
    this.fail(overall ? 'max_duration' : 'idle_timeout');
    this.exchange.abort(UPSTREAM_TIMED_OUT);
  }

  /** The idle deadline restarts with the exchange's; the next sweep reads it. */
  drained(): void {}

  release(): void {
    this.exchange.request.deadlines.remove(this);
  }
}
