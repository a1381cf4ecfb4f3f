// Reads the audit Redis stream for `audit tail`: XREVRANGE pages backwards for the last N
// matching entries, then XREAD BLOCK from the newest entry on for --follow.
import { Redis } from 'ioredis';
import { AUDIT_STREAM_FIELD } from './redis-stream-audit-sink.js';
import type { LineFilter } from './file-audit-reader.js';

const MAX_PAGE = 1000;

export interface TailRedisStreamOptions {
  url: string;
  streamKey: string;
  limit: number;
  accept: LineFilter;
  write: (line: string) => void | Promise<void>;
  follow: boolean;
  signal: AbortSignal;
  /** How long one XREAD blocks before it is reissued. */
  blockMs?: number;
  connectTimeoutMs?: number;
}

type StreamEntry = [id: string, fields: string[]];

export async function tailRedisStream(options: TailRedisStreamOptions): Promise<void> {
  const redis = new Redis(options.url, {
    lazyConnect: true,
    connectTimeout: options.connectTimeoutMs ?? 5_000,
    maxRetriesPerRequest: options.follow ? 20 : 1,
    // A one-shot tail fails fast; a follower keeps reconnecting while Redis restarts.
    retryStrategy: options.follow ? (times) => Math.min(times * 200, 2_000) : () => null,
  });
  redis.on('error', () => {}); // failures surface through the commands below
  const onAbort = (): void => redis.disconnect();
  options.signal.addEventListener('abort', onAbort, { once: true });
  try {
    await redis.connect();
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
async function printLast(redis: Redis, options: TailRedisStreamOptions): Promise<string | undefined> {
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

async function follow(redis: Redis, fromId: string, options: TailRedisStreamOptions): Promise<void> {
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
