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
   * `keyPrefix` e.g. "agentgw:usage:", buckets kept `retentionSeconds` after their last write.
   */
  usage?: { keyPrefix: string; retentionSeconds: number };
}

const APPEND_COMMAND = 'agentgwAuditAppend';
const APPEND_WITH_USAGE_COMMAND = 'agentgwAuditAppendUsage';

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

  constructor(options: RedisStreamAuditSinkOptions) {
    this.redis = options.redis;
    this.streamKey = options.streamKey;
    this.maxLen = options.maxLen;
    this.commandTimeoutMs = options.commandTimeoutMs;
    this.name = options.name ?? 'redis';
    const command = options.usage ? APPEND_WITH_USAGE_COMMAND : APPEND_COMMAND;
    this.redis.defineCommand(command, { lua: options.usage ? auditAppendWithUsageLua(AUDIT_STREAM_FIELD) : AUDIT_APPEND_LUA });
    this.usageArgs = options.usage ? [options.usage.keyPrefix, Math.max(1, Math.ceil(options.usage.retentionSeconds))] : [];
    this.append = ((this.redis as unknown as Record<string, AppendCall>)[command] as AppendCall).bind(this.redis);
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
        this.append(1, ...args),
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

  /** The client belongs to whoever passed it in; nothing to release here. */
  async close(): Promise<void> {}
}
