// The one write of an aggregated session's record that must not lose another's (docs/mcp.md "The
// aggregated endpoint"): a compare-and-swap. Two requests of one session, on one instance or two,
// may each open an upstream session (for the same server, or for two servers) and store it; a
// plain read-then-write lets the later write drop the earlier one's server, and a session whose
// record no longer names the upstream session a server is using routes the client's answers
// (sampling, elicitation) to another one, where nothing waits for them. The record is encoded in
// TypeScript (aggregate-session-record.ts, its one encoder); Redis only compares texts.
// A named, versioned operation like every script (src/redis/redis-operation.ts).
import { isReplyOf, luaReply, replyLayout, UnexpectedReplyError, type RedisOperation } from '../redis/redis-operation.js';

export const SESSION_SWAP_OPERATION = 'agw_mcp_session_swap_v1';

/** The reply after its tag: swapped (1 when `next` was stored), current (the stored text when not; '' when the session is gone). */
const SWAP_REPLY = replyLayout('swapped', 'current');

export interface SessionSwapRequest {
  key: string;
  /** The record's text as the caller read it. */
  expected: string;
  /** What replaces it, only if it is still `expected`. */
  next: string;
  /** The session's idle expiry, renewed by the write. */
  idleMs: number;
}

/** Either stored, or not, with the text found in its place (undefined: the session is gone). */
export type SessionSwapReply = { swapped: true } | { swapped: false; current: string | undefined };

/** KEYS session; ARGV expected, next, idle ms. */
const SWAP_LUA = `local current = redis.call('GET', KEYS[1])
if not current then return ${luaReply(SESSION_SWAP_OPERATION, SWAP_REPLY, { swapped: '0', current: "''" })} end
if current ~= ARGV[1] then return ${luaReply(SESSION_SWAP_OPERATION, SWAP_REPLY, { swapped: '0', current: 'current' })} end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return ${luaReply(SESSION_SWAP_OPERATION, SWAP_REPLY, { swapped: '1', current: "''" })}`;

export const sessionSwap: RedisOperation<SessionSwapRequest, SessionSwapReply> = {
  name: SESSION_SWAP_OPERATION,
  source: SWAP_LUA,
  numberOfKeys: 1,
  encode: (request) => [request.key, request.expected, request.next, request.idleMs],
  decode: (reply) => {
    if (!isReplyOf(SESSION_SWAP_OPERATION, SWAP_REPLY, reply)) throw new UnexpectedReplyError(SESSION_SWAP_OPERATION, reply);
    const swapped = reply[SWAP_REPLY.at.swapped];
    const current = reply[SWAP_REPLY.at.current];
    if (swapped === 1) return { swapped: true };
    if (swapped !== 0 || typeof current !== 'string') throw new UnexpectedReplyError(SESSION_SWAP_OPERATION, reply);
    return { swapped: false, current: current === '' ? undefined : current };
  },
};
