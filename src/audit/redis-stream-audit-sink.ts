// Audit sink: one Redis stream entry per record, `XADD key MAXLEN ~ maxLen * record <json>`,
// one pipeline per batch. The whole record is one JSON field so types (numbers, nulls)
// survive exactly and consumers parse one thing.
import type { Redis } from 'ioredis';
import type { AuditRecord } from './audit-record.js';
import type { AuditSink } from './audit-sink.js';

/** The ioredis client type, re-exported so non-redis files can name it without importing ioredis. */
export type RedisClient = Redis;

/** The single field of each stream entry; its value is the record as JSON. */
export const AUDIT_STREAM_FIELD = 'record';

export interface RedisStreamAuditSinkOptions {
  redis: RedisClient;
  /** The full stream key, e.g. "agentgw:audit" (no prefix is added). */
  streamKey: string;
  /** Approximate cap (MAXLEN ~): Redis trims whole macro nodes, so the stream may hold a little more. */
  maxLen: number;
  /** Budget for one batch's pipeline round trip; past it the batch counts as failed. */
  commandTimeoutMs: number;
}

export class RedisStreamAuditSink implements AuditSink {
  readonly name = 'redis';
  private readonly redis: RedisClient;
  private readonly streamKey: string;
  private readonly maxLen: number;
  private readonly commandTimeoutMs: number;

  constructor(options: RedisStreamAuditSinkOptions) {
    this.redis = options.redis;
    this.streamKey = options.streamKey;
    this.maxLen = options.maxLen;
    this.commandTimeoutMs = options.commandTimeoutMs;
  }

  async write(records: readonly AuditRecord[]): Promise<void> {
    if (records.length === 0) return;
    const pipeline = this.redis.pipeline();
    for (const record of records) {
      pipeline.xadd(this.streamKey, 'MAXLEN', '~', this.maxLen, '*', AUDIT_STREAM_FIELD, JSON.stringify(record));
    }
    const results = await withTimeout(pipeline.exec(), this.commandTimeoutMs, `audit XADD pipeline of ${records.length} timed out after ${this.commandTimeoutMs} ms`);
    if (!results) throw new Error('audit XADD pipeline was not executed');
    for (const [error] of results) {
      if (error) throw error;
    }
  }

  /** The client belongs to whoever passed it in; nothing to release here. */
  async close(): Promise<void> {}
}

function withTimeout<T>(promise: Promise<T>, timeoutMs: number, message: string): Promise<T> {
  // A pipeline that outlives its timeout may still settle later; never leave that unhandled.
  promise.catch(() => {});
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), timeoutMs);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
