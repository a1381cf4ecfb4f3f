// Audit sink: one Redis stream entry per record, `XADD key MAXLEN ~ maxLen * record <json>`.
// A batch is one script call that runs those XADDs inside Redis: one command for the client
// to build and one reply to parse, instead of a pipeline of one command per record
// (docs/performance.md). The whole record is one JSON field so types (numbers, nulls)
// survive exactly and consumers parse one thing. The scripts are versioned, typed operations
// (audit-stream-operations.ts).
import { withDeadline } from '../deadline.js';
import { metrics } from '../metrics/metrics.js';
import type { RedisClient } from '../redis/redis-client.js';
import type { AuditLine } from './audit-record.js';
import { defineOperation, operationCall, queueOperation, type EncodedCall, type RedisOperation } from '../redis/redis-operation.js';
import type { AuditSink, AuditSinkName } from './audit-sink.js';
import { AUDIT_APPEND, AUDIT_APPEND_WITH_USAGE, AUDIT_REPLICAS, type AppendWithUsageRequest } from './audit-stream-operations.js';

export { AUDIT_STREAM_FIELD } from './audit-stream-operations.js';

export interface RedisStreamAuditSinkOptions {
  redis: RedisClient;
  /** The full stream key, e.g. "agentgw:audit" (no prefix is added). */
  streamKey: string;
  /** Approximate cap (MAXLEN ~): Redis trims whole macro nodes, so the stream may hold a little more. */
  maxLen: number;
  /** Budget for one batch's pipeline round trip; past it the batch counts as failed. */
  commandTimeoutMs: number;
  /** Metric label and spool name; 'redis' (usage records) unless set ('admin-redis'). */
  name?: AuditSinkName;
  /**
   * Roll records up into hourly usage buckets in the same script call (usage-rollup.lua.ts):
   * `keyPrefix` e.g. "{agentgw:audit}:usage:" (in the stream's slot), buckets kept `retentionSeconds` after their last write.
   */
  usage?: { keyPrefix: string; retentionSeconds: number };
  /**
   * Up to this many of the master's connected replicas must have a batch (Redis WAIT,
   * within the batch's budget) before it counts as written; fewer and the batch fails, so it
   * is spooled and replayed. 0 (default): the master's answer is enough, and a failover may
   * lose what the promoted replica had not received yet.
   */
  waitReplicas?: number;
}

type AppendCall = (...args: EncodedCall) => Promise<unknown>;

export class RedisStreamAuditSink implements AuditSink {
  readonly name: AuditSinkName;
  private readonly redis: RedisClient;
  private readonly streamKey: string;
  private readonly maxLen: number;
  private readonly commandTimeoutMs: number;
  private readonly waitReplicas: number;
  /**
   * The operation each batch runs: with usage rollups or without. Typed by the wider request,
   * which the plain append takes too (it reads only the stream, cap and lines).
   */
  private readonly operation: RedisOperation<AppendWithUsageRequest, number>;
  /** The usage rollup's arguments (none when off: the plain append never reads them). */
  private readonly usage: Pick<AppendWithUsageRequest, 'usagePrefix' | 'retentionSeconds'>;

  constructor(options: RedisStreamAuditSinkOptions) {
    this.redis = options.redis;
    this.streamKey = options.streamKey;
    this.maxLen = options.maxLen;
    this.commandTimeoutMs = options.commandTimeoutMs;
    this.name = options.name ?? 'redis';
    this.usage = options.usage ? { usagePrefix: options.usage.keyPrefix, retentionSeconds: options.usage.retentionSeconds } : { usagePrefix: '', retentionSeconds: 0 };
    this.operation = options.usage ? AUDIT_APPEND_WITH_USAGE : AUDIT_APPEND;
    defineOperation(this.redis, this.operation);
    this.append = operationCall(this.redis, this.operation);
    this.waitReplicas = options.waitReplicas ?? 0;
    if (this.waitReplicas > 0) defineOperation(this.redis, AUDIT_REPLICAS);
  }

  private readonly append: AppendCall;

  async write(lines: readonly AuditLine[]): Promise<void> {
    if (lines.length === 0) return;
    const request: AppendWithUsageRequest = { streamKey: this.streamKey, maxLen: this.maxLen, lines, usagePrefix: this.usage.usagePrefix, retentionSeconds: this.usage.retentionSeconds };
    // withDeadline, not a bare timer: when a burst (thousands of streams closing at once)
    // keeps the event loop busy past the timeout, the reply may already sit unread in the
    // socket; calling that a failure would spool (and later replay, i.e. duplicate) a batch
    // Redis has written.
    try {
      const added = await withDeadline(
        this.waitReplicas > 0 ? this.appendReplicated(request) : this.appendOnce(request),
        this.commandTimeoutMs,
        () => new Error(`audit XADD of ${lines.length} records timed out after ${this.commandTimeoutMs} ms`),
      );
      if (added !== lines.length) throw new Error(`audit XADD script added ${String(added)} of ${lines.length} records`);
    } catch (error) {
      // One failed command, however many records it carried (those are counted by
      // agentgw_audit_records_total{result="spooled"} when the log spools them).
      metrics.redisErrors.inc({ op: 'audit' });
      throw error;
    }
  }

  private async appendOnce(request: AppendWithUsageRequest): Promise<number> {
    return this.operation.decode(await this.append(...this.operation.encode(request)), request);
  }

  /**
   * The script, then WAIT for the replicas the master has right now (at most waitReplicas):
   * every replica a failover could promote then holds the batch. The replica count rides
   * with the script; WAIT, which counts the replicas that have this connection's writes so
   * far, follows on the same connection (on a cluster, a pipeline goes to the node of its
   * keyed command: the stream's master). A master without replicas answers at once.
   */
  private async appendReplicated(request: AppendWithUsageRequest): Promise<number> {
    const startedMs = performance.now();
    const first = this.redis.pipeline();
    queueOperation(first, this.operation, request);
    const replicasRequest = { streamKey: this.streamKey };
    queueOperation(first, AUDIT_REPLICAS, replicasRequest);
    const [[appendError, appendReply] = [], [replicasError, replicasReply] = []] = (await first.exec()) ?? [];
    if (appendError) throw appendError;
    if (replicasError) throw replicasError;
    const added = this.operation.decode(appendReply, request);
    const wanted = Math.min(this.waitReplicas, AUDIT_REPLICAS.decode(replicasReply, replicasRequest));
    if (wanted === 0) return added;
    const second = this.redis.pipeline();
    second.exists(this.streamKey);
    // WAIT gives up a little before the batch's deadline, so its answer (how many replicas) is what fails the batch.
    const remainingMs = this.commandTimeoutMs - (performance.now() - startedMs);
    second.wait(wanted, Math.max(1, Math.floor(remainingMs - Math.max(50, remainingMs / 5))));
    const [, [waitError, acked] = []] = (await second.exec()) ?? [];
    if (waitError) throw waitError;
    if (Number(acked) < wanted) throw new Error(`audit batch reached ${String(acked)} of the master's ${wanted} replicas in time`);
    return added;
  }

  /** The client belongs to whoever passed it in; nothing to release here. */
  async close(): Promise<void> {}
}
