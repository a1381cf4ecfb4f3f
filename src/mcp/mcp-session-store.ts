// Where gateway MCP sessions live (docs/mcp.md "Sessions across instances"): Redis when the
// gateway has one, so any instance serves any session, else this process's memory (embedded
// mode). Reading a session refreshes its idle expiry in the same round trip (GETEX); a
// per-server session read is kept by the instance for up to a second (session-cache.ts), and
// ending one tells every instance (mcp-session-end.ts). The aggregated endpoint's sessions
// (`/mcp`) share the key space under their own record layout and are always read from Redis.
import { randomBytes } from 'node:crypto';
import type { RedisClient } from '../redis/redis-client.js';
import { callOperation, defineOperation } from '../redis/redis-operation.js';
import { decodeAggregateRecord, encodeAggregateRecord, type AggregateSessionRecord } from './aggregate-session-record.js';
import { decodeSessionRecord, encodeSessionRecord, type McpSessionRecord } from './mcp-session-record.js';
import { sessionEnd } from './mcp-session-end.js';
import { sessionSwap, type SessionSwapReply } from './mcp-session-swap.js';
import { listenForSessionEnds, SessionCache } from './session-cache.js';

/** A compare-and-swap's outcome: stored, or the record found in its place (undefined: the session is gone). */
export type AggregateSwap = { swapped: true } | { swapped: false; current: AggregateSessionRecord | undefined };

export interface McpSessionStore {
  /** The session, its idle expiry pushed back; undefined when unknown or expired. */
  touch(id: string): Promise<McpSessionRecord | undefined>;
  put(id: string, record: McpSessionRecord): Promise<void>;
  delete(id: string): Promise<void>;
  /** An aggregated endpoint's session (`/mcp`), its idle expiry pushed back; undefined when unknown, expired or a per-server session. */
  touchAggregate(id: string): Promise<AggregateSessionRecord | undefined>;
  putAggregate(id: string, record: AggregateSessionRecord): Promise<void>;
  /**
   * Stores `next` only if the record is still `expected` (as read), renewing its idle expiry;
   * else the record now stored, for the caller to merge into and try again (mcp-session-swap.ts).
   */
  swapAggregate(id: string, expected: AggregateSessionRecord, next: AggregateSessionRecord): Promise<AggregateSwap>;
  /** Stops listening for other instances' session ends (the Redis store's subscriber). */
  close(): Promise<void>;
}

/** A swap's reply, its text read back as a record (text that is not an aggregated record reads as gone). */
function readSwap(reply: SessionSwapReply): AggregateSwap {
  return reply.swapped ? reply : { swapped: false, current: reply.current === undefined ? undefined : decodeAggregateRecord(reply.current) };
}

/** 192 random bits in base64url: visible ASCII, as the specification asks of a session id. */
export function newSessionId(): string {
  return randomBytes(24).toString('base64url');
}

/** A session id the gateway could have issued (anything else is answered 404 without a store call). */
export function isSessionId(value: string): boolean {
  return value.length === 32 && /^[A-Za-z0-9_-]+$/.test(value);
}

export class RedisSessionStore implements McpSessionStore {
  /** Copies of per-server records, kept only while `listen` has a subscription in place. */
  readonly cache: SessionCache;
  private readonly channel: string;
  private stopListening: (() => Promise<void>) | undefined;

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    private readonly idleMs: () => number,
    now: () => number = Date.now,
  ) {
    defineOperation(redis, sessionSwap);
    defineOperation(redis, sessionEnd);
    this.cache = new SessionCache(idleMs, now);
    this.channel = `${prefix}mcp:session-ends`;
  }

  /** Starts keeping copies: `subscriber` (a `subscriber` connection, closed by close()) hears every instance's session ends. */
  listen(subscriber: RedisClient, onError: (error: unknown) => void): void {
    this.stopListening ??= listenForSessionEnds(this.cache, subscriber, this.channel, onError);
  }

  async touch(id: string): Promise<McpSessionRecord | undefined> {
    const copy = this.cache.fresh(id);
    if (copy !== undefined) return copy;
    const mark = this.cache.mark;
    const text = await this.touchText(id);
    const record = text === null ? undefined : decodeSessionRecord(text);
    this.cache.keep(id, record, mark);
    return record;
  }

  /** A new session (its id fresh from newSessionId, so no instance holds a copy to invalidate). */
  async put(id: string, record: McpSessionRecord): Promise<void> {
    const mark = this.cache.mark;
    await this.putText(id, encodeSessionRecord(record));
    this.cache.keep(id, record, mark);
  }

  async touchAggregate(id: string): Promise<AggregateSessionRecord | undefined> {
    const text = await this.touchText(id);
    return text === null ? undefined : decodeAggregateRecord(text);
  }

  async putAggregate(id: string, record: AggregateSessionRecord): Promise<void> {
    await this.putText(id, encodeAggregateRecord(record));
  }

  async swapAggregate(id: string, expected: AggregateSessionRecord, next: AggregateSessionRecord): Promise<AggregateSwap> {
    // `expected` re-encoded, not the text as read: the one encoder writes every stored record,
    // so a record read and encoded again is the same text (the swap test holds it to that).
    return readSwap(await callOperation(this.redis, sessionSwap, { key: this.keyOf(id), expected: encodeAggregateRecord(expected), next: encodeAggregateRecord(next), idleMs: this.idleMs() }));
  }

  private touchText(id: string): Promise<string | null> {
    return this.redis.getex(this.keyOf(id), 'PX', this.idleMs());
  }

  private async putText(id: string, text: string): Promise<void> {
    await this.redis.set(this.keyOf(id), text, 'PX', this.idleMs());
  }

  async delete(id: string): Promise<void> {
    this.cache.forget(id);
    await callOperation(this.redis, sessionEnd, { key: this.keyOf(id), channel: this.channel, id });
  }

  async close(): Promise<void> {
    await this.stopListening?.();
  }

  private keyOf(id: string): string {
    return `${this.prefix}mcp:session:${id}`;
  }
}

/** Embedded mode: one process's sessions, bounded (the oldest go first past `maxSessions`). */
export class MemorySessionStore implements McpSessionStore {
  private readonly sessions = new Map<string, { text: string; expiresAt: number }>();

  constructor(
    private readonly idleMs: () => number,
    private readonly now: () => number = Date.now,
    private readonly maxSessions = 100_000,
  ) {}

  touch(id: string): Promise<McpSessionRecord | undefined> {
    const text = this.touchText(id);
    return Promise.resolve(text === undefined ? undefined : decodeSessionRecord(text));
  }

  put(id: string, record: McpSessionRecord): Promise<void> {
    this.putText(id, encodeSessionRecord(record));
    return Promise.resolve();
  }

  touchAggregate(id: string): Promise<AggregateSessionRecord | undefined> {
    const text = this.touchText(id);
    return Promise.resolve(text === undefined ? undefined : decodeAggregateRecord(text));
  }

  putAggregate(id: string, record: AggregateSessionRecord): Promise<void> {
    this.putText(id, encodeAggregateRecord(record));
    return Promise.resolve();
  }

  swapAggregate(id: string, expected: AggregateSessionRecord, next: AggregateSessionRecord): Promise<AggregateSwap> {
    const current = this.touchText(id);
    if (current !== encodeAggregateRecord(expected)) return Promise.resolve(readSwap({ swapped: false, current }));
    this.putText(id, encodeAggregateRecord(next));
    return Promise.resolve({ swapped: true });
  }

  private touchText(id: string): string | undefined {
    const entry = this.sessions.get(id);
    const now = this.now();
    if (entry === undefined) return undefined;
    if (entry.expiresAt <= now) {
      this.sessions.delete(id);
      return undefined;
    }
    entry.expiresAt = now + this.idleMs();
    return entry.text;
  }

  private putText(id: string, text: string): void {
    if (this.sessions.size >= this.maxSessions && !this.sessions.has(id)) this.evict();
    this.sessions.set(id, { text, expiresAt: this.now() + this.idleMs() });
  }

  delete(id: string): Promise<void> {
    this.sessions.delete(id);
    return Promise.resolve();
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  get size(): number {
    return this.sessions.size;
  }

  private evict(): void {
    const now = this.now();
    for (const [id, entry] of this.sessions) if (entry.expiresAt <= now) this.sessions.delete(id);
    if (this.sessions.size < this.maxSessions) return;
    const oldest = this.sessions.keys().next();
    if (oldest.done !== true) this.sessions.delete(oldest.value);
  }
}
