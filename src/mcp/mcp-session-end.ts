// The end of a per-server MCP session in Redis (docs/mcp.md "Sessions across instances"): the
// record deleted and its id published on the sessions' invalidation channel in one script, so
// every instance that holds a copy of the record (session-cache.ts) drops it. In one script so
// that no read can fall between the two, and so that Redis sends the message in the same pass
// as this caller's reply: on one Redis every instance has it in its socket before the client
// that ended the session can even be told so (decision 0116).
// A named, versioned operation like every script (src/redis/redis-operation.ts).
import { isReplyOf, luaReply, replyLayout, UnexpectedReplyError, type RedisOperation } from '../redis/redis-operation.js';

export const SESSION_END_OPERATION = 'agw_mcp_session_end_v1';

/** The reply after its tag: existed (1 when there was a record to delete). */
const END_REPLY = replyLayout('existed');

export interface SessionEndRequest {
  key: string;
  /** The invalidation channel (every instance's session cache listens on it). */
  channel: string;
  /** The session's id, the message. */
  id: string;
}

export interface SessionEndReply {
  existed: boolean;
}

/** KEYS session; ARGV channel, id. */
const END_LUA = `local existed = redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[1], ARGV[2])
return ${luaReply(SESSION_END_OPERATION, END_REPLY, { existed: 'existed' })}`;

export const sessionEnd: RedisOperation<SessionEndRequest, SessionEndReply> = {
  name: SESSION_END_OPERATION,
  source: END_LUA,
  numberOfKeys: 1,
  encode: (request) => [request.key, request.channel, request.id],
  decode: (reply) => {
    if (!isReplyOf(SESSION_END_OPERATION, END_REPLY, reply)) throw new UnexpectedReplyError(SESSION_END_OPERATION, reply);
    const existed = reply[END_REPLY.at.existed];
    if (existed !== 0 && existed !== 1) throw new UnexpectedReplyError(SESSION_END_OPERATION, reply);
    return { existed: existed === 1 };
  },
};
