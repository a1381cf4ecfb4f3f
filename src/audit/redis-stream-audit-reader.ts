// Reads the audit Redis stream for `audit tail`: XREVRANGE pages backwards for the last N
// matching entries, then XREAD BLOCK from the newest entry on for --follow.
import type { RedisClient, RedisClientFactory } from '../redis/redis-client.js';
import { AUDIT_STREAM_FIELD } from './redis-stream-audit-sink.js';
import type { LineFilter } from './file-audit-reader.js';

const MAX_PAGE = 1000;

export interface TailRedisStreamOptions {
  /** Opens the reader's connection (closed here when the tail ends). */
  redis: RedisClientFactory;
  streamKey: string;
  limit: number;
  accept: LineFilter;
  write: (line: string) => void | Promise<void>;
  follow: boolean;
  signal: AbortSignal;
  /** How long one XREAD blocks before it is reissued. */
  blockMs?: number;
  /** How long to wait for the connection before failing (default 5 s). */
  connectTimeoutMs?: number;
}

type StreamEntry = [id: string, fields: string[]];

export async function tailRedisStream(options: TailRedisStreamOptions): Promise<void> {
  // A one-shot tail fails fast; a follower keeps reconnecting while Redis restarts.
  const redis = options.redis.connect(options.follow ? 'cli-follow' : 'cli-read', 'agentgw-audit-tail');
  const onAbort = (): void => redis.disconnect();
  options.signal.addEventListener('abort', onAbort, { once: true });
  try {
    await options.redis.whenReady(redis, options.connectTimeoutMs ?? 5_000);
    const newestId = await printLast(redis, options);
    if (options.follow) await follow(redis, newestId ?? '0-0', options);
  } catch (error) {
    if (!options.signal.aborted) throw error;
  } finally {
    options.signal.removeEventListener('abort', onAbort);
    if (redis.status === 'ready') await redis.quit().catch(() => redis.disconnect());
    else redis.disconnect();
  }
}

/** Prints the last `limit` matching entries oldest first; returns the newest entry id of the stream. */
async function printLast(redis: RedisClient, options: TailRedisStreamOptions): Promise<string | undefined> {
  const page = Math.min(Math.max(options.limit, 100), MAX_PAGE);
  const reversed: string[] = [];
  let newestId: string | undefined;
  let end = '+';
  for (;;) {
    const entries = (await redis.xrevrange(options.streamKey, end, '-', 'COUNT', page)) as StreamEntry[];
    newestId ??= entries[0]?.[0];
    if (options.limit === 0) break;
    for (const [, fields] of entries) {
      const kept = acceptEntry(fields, options.accept);
      if (kept !== undefined) reversed.push(kept);
      if (reversed.length >= options.limit) break;
    }
    if (reversed.length >= options.limit || entries.length < page) break;
    end = `(${entries[entries.length - 1]![0]}`;
  }
  for (let i = reversed.length - 1; i >= 0; i--) await options.write(reversed[i]!);
  return newestId;
}

async function follow(redis: RedisClient, fromId: string, options: TailRedisStreamOptions): Promise<void> {
  let lastId = fromId;
  const blockMs = options.blockMs ?? 5_000;
  while (!options.signal.aborted) {
    const result = (await redis.xread('COUNT', MAX_PAGE, 'BLOCK', blockMs, 'STREAMS', options.streamKey, lastId)) as [key: string, entries: StreamEntry[]][] | null;
    for (const [, entries] of result ?? []) {
      for (const [id, fields] of entries) {
        lastId = id;
        const kept = acceptEntry(fields, options.accept);
        if (kept !== undefined) await options.write(kept);
      }
    }
  }
}

function acceptEntry(fields: string[], accept: LineFilter): string | undefined {
  for (let i = 0; i + 1 < fields.length; i += 2) {
    if (fields[i] === AUDIT_STREAM_FIELD) return accept(fields[i + 1]!);
  }
  return undefined;
}
