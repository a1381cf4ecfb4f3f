// `audit tail` behind the CLI: picks the configured sink to read (the Redis stream when
// one is configured, else the JSON Lines file), filters by key_id, and prints JSON Lines.
import type { GatewayConfig } from '../config/schema.js';
import { describeRedis, type RedisClientFactory } from '../redis/redis-client.js';
import { followFile, readLastLines, type LineFilter } from './file-audit-reader.js';
import { tailRedisStream } from './redis-stream-audit-reader.js';

export interface TailAuditOptions {
  /** Records printed first (the newest ones, oldest first). */
  limit: number;
  /** Only records of this key. */
  keyId?: string | undefined;
  /** The admin audit trail instead of the usage records. */
  admin?: boolean;
  /** Keep printing new records until `signal` aborts. */
  follow: boolean;
  signal?: AbortSignal;
  /** File sink only: how often --follow checks the file for new lines. */
  pollIntervalMs?: number;
  /** Opens the connection to read the Redis stream; required when the config names one. */
  redis: RedisClientFactory | undefined;
}

export type AuditSource = { kind: 'redis'; address: string; streamKey: string } | { kind: 'file'; path: string };

export function auditSourceOf(config: Pick<GatewayConfig, 'audit' | 'redis'>, admin = false): AuditSource {
  if (admin) {
    if (config.audit.adminRedisStream && config.redis) return { kind: 'redis', address: describeRedis(config.redis), streamKey: config.audit.adminRedisStream };
    return { kind: 'file', path: config.audit.adminFile ?? 'var/admin-audit.jsonl' };
  }
  if (config.audit.redisStream && config.redis) return { kind: 'redis', address: describeRedis(config.redis), streamKey: config.audit.redisStream };
  return { kind: 'file', path: config.audit.file ?? 'var/audit.jsonl' };
}

/** Prints matching audit records through `write`, one JSON object per call (no trailing newline). */
export async function tailAuditRecords(
  config: Pick<GatewayConfig, 'audit' | 'redis'>,
  options: TailAuditOptions,
  write: (line: string) => void | Promise<void>,
): Promise<void> {
  const signal = options.signal ?? new AbortController().signal;
  const accept = recordFilter(options.keyId);
  const source = auditSourceOf(config, options.admin === true);
  if (source.kind === 'redis') {
    if (!options.redis) throw new Error('audit.redis_stream is set but no Redis client factory was given to tailAuditRecords');
    await tailRedisStream({ redis: options.redis, streamKey: source.streamKey, limit: options.limit, accept, write, follow: options.follow, signal });
    return;
  }
  const last = await readLastLines(source.path, options.limit, accept);
  for (const line of last.lines) await write(line);
  if (options.follow) {
    await followFile(source.path, { fromOffset: last.endOffset, accept, write, signal, pollIntervalMs: options.pollIntervalMs ?? 250 });
  }
}

/** Keeps lines that are JSON objects (and of `keyId`, when given); prints them as stored. */
export function recordFilter(keyId: string | undefined): LineFilter {
  return (line) => {
    if (line.length === 0) return undefined;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      return undefined;
    }
    if (!value || typeof value !== 'object') return undefined;
    if (keyId !== undefined && (value as { key_id?: unknown }).key_id !== keyId) return undefined;
    return line;
  };
}
