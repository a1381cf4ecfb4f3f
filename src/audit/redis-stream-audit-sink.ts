// Audit sink: one Redis stream entry per record, `XADD key MAXLEN ~ maxLen * record <json>`.
// A batch is one script call that runs those XADDs inside Redis: one command for the client
// to build and one reply to parse, instead of a pipeline of one command per record
// (docs/performance.md). The whole record is one JSON field so types (numbers, nulls)
// survive exactly and consumers parse one thing.
import { withDeadline } from '../deadline.js';
import { metrics } from '../metrics/metrics.js';
import type { RedisClient } from '../redis/redis-client.js';
import type { AuditLine } from './audit-record.js';
import type { AuditSink, AuditSinkName } from './audit-sink.js';
import { auditAppendWithUsageLua } from './usage-rollup.lua.js';

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

const APPEND_COMMAND = 'agentgwAuditAppend';
const APPEND_WITH_USAGE_COMMAND = 'agentgwAuditAppendUsage';
const REPLICAS_COMMAND = 'agentgwAuditReplicas';

/**
 * KEYS[1] the stream (unused: it routes the call to the stream's node); returns how many
 * replicas that node has connected. A script so it can carry the key: a keyless INFO in a
 * cluster pipeline would answer from any node and stop ioredis from following a MOVED.
 */
const REPLICAS_LUA = `
local info = redis.call('INFO', 'replication')
return tonumber(string.match(info, 'connected_slaves:(%d+)')) or 0
`;

/** KEYS[1] the stream, ARGV[1] MAXLEN, ARGV[2..] one record each; returns how many it added. */
export const AUDIT_APPEND_LUA = `
local maxLen = ARGV[1]
for i = 2, #ARGV do
  redis.call('XADD', KEYS[1], 'MAXLEN', '~', maxLen, '*', '${AUDIT_STREAM_FIELD}', ARGV[i])
end
return #ARGV - 1
`;

type AppendCall = (numKeys: number, ...args: Array<string | number>) => Promise<unknown>;

export class RedisStreamAuditSink implements AuditSink {
  readonly name: AuditSinkName;
  /** Arguments between MAXLEN and the records: the usage prefix and retention, when rolling up. */
  private readonly usageArgs: (string | number)[];
  private readonly redis: RedisClient;
  private readonly streamKey: string;
  private readonly maxLen: number;
  private readonly commandTimeoutMs: number;
  private readonly waitReplicas: number;
  /** The script each batch runs: with usage rollups or without. */
  private readonly appendCommand: string;

  constructor(options: RedisStreamAuditSinkOptions) {
    this.redis = options.redis;
    this.streamKey = options.streamKey;
    this.maxLen = options.maxLen;
    this.commandTimeoutMs = options.commandTimeoutMs;
    this.name = options.name ?? 'redis';
    const command = options.usage ? APPEND_WITH_USAGE_COMMAND : APPEND_COMMAND;
    this.redis.defineCommand(command, { lua: options.usage ? auditAppendWithUsageLua(AUDIT_STREAM_FIELD) : AUDIT_APPEND_LUA });
    this.usageArgs = options.usage ? [options.usage.keyPrefix, Math.max(1, Math.ceil(options.usage.retentionSeconds))] : [];
    this.appendCommand = command;
    this.append = ((this.redis as unknown as Record<string, AppendCall>)[command] as AppendCall).bind(this.redis);
    this.waitReplicas = options.waitReplicas ?? 0;
    if (this.waitReplicas > 0) this.redis.defineCommand(REPLICAS_COMMAND, { numberOfKeys: 1, lua: REPLICAS_LUA });
  }

  private readonly append: AppendCall;

  async write(lines: readonly AuditLine[]): Promise<void> {
    if (lines.length === 0) return;
    const head = 2 + this.usageArgs.length;
    const args: Array<string | number> = new Array(lines.length + head);
    args[0] = this.streamKey;
    args[1] = this.maxLen;
    for (let i = 0; i < this.usageArgs.length; i += 1) args[i + 2] = this.usageArgs[i]!;
    for (let i = 0; i < lines.length; i += 1) args[i + head] = lines[i]!;
    // withDeadline, not a bare timer: when a burst (thousands of streams closing at once)
    // keeps the event loop busy past the timeout, the reply may already sit unread in the
    // socket; calling that a failure would spool (and later replay, i.e. duplicate) a batch
    // Redis has written.
    try {
      const added = await withDeadline(
        this.waitReplicas > 0 ? this.appendReplicated(args) : this.append(1, ...args),
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

  /**
   * The script, then WAIT for the replicas the master has right now (at most waitReplicas):
   * every replica a failover could promote then holds the batch. The replica count rides
   * with the script; WAIT, which counts the replicas that have this connection's writes so
   * far, follows on the same connection (on a cluster, a pipeline goes to the node of its
   * keyed command: the stream's master). A master without replicas answers at once.
   */
  private async appendReplicated(args: Array<string | number>): Promise<unknown> {
    const startedMs = performance.now();
    const first = this.redis.pipeline() as ReturnType<RedisClient['pipeline']> & Record<string, (...args: Array<string | number>) => unknown>;
    first[this.appendCommand]!(1, ...args);
    first[REPLICAS_COMMAND]!(this.streamKey);
    const [[appendError, added] = [], [replicasError, connected] = []] = (await first.exec()) ?? [];
    if (appendError) throw appendError;
    if (replicasError) throw replicasError;
    const wanted = Math.min(this.waitReplicas, Number(connected));
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
