// Builds the AuditLog the config asks for: the file sink, the Redis stream sink, or both,
// behind one BatchingAuditLog. The composition root passes in its shared Redis client;
// this file never creates one.
import type { Clock } from '../clock.js';
import type { GatewayConfig } from '../config/schema.js';
import type { Logger } from '../logger.js';
import type { AuditSink } from './audit-sink.js';
import { BatchingAuditLog } from './batching-audit-log.js';
import { FileAuditSink } from './file-audit-sink.js';
import type { RedisClient } from '../redis/redis-client.js';
import { RedisStreamAuditSink } from './redis-stream-audit-sink.js';

/** Audit writes are off the request path, so a batch may take longer than one request-path command. */
export const MIN_AUDIT_BATCH_TIMEOUT_MS = 1_000;

export interface OpenAuditLogDeps {
  /** Required when `audit.redis_stream` is set; the caller keeps ownership (closes it after the log). */
  redis?: RedisClient | undefined;
  logger: Logger;
  clock: Clock;
  /** Recovery probe backoff (defaults 250 ms → 10 s); tests shorten it. */
  retryMinMs?: number;
  retryMaxMs?: number;
}

export function openAuditLog(config: Pick<GatewayConfig, 'audit' | 'redis'>, deps: OpenAuditLogDeps): BatchingAuditLog {
  const { audit } = config;
  const sinks: AuditSink[] = [];
  if (audit.redisStream) {
    if (!deps.redis || !config.redis) throw new Error('audit.redis_stream is set but no Redis client was given to openAuditLog');
    sinks.push(
      new RedisStreamAuditSink({
        redis: deps.redis,
        streamKey: audit.redisStream,
        maxLen: audit.maxLen,
        commandTimeoutMs: Math.max(config.redis.commandTimeoutMs, MIN_AUDIT_BATCH_TIMEOUT_MS),
        waitReplicas: audit.waitReplicas,
      }),
    );
  }
  if (audit.file) sinks.push(new FileAuditSink(audit.file));
  return new BatchingAuditLog({
    sinks,
    spoolPath: audit.spool,
    batchSize: audit.batchSize,
    flushIntervalMs: audit.flushIntervalMs,
    maxQueue: audit.maxQueue,
    logger: deps.logger,
    clock: deps.clock,
    retryMinMs: deps.retryMinMs,
    retryMaxMs: deps.retryMaxMs,
  });
}
