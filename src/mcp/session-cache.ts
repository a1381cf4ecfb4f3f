// This instance's copies of per-server MCP session records (docs/mcp.md "Sessions across
// instances"; decision 0116). Without them every message of a session read its record from
// Redis (GETEX), one awaited round trip per `tools/call` before anything else could happen. A
// record read from Redis is kept here and served without a round trip for at most `recheckMs`
// (1 s, or a quarter of the idle expiry when that is shorter); the next use after that reads
// Redis again, which also pushes the session's idle expiry back. So a session in use is renewed
// in Redis at least once per `recheckMs`, and a copy is never served for a session whose Redis
// record has expired: the record was set to live `idleMs` from its last read, and a copy lives
// at most a quarter of that.
//
// A session ended on any instance (DELETE, its upstream gone, its stdio child ended) is deleted
// and its id published in one script (mcp-session-end.ts); every instance drops its copy when the
// message arrives. Copies are kept only while the subscription is in place: until it is, and
// from the moment its connection drops until it is back (messages may have been missed), every
// read goes to Redis as it did before and nothing is kept.
import { closeQuietly } from '../redis/close-quietly.js';
import type { RedisClient } from '../redis/redis-client.js';
import type { McpSessionRecord } from './mcp-session-record.js';

/** The longest a copy is served without reading Redis (also: how often a session in use renews its expiry there). */
export const MAX_RECHECK_MS = 1_000;
/** The copies one instance keeps; past it the least recently read goes (≈ 300 bytes each). */
export const MAX_CACHED_SESSIONS = 10_000;

interface CachedSession {
  readonly record: McpSessionRecord;
  /** When Redis last answered with this record (and so pushed its expiry back). */
  readonly readAt: number;
}

export class SessionCache {
  private readonly copies = new Map<string, CachedSession>();
  private live = false;
  /** Counts every invalidation: a read that began before one must not keep what it read. */
  private generation = 0;

  constructor(
    private readonly idleMs: () => number,
    private readonly now: () => number = Date.now,
    private readonly maxSessions = MAX_CACHED_SESSIONS,
  ) {}

  /** The copy, when one was read from Redis less than `recheckMs` ago; else undefined (read Redis). */
  fresh(id: string): McpSessionRecord | undefined {
    const copy = this.copies.get(id);
    if (copy === undefined) return undefined;
    if (this.now() - copy.readAt < Math.min(MAX_RECHECK_MS, this.idleMs() / 4)) return copy.record;
    return undefined;
  }

  /** Taken before a Redis read: `keep` stores its answer only if nothing was invalidated in between. */
  get mark(): number {
    return this.generation;
  }

  /** Keeps what Redis answered (a record, or that there is none) for a read started at `mark`. */
  keep(id: string, record: McpSessionRecord | undefined, mark: number): void {
    if (record === undefined) {
      this.copies.delete(id);
      return;
    }
    if (!this.live || mark !== this.generation) return;
    // Deleted first so the map's order stays the order of reads: the oldest read goes first.
    this.copies.delete(id);
    if (this.copies.size >= this.maxSessions) {
      const oldest = this.copies.keys().next();
      if (oldest.done !== true) this.copies.delete(oldest.value);
    }
    this.copies.set(id, { record, readAt: this.now() });
  }

  /** The session ended (here, or a message from another instance). */
  forget(id: string): void {
    this.generation += 1;
    this.copies.delete(id);
  }

  /** Copies may be kept only while invalidations arrive; either change clears them all. */
  setLive(live: boolean): void {
    this.live = live;
    this.generation += 1;
    this.copies.clear();
  }

  get size(): number {
    return this.copies.size;
  }

  /** Whether copies are kept now (the subscription is in place). */
  get isLive(): boolean {
    return this.live;
  }
}

/**
 * Feeds `cache` from the invalidation channel on `subscriber` (a `subscriber` connection of the
 * Redis client factory): live once subscribed, cleared and not live whenever the connection is
 * not (every reconnect subscribes again). Returns the close function.
 */
export function listenForSessionEnds(cache: SessionCache, subscriber: RedisClient, channel: string, onError: (error: unknown) => void): () => Promise<void> {
  let closed = false;
  subscriber.on('message', (from: string, id: string) => {
    if (from === channel) cache.forget(id);
  });
  subscriber.on('ready', () => {
    subscriber.subscribe(channel).then(
      () => {
        if (!closed) cache.setLive(true);
      },
      (error: unknown) => {
        if (!closed) onError(error);
      },
    );
  });
  for (const event of ['close', 'reconnecting', 'end']) subscriber.on(event, () => cache.setLive(false));
  return async () => {
    closed = true;
    cache.setLive(false);
    await closeQuietly(subscriber);
  };
}
