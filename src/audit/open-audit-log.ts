// Builds the AuditLog the config asks for: the file sink, the Redis stream sink, or both, and
// the PostgreSQL sink beside them, behind one BatchingAuditLog. The composition root passes in its shared Redis client;
// this file never creates one.
import type { Clock } from '../clock.js';
import type { GatewayConfig } from '../config/schema.js';
import type { Logger } from '../logger.js';
import { AuditJournal } from './audit-journal.js';
import type { AuditSink } from './audit-sink.js';
import { spoolPathFor } from './audit-spool.js';
import { BatchingAuditLog } from './batching-audit-log.js';
import { FileAuditSink } from './file-audit-sink.js';
import { FileUsageRollup, UsageRollupSink } from './file-usage-rollup.js';
import { FileUsageSource } from './file-usage-source.js';
import type { RedisClient } from '../redis/redis-client.js';
import { keyBeside } from '../redis/redis-key-layout.js';
import { RedisStreamAuditSink } from './redis-stream-audit-sink.js';
import { PostgresAuditSink } from './postgres-audit-sink.js';
import { RedisUsageSource } from './redis-usage-source.js';
import type { UsageSource } from './usage-report.js';

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

/**
 * The Redis keys of usage rollups start with this: `{<stream's tag>}:usage:` (e.g.
 * "{agentgw:audit}:usage:"). The stream's batch script writes them, so on a cluster they
 * must hash to the stream's slot (docs/operations.md, "Key layout"); audit.redis_stream is
 * validated to be a key a tag can name.
 */
export function usageKeyPrefix(streamKey: string): string {
  return keyBeside(streamKey, 'usage:');
}

/**
 * Usage rollups ride exactly one sink, so no record is counted twice: the Redis stream when
 * there is one (hashes written by the same script call), else the file (day files).
 */
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
        ...(audit.usageRollups ? { usage: { keyPrefix: usageKeyPrefix(audit.redisStream), retentionSeconds: audit.usageRetentionMs / 1000 } } : {}),
        waitReplicas: audit.waitReplicas,
      }),
    );
  }
  if (audit.file) {
    const file = new FileAuditSink(audit.file);
    sinks.push(
      audit.redisStream || !audit.usageRollups ? file : new UsageRollupSink(file, new FileUsageRollup({ dir: audit.usageDir, retentionMs: audit.usageRetentionMs, logger: deps.logger, now: () => deps.clock.now() })),
    );
  }
  // Beside the file or stream sink, which usage reports and `audit tail` read (decision 0055).
  if (audit.postgres) sinks.push(new PostgresAuditSink({ ...audit.postgres, rejectedPath: spoolPathFor(audit.spool, 'postgres.rejected'), clock: deps.clock, logger: deps.logger }));
  const journalPath = journalPathFor(audit);
  const journal = journalPath === undefined ? undefined : new AuditJournal(journalPath, { logger: deps.logger });
  return batchesFor(sinks, audit, deps, journal);
}

/**
 * The usage audit's journal (decision 0022): `audit.journal`, off when false, and by default
 * beside the spool ("var/audit-spool.jsonl" → "var/audit-spool.journal.jsonl"), so a
 * per-worker or per-test spool path carries its journal with it.
 */
export function journalPathFor(audit: Pick<GatewayConfig['audit'], 'journal' | 'spool'>): string | undefined {
  if (audit.journal === false) return undefined;
  return audit.journal ?? spoolPathFor(audit.spool, 'journal');
}

/** Where usage reports read rollups: the same place openAuditLog writes them. */
export function openUsageSource(config: Pick<GatewayConfig, 'audit' | 'redis'>, redis: RedisClient | undefined): UsageSource {
  const streamKey = config.audit.redisStream;
  if (streamKey) {
    if (!redis) throw new Error('usage rollups are in Redis but no Redis client was given');
    return new RedisUsageSource(redis, usageKeyPrefix(streamKey));
  }
  return new FileUsageSource(config.audit.usageDir);
}

/**
 * The admin audit trail's sinks (docs/admin-api.md "Admin audit trail"): audit.admin_file
 * and/or audit.admin_redis_stream, beside the usage audit.
 */
export function adminAuditSinks(config: Pick<GatewayConfig, 'audit' | 'redis'>, deps: Pick<OpenAuditLogDeps, 'redis'>): AuditSink[] {
  const { audit } = config;
  const sinks: AuditSink[] = [];
  if (audit.adminRedisStream) {
    if (!deps.redis || !config.redis) throw new Error('audit.admin_redis_stream is set but no Redis client was given');
    sinks.push(
      new RedisStreamAuditSink({
        redis: deps.redis,
        name: 'admin-redis',
        streamKey: audit.adminRedisStream,
        maxLen: audit.maxLen,
        commandTimeoutMs: Math.max(config.redis.commandTimeoutMs, MIN_AUDIT_BATCH_TIMEOUT_MS),
        waitReplicas: audit.waitReplicas,
      }),
    );
  }
  if (audit.adminFile) sinks.push(new FileAuditSink(audit.adminFile, 'admin-file'));
  return sinks;
}

/** The admin audit trail's log for a running gateway: its sinks, each with a spool of its own. */
export function openAdminAuditBatches(config: Pick<GatewayConfig, 'audit' | 'redis'>, deps: OpenAuditLogDeps): BatchingAuditLog {
  return batchesFor(adminAuditSinks(config, deps), config.audit, deps);
}

/** The batching, spooling and retry settings both audit logs share (each sink spools apart). */
function batchesFor(sinks: AuditSink[], audit: GatewayConfig['audit'], deps: OpenAuditLogDeps, journal?: AuditJournal): BatchingAuditLog {
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
    journal,
  });
}
