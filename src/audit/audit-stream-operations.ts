// The audit stream's scripts as typed operations (src/redis/redis-operation.ts): each its
// versioned name, its source, the encoder of a batch and the decoder of its tagged reply
// (docs/audit.md, "Stream scripts and upgrades"). A batch is one script call that runs its
// XADDs inside Redis (and, with usage rollups, counts them: usage-rollup.lua.ts).
import { UnexpectedReplyError, isReplyOf, luaReply, replyLayout, type RedisOperation, type ReplyLayout } from '../redis/redis-operation.js';
import type { AuditLine } from './audit-record.js';
import { auditAppendWithUsageLua } from './usage-rollup.lua.js';

/** The single field of each stream entry; its value is the record as JSON. */
export const AUDIT_STREAM_FIELD = 'record';

export const AUDIT_SCRIPT = {
  append: 'agw_audit_append_v1',
  appendWithUsage: 'agw_audit_append_usage_v1',
  replicas: 'agw_audit_replicas_v1',
} as const;

/** append's (with or without usage) reply: how many records it added. */
export const APPEND_REPLY = replyLayout('added');
/** replicas' reply: how many replicas the stream's master has connected. */
export const REPLICAS_REPLY = replyLayout('connected');

export interface AppendRequest {
  streamKey: string;
  /** Approximate cap (MAXLEN ~). */
  maxLen: number;
  lines: readonly AuditLine[];
}

export interface AppendWithUsageRequest extends AppendRequest {
  /** e.g. "{agentgw:audit}:usage:", in the stream's slot. */
  usagePrefix: string;
  retentionSeconds: number;
}

/** KEYS[1] the stream, ARGV[1] MAXLEN, ARGV[2..] one record each. */
const AUDIT_APPEND_LUA = `
local maxLen = ARGV[1]
for i = 2, #ARGV do
  redis.call('XADD', KEYS[1], 'MAXLEN', '~', maxLen, '*', '${AUDIT_STREAM_FIELD}', ARGV[i])
end
return ${luaReply(AUDIT_SCRIPT.append, APPEND_REPLY, { added: '#ARGV - 1' })}
`;

/**
 * KEYS[1] the stream (unused: it routes the call to the stream's node). A script so it can
 * carry the key: a keyless INFO in a cluster pipeline would answer from any node and stop
 * ioredis from following a MOVED.
 */
const REPLICAS_LUA = `
local info = redis.call('INFO', 'replication')
return ${luaReply(AUDIT_SCRIPT.replicas, REPLICAS_REPLY, { connected: "tonumber(string.match(info, 'connected_slaves:(%d+)')) or 0" })}
`;

/** The count at `at` of a one-count reply of `tag`. */
function countAt(tag: string, layout: ReplyLayout<string>, reply: unknown, at: number): number {
  if (isReplyOf(tag, layout, reply) && Number.isInteger(reply[at])) return reply[at] as number;
  throw new UnexpectedReplyError(tag, reply);
}

/** [stream, maxLen, ...head, ...lines]: one array, sized once (a batch may hold thousands of lines). */
function appendArgs(request: AppendRequest, head: ReadonlyArray<string | number>): Array<string | number> {
  const { lines } = request;
  const first = 2 + head.length;
  const args: Array<string | number> = new Array(first + lines.length);
  args[0] = request.streamKey;
  args[1] = request.maxLen;
  for (let i = 0; i < head.length; i += 1) args[2 + i] = head[i]!;
  for (let i = 0; i < lines.length; i += 1) args[first + i] = lines[i]!;
  return args;
}

const NO_HEAD: ReadonlyArray<string | number> = [];

export const AUDIT_APPEND: RedisOperation<AppendRequest, number> = {
  name: AUDIT_SCRIPT.append,
  source: AUDIT_APPEND_LUA,
  numberOfKeys: 1,
  encode: (request) => appendArgs(request, NO_HEAD),
  decode: (reply) => countAt(AUDIT_SCRIPT.append, APPEND_REPLY, reply, APPEND_REPLY.at.added),
};

/** usage-rollup.lua.ts: ARGV[2] the usage prefix, ARGV[3] the retention in seconds, then the records. */
export const AUDIT_APPEND_WITH_USAGE: RedisOperation<AppendWithUsageRequest, number> = {
  name: AUDIT_SCRIPT.appendWithUsage,
  source: auditAppendWithUsageLua(AUDIT_STREAM_FIELD, (added) => luaReply(AUDIT_SCRIPT.appendWithUsage, APPEND_REPLY, { added })),
  numberOfKeys: 1,
  encode: (request) => appendArgs(request, [request.usagePrefix, Math.max(1, Math.ceil(request.retentionSeconds))]),
  decode: (reply) => countAt(AUDIT_SCRIPT.appendWithUsage, APPEND_REPLY, reply, APPEND_REPLY.at.added),
};

export const AUDIT_REPLICAS: RedisOperation<{ streamKey: string }, number> = {
  name: AUDIT_SCRIPT.replicas,
  source: REPLICAS_LUA,
  numberOfKeys: 1,
  encode: (request) => [request.streamKey],
  decode: (reply) => countAt(AUDIT_SCRIPT.replicas, REPLICAS_REPLY, reply, REPLICAS_REPLY.at.connected),
};

/** Every audit stream operation. */
export const AUDIT_OPERATIONS = [AUDIT_APPEND, AUDIT_APPEND_WITH_USAGE, AUDIT_REPLICAS] as const;
