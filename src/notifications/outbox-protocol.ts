// The Redis outbox's scripts (docs/notifications.md "Rolling upgrades"): each a named,
// versioned operation with one encoder and one typed decoder, like the limiter's
// (src/redis/redis-operation.ts). Every reply starts with its operation's versioned name, which the
// decoder checks: a gateway never reads another version's reply as its own. A change of
// behaviour or reply shape is a new version, a new name, so two gateway versions on one Redis
// each run their own scripts (ioredis sends them by EVALSHA, re-sending the source on NOSCRIPT).
// The keys they touch and what old gateways do with them: docs/decisions/0085-a-position-per-webhook.md.
import { metrics } from '../metrics/metrics.js';
import { isReplyOf, luaReply, replyLayout, type RedisOperation } from '../redis/redis-operation.js';
import type { DeliveryAttempt, DeliveryState } from './outbox.js';

export const OUTBOX_OPERATION = {
  renew: 'agw_outbox_renew_v1',
  release: 'agw_outbox_release_v1',
  commit: 'agw_outbox_commit_v1',
  settle: 'agw_outbox_settle_v1',
} as const;

export type OutboxOperation = keyof typeof OUTBOX_OPERATION;

/** Each reply's fields after its tag, defined once: the scripts build them, the decoders read them by name. */
const RENEW_REPLY = replyLayout('held');
const RELEASE_REPLY = replyLayout('released');
const COMMIT_REPLY = replyLayout('committed', 'trimmed');
const SETTLE_REPLY = replyLayout('state');

/** renew: KEYS lease; ARGV owner, ttlMs. Reply: tag, held (1: the lease is ours and extended). */
const RENEW_LUA = `if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return ${luaReply(OUTBOX_OPERATION.renew, RENEW_REPLY, { held: '1' })}
end
return ${luaReply(OUTBOX_OPERATION.renew, RENEW_REPLY, { held: '0' })}`;

/** release: KEYS lease; ARGV owner. Reply: tag, released. */
const RELEASE_LUA = `if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return ${luaReply(OUTBOX_OPERATION.release, RELEASE_REPLY, { released: '1' })}
end
return ${luaReply(OUTBOX_OPERATION.release, RELEASE_REPLY, { released: '0' })}`;

/**
 * commit: KEYS lease, positions (hash lane → stream id), stream; ARGV owner, lane, position,
 * then every configured lane. Fenced by the lease. Records the lane's position, then trims the
 * stream below the lowest position of the configured lanes (none trimmed while one has no
 * position yet). Reply: tag, committed, trimmed (entries let go).
 */
const COMMIT_LUA = `if redis.call('GET', KEYS[1]) ~= ARGV[1] then return ${luaReply(OUTBOX_OPERATION.commit, COMMIT_REPLY, { committed: '0', trimmed: '0' })} end
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
local function parts(id)
  local ms, seq = string.match(id, '^(%d+)-(%d+)$')
  return tonumber(ms), tonumber(seq)
end
local lowMs, lowSeq = nil, nil
for i = 4, #ARGV do
  local position = redis.call('HGET', KEYS[2], ARGV[i])
  if not position then return ${luaReply(OUTBOX_OPERATION.commit, COMMIT_REPLY, { committed: '1', trimmed: '0' })} end
  local ms, seq = parts(position)
  if ms == nil then return ${luaReply(OUTBOX_OPERATION.commit, COMMIT_REPLY, { committed: '1', trimmed: '0' })} end
  if lowMs == nil or ms < lowMs or (ms == lowMs and seq < lowSeq) then lowMs, lowSeq = ms, seq end
end
if lowMs == nil then return ${luaReply(OUTBOX_OPERATION.commit, COMMIT_REPLY, { committed: '1', trimmed: '0' })} end
local trimmed = redis.call('XTRIM', KEYS[3], 'MINID', string.format('%d-%d', lowMs, lowSeq + 1))
return ${luaReply(OUTBOX_OPERATION.commit, COMMIT_REPLY, { committed: '1', trimmed: 'trimmed' })}`;

/**
 * settle: KEYS the event's state hash; ARGV lane, outcome, attempt JSON ('' none), attempts
 * kept, then the lanes that want the event. Appends the attempt, records `to:<lane>`, and sets
 * `state` from the targets' outcomes. Reply: tag, state ('' when the event's state expired).
 */
const SETTLE_LUA = `if redis.call('EXISTS', KEYS[1]) == 0 then return ${luaReply(OUTBOX_OPERATION.settle, SETTLE_REPLY, { state: "''" })} end
if ARGV[3] ~= '' then
  local list = {}
  local current = redis.call('HGET', KEYS[1], 'attempts')
  if current then
    local ok, decoded = pcall(cjson.decode, current)
    if ok and type(decoded) == 'table' then list = decoded end
  end
  table.insert(list, cjson.decode(ARGV[3]))
  while #list > tonumber(ARGV[4]) do table.remove(list, 1) end
  redis.call('HSET', KEYS[1], 'attempts', cjson.encode(list))
end
redis.call('HSET', KEYS[1], 'to:' .. ARGV[1], ARGV[2])
local state, failed = 'delivered', false
for i = 5, #ARGV do
  local outcome = redis.call('HGET', KEYS[1], 'to:' .. ARGV[i])
  if outcome == 'failed' then failed = true
  elseif outcome ~= 'delivered' then state = 'pending' end
end
if state == 'delivered' and failed then state = 'failed' end
redis.call('HSET', KEYS[1], 'state', state)
return ${luaReply(OUTBOX_OPERATION.settle, SETTLE_REPLY, { state: 'state' })}`;

/** A reply that is not its operation's, or not of its version. */
export class OutboxProtocolError extends Error {
  constructor(readonly operation: string, reply: unknown) {
    // Bounded: a hostile or broken server must not fill the logs.
    super(`webhook outbox operation ${operation} returned an unexpected reply: ${JSON.stringify(reply)?.slice(0, 200)}`);
    this.name = 'OutboxProtocolError';
  }
}

function refuse(operation: string, reply: unknown): never {
  metrics.redisErrors.inc({ op: 'webhook_outbox_protocol' });
  throw new OutboxProtocolError(operation, reply);
}

function isFlag(value: unknown): value is 0 | 1 {
  return value === 0 || value === 1;
}

export interface CommitRequest {
  lease: string;
  positions: string;
  stream: string;
  owner: string;
  lane: string;
  position: string;
  lanes: readonly string[];
}

export interface SettleRequest {
  eventKey: string;
  lane: string;
  outcome: DeliveryState;
  attempt: DeliveryAttempt | undefined;
  attemptsKept: number;
  targets: readonly string[];
}

export interface LeaseRequest {
  lease: string;
  owner: string;
}

export interface RenewRequest extends LeaseRequest {
  ttlMs: number;
}

export function decodeRenew(reply: unknown): { held: boolean } {
  if (!isReplyOf(OUTBOX_OPERATION.renew, RENEW_REPLY, reply) || !isFlag(reply[RENEW_REPLY.at.held])) refuse(OUTBOX_OPERATION.renew, reply);
  return { held: reply[RENEW_REPLY.at.held] === 1 };
}

export function decodeRelease(reply: unknown): { released: boolean } {
  if (!isReplyOf(OUTBOX_OPERATION.release, RELEASE_REPLY, reply) || !isFlag(reply[RELEASE_REPLY.at.released])) refuse(OUTBOX_OPERATION.release, reply);
  return { released: reply[RELEASE_REPLY.at.released] === 1 };
}

export function decodeCommit(reply: unknown): { committed: boolean; trimmed: number } {
  if (!isReplyOf(OUTBOX_OPERATION.commit, COMMIT_REPLY, reply)) refuse(OUTBOX_OPERATION.commit, reply);
  const committed = reply[COMMIT_REPLY.at.committed];
  const trimmed = reply[COMMIT_REPLY.at.trimmed];
  if (!isFlag(committed) || !Number.isInteger(trimmed) || (trimmed as number) < 0) refuse(OUTBOX_OPERATION.commit, reply);
  return { committed: committed === 1, trimmed: trimmed as number };
}

export function decodeSettle(reply: unknown): { state: DeliveryState | undefined } {
  if (!isReplyOf(OUTBOX_OPERATION.settle, SETTLE_REPLY, reply)) refuse(OUTBOX_OPERATION.settle, reply);
  const state: unknown = reply[SETTLE_REPLY.at.state];
  if (state === '') return { state: undefined };
  if (state !== 'pending' && state !== 'delivered' && state !== 'failed') refuse(OUTBOX_OPERATION.settle, reply);
  return { state };
}

/** renew: [lease, owner, ttlMs]. */
export const OUTBOX_RENEW: RedisOperation<RenewRequest, { held: boolean }> = {
  name: OUTBOX_OPERATION.renew,
  source: RENEW_LUA,
  numberOfKeys: 1,
  encode: (request) => [request.lease, request.owner, request.ttlMs],
  decode: decodeRenew,
};

/** release: [lease, owner]. */
export const OUTBOX_RELEASE: RedisOperation<LeaseRequest, { released: boolean }> = {
  name: OUTBOX_OPERATION.release,
  source: RELEASE_LUA,
  numberOfKeys: 1,
  encode: (request) => [request.lease, request.owner],
  decode: decodeRelease,
};

/** commit: [lease, positions, stream, owner, lane, position, ...lanes]. */
export const OUTBOX_COMMIT: RedisOperation<CommitRequest, { committed: boolean; trimmed: number }> = {
  name: OUTBOX_OPERATION.commit,
  source: COMMIT_LUA,
  numberOfKeys: 3,
  encode: (request) => [request.lease, request.positions, request.stream, request.owner, request.lane, request.position, ...request.lanes],
  decode: decodeCommit,
};

/** settle: [event key, lane, outcome, attempt JSON or '', attempts kept, ...targets]. */
export const OUTBOX_SETTLE: RedisOperation<SettleRequest, { state: DeliveryState | undefined }> = {
  name: OUTBOX_OPERATION.settle,
  source: SETTLE_LUA,
  numberOfKeys: 1,
  encode: (request) => [request.eventKey, request.lane, request.outcome, request.attempt === undefined ? '' : JSON.stringify(request.attempt), request.attemptsKept, ...request.targets],
  decode: decodeSettle,
};

/** Every outbox operation, for registration and the protocol tests. */
export const OUTBOX_OPERATIONS = [OUTBOX_RENEW, OUTBOX_RELEASE, OUTBOX_COMMIT, OUTBOX_SETTLE] as const;
