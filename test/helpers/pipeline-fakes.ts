// In-memory stand-ins for what the chat pipeline touches, so each stage can be tested without
// a socket: a request and a response with node:http's surface as the pipeline uses it, an
// authenticator, an audit log, a log sink, and an undici pool whose dispatch hands the test
// the exchange's handler to drive. Real parts where they need no socket: the config parser,
// the memory rate limiter, the request log writer.
import { EventEmitter } from 'node:events';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import type { Dispatcher, Pool } from 'undici';
import type { AuditLog, AuditRecord } from '../../src/audit/audit-record.js';
import type { AuthenticateInput, Authenticator } from '../../src/auth/authenticator.js';
import { ManualClock } from '../../src/clock.js';
import { parseConfig } from '../../src/config/load-config.js';
import { GatewayError } from '../../src/errors.js';
import { ChatPipeline } from '../../src/http/chat-pipeline.js';
import { GatewayRuntime } from '../../src/http/gateway-runtime.js';
import type { AuthenticatedKey } from '../../src/keys/key-record.js';
import { MemoryRateLimiter } from '../../src/ratelimit/memory-rate-limiter.js';
import type { RateLimiter } from '../../src/ratelimit/rate-limiter.js';

export class FakeRequest extends EventEmitter {
  method = 'POST';
  complete = false;
  readonly socket = { remoteAddress: '::ffff:10.0.0.7' };
  paused = false;

  /** The headers as node:http lists them before folding repeats: name, value, name, value… */
  readonly rawHeaders: string[];

  constructor(
    public url: string,
    readonly headers: IncomingHttpHeaders,
  ) {
    super();
    this.rawHeaders = Object.entries(headers).flatMap(([name, value]) => (Array.isArray(value) ? value.flatMap((v) => [name, v]) : value === undefined ? [] : [name, value]));
  }

  pause(): this {
    this.paused = true;
    return this;
  }

  /** The body as node:http delivers it: its data, then its end. */
  sendBody(body: string | Buffer): void {
    this.emit('data', Buffer.from(body));
    this.complete = true;
    this.emit('end');
  }
}

export class FakeResponse extends EventEmitter {
  statusCode = 200;
  headersSent = false;
  writableFinished = false;
  writableEnded = false;
  destroyed = false;
  shouldKeepAlive = true;
  readonly socket = null;
  /** What setHeader set (names lower-cased), and the flat list writeHead was given. */
  readonly headers = new Map<string, unknown>();
  head: Array<string | string[]> | undefined;
  readonly written: Buffer[] = [];
  /** What write() answers: false is a full socket buffer. */
  flushes = true;
  private closing = false;

  constructor(readonly req: FakeRequest) {
    super();
  }

  setHeader(name: string, value: unknown): this {
    this.headers.set(name.toLowerCase(), value);
    return this;
  }

  getHeader(name: string): unknown {
    return this.headers.get(name.toLowerCase());
  }

  writeHead(statusCode: number, head: Array<string | string[]>): this {
    this.statusCode = statusCode;
    this.head = head;
    this.headersSent = true;
    return this;
  }

  flushHeaders(): void {}

  write(chunk: Buffer | string): boolean {
    this.headersSent = true;
    this.written.push(Buffer.from(chunk));
    return this.flushes;
  }

  end(chunk?: Buffer | string): this {
    if (chunk !== undefined) this.written.push(Buffer.from(chunk));
    this.headersSent = true;
    this.writableEnded = true;
    this.writableFinished = true;
    this.closeLater();
    return this;
  }

  destroy(): this {
    this.destroyed = true;
    this.closeLater();
    return this;
  }

  /** The client goes away before its answer is complete. */
  clientLeaves(): void {
    this.destroyed = true;
    this.req.emit('aborted');
    this.closeLater();
  }

  get body(): string {
    return Buffer.concat(this.written).toString('utf8');
  }

  /** A header of the answer, whether set with setHeader or written with writeHead. */
  header(name: string): unknown {
    const lower = name.toLowerCase();
    if (this.headers.has(lower)) return this.headers.get(lower);
    const head = this.head ?? [];
    for (let i = 0; i < head.length; i += 2) if ((head[i] as string).toLowerCase() === lower) return head[i + 1];
    return undefined;
  }

  /** node:http emits 'close' after the answer is out or the socket is gone, never inside end(). */
  private closeLater(): void {
    if (this.closing) return;
    this.closing = true;
    setImmediate(() => this.emit('close'));
  }
}

/** Keys by bearer token: `cached` ones are known at once, `stored` ones after a lookup. */
export class FakeAuthenticator implements Authenticator {
  readonly cached = new Map<string, AuthenticatedKey>();
  readonly stored = new Map<string, AuthenticatedKey>();
  lookups = 0;

  authenticateNow(input: AuthenticateInput): AuthenticatedKey | undefined {
    return this.cached.get(input.authorization ?? '');
  }

  async authenticate(input: AuthenticateInput): Promise<AuthenticatedKey> {
    this.lookups += 1;
    const key = this.cached.get(input.authorization ?? '') ?? this.stored.get(input.authorization ?? '');
    if (key === undefined) throw new GatewayError(input.authorization ? 'invalid_api_key' : 'missing_api_key');
    return key;
  }

  async close(): Promise<void> {}
}

export class MemoryAuditLog implements AuditLog {
  readonly records: AuditRecord[] = [];
  record(record: AuditRecord): void {
    this.records.push(record);
  }
  async close(): Promise<void> {}
}

/** A limiter that always has to be waited for (as the Redis one without a lease). */
export class WaitingRateLimiter implements RateLimiter {
  waits = 0;
  constructor(private readonly inner: RateLimiter) {}
  consume(subject: string, windows: Parameters<RateLimiter['consume']>[1]): ReturnType<RateLimiter['consume']> {
    this.waits += 1;
    return this.inner.consume(subject, windows);
  }
  consumeNow(): undefined {
    return undefined;
  }
  charge(subject: string, windows: Parameters<RateLimiter['charge']>[1], usage: Parameters<RateLimiter['charge']>[2]): void {
    this.inner.charge(subject, windows, usage);
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}

export class FakeController implements Dispatcher.DispatchController {
  aborted = false;
  paused = false;
  reason: Error | null = null;
  abort(reason: Error): void {
    this.aborted = true;
    this.reason = reason;
  }
  pause(): void {
    this.paused = true;
  }
  resume(): void {
    this.paused = false;
  }
}

/** Plays the agent's runner through the exchange's handler, as undici would call it. */
export class Runner {
  readonly controller = new FakeController();
  constructor(private readonly handler: Dispatcher.DispatchHandler) {
    handler.onRequestStart?.(this.controller, {});
  }
  answer(statusCode: number, headers: Record<string, string> = { 'content-type': 'application/json' }): this {
    this.handler.onResponseStart?.(this.controller, statusCode, headers, '');
    return this;
  }
  send(text: string | Buffer): this {
    this.handler.onResponseData?.(this.controller, Buffer.from(text));
    return this;
  }
  end(): void {
    this.handler.onResponseEnd?.(this.controller, {});
  }
  fail(message: string, code: string): void {
    this.handler.onResponseError?.(this.controller, Object.assign(new Error(message), { code }));
  }
}

export interface Dispatched {
  options: Dispatcher.DispatchOptions;
  handler: Dispatcher.DispatchHandler;
}

/** Records each dispatch; the test plays the runner through the handler. */
export class FakePool {
  readonly dispatched: Dispatched[] = [];
  dispatch(options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    this.dispatched.push({ options, handler });
    return true;
  }

  destroyed = false;
  async close(): Promise<void> {}
  async destroy(): Promise<void> {
    this.destroyed = true;
  }
}

export const CACHED_TOKEN = 'Bearer cached';
export const STORED_TOKEN = 'Bearer stored';
export const SCALE_KEY: AuthenticatedKey = { keyId: 'key_scale', account: 'acme', plan: 'scale' };
export const LIMITED_KEY: AuthenticatedKey = { keyId: 'key_limited', account: 'tiny', plan: 'two-a-minute' };
export const CHAT_BODY = JSON.stringify({ message: 'hello', context: { user_id: 'u1', session_id: 's1' } });

export interface PipelineSetup {
  pipeline: ChatPipeline;
  runtime: GatewayRuntime;
  authenticator: FakeAuthenticator;
  auditLog: MemoryAuditLog;
  pool: FakePool;
  /** The request log lines written so far, parsed. */
  logLines(): Record<string, unknown>[];
  close(): Promise<void>;
}

export function setUpPipeline(options: { rateLimiter?: (limiter: MemoryRateLimiter) => RateLimiter; config?: Record<string, unknown> } = {}): PipelineSetup {
  const config = parseConfig(
    {
      agents: { support: { upstream: 'http://127.0.0.1:1/api/v1', timeout: '5s' } },
      plans: { scale: { windows: [] }, 'two-a-minute': { windows: [{ requests: 2, per: '1m' }] } },
      ...options.config,
    },
    'test',
    {},
  );
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      lines.push(chunk.toString('utf8'));
      callback();
    },
  });
  const logger = pino({ level: 'info' }, sink);
  const clock = new ManualClock(Date.parse('2026-01-02T03:04:05.000Z'));
  const memoryLimiter = new MemoryRateLimiter({ clock });
  const pool = new FakePool();
  const runtime = new GatewayRuntime(config, { createPool: () => pool as unknown as Pool });
  const authenticator = new FakeAuthenticator();
  authenticator.cached.set(CACHED_TOKEN, SCALE_KEY);
  authenticator.stored.set(STORED_TOKEN, SCALE_KEY);
  authenticator.cached.set('Bearer limited', LIMITED_KEY);
  const auditLog = new MemoryAuditLog();
  const pipeline = new ChatPipeline({
    runtime,
    authenticator,
    rateLimiter: options.rateLimiter ? options.rateLimiter(memoryLimiter) : memoryLimiter,
    auditLog,
    logger,
    clock,
  });
  return {
    pipeline,
    runtime,
    authenticator,
    auditLog,
    pool,
    logLines: () => lines.flatMap((text) => text.split('\n').filter(Boolean)).map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line.request_id !== undefined && line.outcome !== undefined),
    close: () => runtime.close(),
  };
}

export interface Exchange {
  req: FakeRequest;
  res: FakeResponse;
  /** Resolves once the response has closed (and the pipeline has finished the request). */
  closed: Promise<void>;
}

/** Hands the pipeline one request, as node:http would. */
export function send(setup: PipelineSetup, init: { url?: string; method?: string; headers?: IncomingHttpHeaders } = {}): Exchange {
  const req = new FakeRequest(init.url ?? '/agents/support/api/v1/chat', {
    host: 'gateway.test',
    'content-type': 'application/json',
    authorization: CACHED_TOKEN,
    ...init.headers,
  });
  if (init.method) req.method = init.method;
  const res = new FakeResponse(req);
  setup.pipeline.handle(req as unknown as IncomingMessage, res as unknown as ServerResponse);
  const closed = new Promise<void>((resolve) => res.once('close', () => resolve()));
  return { req, res, closed };
}

/** Lets the promise continuations and next-tick callbacks of the stages run. */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
