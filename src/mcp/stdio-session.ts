// One gateway session on a stdio MCP server (docs/mcp.md "stdio servers"): its child process
// and the routing of messages between the child's one stdout and the client's many HTTP
// requests. A request waits for the child's response with its id (its answer starts, as JSON
// or as SSE by the client's Accept, when the first message for it arrives; `timeout` of
// silence is 504, or an error event once the stream started); progress notifications go to
// the request whose progressToken they carry; every other message of the child (sampling,
// elicitation, roots, logging, list changes) goes to the one request in flight when there is
// exactly one and it is answered as SSE (it is related, as far as stdio can tell), else to the
// GET stream when one is open, else to the latest request answered as SSE, else waits
// (bounded) for a GET stream. A child that
// ends, for whatever reason, answers every open request with an error and ends the session.
import type { ServerResponse } from 'node:http';
import type { McpServerConfig } from '../config/schema.js';
import type { Logger } from '../logger.js';
import { decodeMessage, encodeError, type JsonRpcId, type JsonRpcMessage } from './json-rpc.js';
import { jsonRpcRefusal, McpAnswer } from './mcp-answers.js';
import type { UpstreamAnswer } from './mcp-transport.js';
import { emptyAnswer, jsonAnswer, StdioAnswerStream } from './stdio-answer.js';
import { StdioChild, type ChildEnd } from './stdio-child.js';

/** What one answer stream may hold unread before the child's notifications to it are dropped. */
const MAX_BUFFERED_BYTES = 4 * 1024 * 1024;
/** What may wait for a GET stream (messages, and their bytes); the oldest go first. */
const MAX_QUEUED = 256;
const MAX_QUEUED_BYTES = 4 * 1024 * 1024;
const GARBAGE_LOG_EVERY_MS = 10_000;

interface PendingCall {
  id: JsonRpcId;
  progressToken: string | number | undefined;
  sse: boolean;
  stream: StdioAnswerStream | undefined;
  timeoutMs: number;
  timer: NodeJS.Timeout | undefined;
  resolve(answer: UpstreamAnswer): void;
  reject(answer: McpAnswer): void;
  res: ServerResponse;
  onClientClose: () => void;
}

const END_MESSAGES: Record<ChildEnd, string> = {
  exited: "The MCP server's process exited.",
  failed_to_start: "The MCP server's command could not be started.",
  line_too_long: 'The MCP server sent a message larger than the gateway accepts (mcp.max_response); its process was stopped.',
  input_not_read: "The MCP server stopped reading its input; its process was stopped.",
  killed: 'The MCP session ended.',
};

export interface StdioSessionOptions {
  maxLineBytes: number;
  logger: Logger;
  ended(session: StdioSession, reason: ChildEnd): void;
}

export class StdioSession {
  readonly child: StdioChild;
  lastUsedAt = Date.now();
  private readonly calls = new Map<JsonRpcId, PendingCall>();
  private getStream: StdioAnswerStream | undefined;
  private queued: string[] = [];
  private queuedBytes = 0;
  private garbage = 0;
  private garbageLoggedAt = 0;

  constructor(
    readonly id: string,
    readonly server: McpServerConfig,
    private readonly options: StdioSessionOptions,
  ) {
    this.child = new StdioChild(server, options.maxLineBytes, options.logger, { line: (text) => this.childLine(text), end: (reason) => this.childEnded(reason) });
  }

  get busy(): boolean {
    return this.calls.size > 0;
  }

  /** A client request: its answer once the child starts answering it (a refusal or the child's end rejects with an McpAnswer). */
  request(id: JsonRpcId, params: Record<string, unknown> | undefined, line: Buffer, sse: boolean, res: ServerResponse): Promise<UpstreamAnswer> {
    if (this.calls.has(id)) return Promise.reject(jsonRpcRefusal(400, id, 'invalid_request', 'A request with this id is already in flight on this session.'));
    const meta = params?._meta as { progressToken?: unknown } | undefined;
    const token = meta?.progressToken;
    return new Promise((resolve, reject) => {
      const call: PendingCall = {
        id,
        progressToken: typeof token === 'string' || typeof token === 'number' ? token : undefined,
        sse,
        stream: undefined,
        timeoutMs: this.server.timeoutMs,
        timer: undefined,
        resolve,
        reject,
        res,
        // A client gone before its answer started: the child is told to stop (notifications/cancelled).
        onClientClose: () => {
          if (this.calls.get(id) !== call || res.writableFinished) return;
          this.fail(call, 499, 'The client closed the request.', 'client_closed');
          this.sendCancelled(id, 'The client disconnected.');
        },
      };
      this.calls.set(id, call);
      res.once('close', call.onClientClose);
      this.arm(call);
      if (!this.child.write(line)) this.fail(call, 502, END_MESSAGES.exited, 'upstream_error');
    });
  }

  /** A client notification or response (to a sampling, elicitation or roots request): passed on, 202. */
  pass(message: JsonRpcMessage, line: Buffer): UpstreamAnswer {
    if (!this.child.write(line)) throw jsonRpcRefusal(502, null, 'internal_error', END_MESSAGES.exited, { outcome: 'upstream_error' });
    // The client gave up on a request: its answer ends here too (the child need not answer it).
    if (message.kind === 'notification' && message.method === 'notifications/cancelled') {
      const requestId = message.params?.requestId;
      const call = typeof requestId === 'string' || typeof requestId === 'number' ? this.calls.get(requestId) : undefined;
      if (call !== undefined) this.fail(call, 200, 'The request was cancelled by the client.', 'client_closed');
    }
    return emptyAnswer(202);
  }

  /** The GET stream: the child's messages that belong to no request; one at a time (409 for a second). */
  openStream(): UpstreamAnswer {
    if (this.getStream?.open === true) throw jsonRpcRefusal(409, null, 'invalid_request', 'This session already has a GET stream open.');
    const stream = new StdioAnswerStream(MAX_BUFFERED_BYTES);
    this.getStream = stream;
    stream.body.once('close', () => {
      if (this.getStream === stream) this.getStream = undefined;
    });
    for (const line of this.queued) stream.event(line, false);
    this.queued = [];
    this.queuedBytes = 0;
    return stream.sseAnswer();
  }

  /** A client that left an answer already streaming: the child is told to stop, once. */
  cancel(requestId: JsonRpcId): void {
    const call = this.calls.get(requestId);
    if (call === undefined) return;
    this.fail(call, 499, 'The client closed the request.', 'client_closed');
    this.sendCancelled(requestId, 'The client disconnected.');
  }

  /** Ends the session: the child is stopped (SIGTERM, SIGKILL after a grace); resolves once it exited. */
  end(): Promise<void> {
    return this.child.kill('killed');
  }

  private sendCancelled(requestId: JsonRpcId, reason: string): void {
    this.child.write(Buffer.from(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId, reason } })));
  }

  /** The silence deadline of a call, re-armed by each message for it. */
  private arm(call: PendingCall): void {
    if (call.timer !== undefined) {
      call.timer.refresh();
      return;
    }
    call.timer = setTimeout(() => {
      if (this.calls.get(call.id) !== call) return;
      this.fail(call, 504, 'The MCP server did not answer in time.', 'timeout');
      this.sendCancelled(call.id, 'The gateway stopped waiting (the server\'s timeout).');
    }, call.timeoutMs);
    call.timer.unref();
  }

  private done(call: PendingCall): void {
    this.calls.delete(call.id);
    if (call.timer !== undefined) clearTimeout(call.timer);
    call.res.off('close', call.onClientClose);
    this.lastUsedAt = Date.now();
  }

  /** A call ends without the child's response: an error answer, or an error event when its stream started. */
  private fail(call: PendingCall, status: number, message: string, outcome: string): void {
    this.done(call);
    if (call.stream === undefined) {
      call.reject(jsonRpcRefusal(status, call.id, 'internal_error', message, { outcome }));
      return;
    }
    call.stream.event(encodeError(call.id, 'internal_error', message), true);
    call.stream.end();
  }

  private childLine(raw: string): void {
    let message: JsonRpcMessage;
    let line = raw;
    try {
      const value: unknown = JSON.parse(raw);
      message = decodeMessage(value);
      // A raw CR inside the JSON would end an SSE line early: such a line is written anew.
      if (raw.includes('\r')) line = JSON.stringify(value);
    } catch {
      this.noteGarbage();
      return;
    }
    if (message.kind === 'response') {
      const call = message.id === null ? undefined : this.calls.get(message.id);
      if (call !== undefined) this.deliver(call, line, true);
      return;
    }
    if (message.kind === 'notification' && message.method === 'notifications/progress') {
      const token = message.params?.progressToken;
      for (const call of this.calls.values()) {
        if (call.progressToken !== undefined && call.progressToken === token) return this.deliver(call, line, false);
      }
    }
    this.unrelated(line);
  }

  private deliver(call: PendingCall, line: string, isResponse: boolean): void {
    this.lastUsedAt = Date.now();
    if (isResponse) this.done(call);
    else this.arm(call);
    if (!call.sse) {
      if (isResponse) call.resolve(jsonAnswer(line));
      else if (this.getStream?.open === true) this.getStream.event(line, false);
      return;
    }
    if (call.stream === undefined) {
      const stream = new StdioAnswerStream(MAX_BUFFERED_BYTES);
      call.stream = stream;
      // The relay destroys the body when the client leaves: the child is told to stop.
      stream.body.once('close', () => this.cancel(call.id));
      call.resolve(stream.sseAnswer());
    }
    call.stream.event(line, isResponse);
    if (isResponse) call.stream.end();
  }

  private unrelated(line: string): void {
    // One request in flight, answered as SSE: the child is working on it, so the message is taken as its (the stream a Streamable HTTP server would use).
    if (this.calls.size === 1) {
      const only = this.calls.values().next().value!;
      if (only.sse) return this.deliver(only, line, false);
    }
    if (this.getStream?.open === true) {
      this.getStream.event(line, false);
      return;
    }
    let latest: PendingCall | undefined;
    for (const call of this.calls.values()) if (call.sse) latest = call;
    if (latest !== undefined) return this.deliver(latest, line, false);
    if (line.length > MAX_QUEUED_BYTES) return;
    this.queued.push(line);
    this.queuedBytes += line.length;
    while (this.queued.length > MAX_QUEUED || this.queuedBytes > MAX_QUEUED_BYTES) this.queuedBytes -= this.queued.shift()!.length;
  }

  private noteGarbage(): void {
    this.garbage += 1;
    const now = Date.now();
    if (now - this.garbageLoggedAt < GARBAGE_LOG_EVERY_MS) return;
    this.garbageLoggedAt = now;
    this.options.logger.warn({ mcp_server: this.server.name, pid: this.child.pid, lines_dropped: this.garbage }, 'stdio MCP server printed lines that are not JSON-RPC messages; dropped');
  }

  private childEnded(reason: ChildEnd): void {
    for (const call of [...this.calls.values()]) this.fail(call, 502, END_MESSAGES[reason], 'upstream_error');
    this.getStream?.end();
    this.queued = [];
    this.queuedBytes = 0;
    this.options.ended(this, reason);
  }
}
