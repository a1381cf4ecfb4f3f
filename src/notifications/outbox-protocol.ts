// The Redis outbox's scripts (docs/notifications.md "Rolling upgrades"): each a named,
// versioned operation with one encoder and one typed decoder, like the limiter's
// (src/ratelimit/protocol/). Every reply starts with its operation's versioned name, which the
// decoder checks: a gateway never reads another version's reply as its own. A change of
// behaviour or reply shape is a new version, a new name, so two gateway versions on one Redis
// each run their own scripts (ioredis sends them by EVALSHA, re-sending the source on NOSCRIPT).
// The keys they touch and what old gateways do with them: docs/decisions/0085-a-position-per-webhook.md.
import { metrics } from '../metrics/metrics.js';
import type { DeliveryAttempt, DeliveryState } from './outbox.js';

export const OUTBOX_OPERATION = {
  renew: 'agw_outbox_renew_v1',
  release: 'agw_outbox_release_v1',
  commit: 'agw_outbox_commit_v1',
  settle: 'agw_outbox_settle_v1',
} as const;

export type OutboxOperation = keyof typeof OUTBOX_OPERATION;

/** renew: KEYS lease; ARGV owner, ttlMs. Reply: tag, held (1: the lease is ours and extended). */
const RENEW_LUA = `if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {'${OUTBOX_OPERATION.renew}', 1}
end
return {'${OUTBOX_OPERATION.renew}', 0}`;

/** release: KEYS lease; ARGV owner. Reply: tag, released. */
const RELEASE_LUA = `if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return {'${OUTBOX_OPERATION.release}', 1}
end
return {'${OUTBOX_OPERATION.release}', 0}`;

/**
 * commit: KEYS lease, positions (hash lane → stream id), stream; ARGV owner, lane, position,
 * then every configured lane. Fenced by the lease. Records the lane's position, then trims the
 * stream below the lowest position of the configured lanes (none trimmed while one has no
 * position yet). Reply: tag, committed, trimmed (entries let go).
 */
const COMMIT_LUA = `local tag = '${OUTBOX_OPERATION.commit}'
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return {tag, 0, 0} end
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
local function parts(id)
  local ms, seq = string.match(id, '^(%d+)-(%d+)$')
  return tonumber(ms), tonumber(seq)
end
local lowMs, lowSeq = nil, nil
for i = 4, #ARGV do
  local position = redis.call('HGET', KEYS[2], ARGV[i])
  if not position then return {tag, 1, 0} end
  local ms, seq = parts(position)
  if ms == nil then return {tag, 1, 0} end
  if lowMs == nil or ms < lowMs or (ms == lowMs and seq < lowSeq) then lowMs, lowSeq = ms, seq end
end
if lowMs == nil then return {tag, 1, 0} end
local trimmed = redis.call('XTRIM', KEYS[3], 'MINID', string.format('%d-%d', lowMs, lowSeq + 1))
return {tag, 1, trimmed}`;

/**
 * settle: KEYS the event's state hash; ARGV lane, outcome, attempt JSON ('' none), attempts
 * kept, then the lanes that want the event. Appends the attempt, records `to:<lane>`, and sets
 * `state` from the targets' outcomes. Reply: tag, state ('' when the event's state expired).
 */
const SETTLE_LUA = `local tag = '${OUTBOX_OPERATION.settle}'
if redis.call('EXISTS', KEYS[1]) == 0 then return {tag, ''} end
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
return {tag, state}`;

export const OUTBOX_SOURCES: Record<OutboxOperation, { keys: number; lua: string }> = {
  renew: { keys: 1, lua: RENEW_LUA },
  release: { keys: 1, lua: RELEASE_LUA },
  commit: { keys: 3, lua: COMMIT_LUA },
  settle: { keys: 1, lua: SETTLE_LUA },
};

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

/** [KEYS..., ARGV...] of each operation, in the order its script reads them. */
export function encodeRenew(lease: string, owner: string, ttlMs: number): Array<string | number> {
  return [lease, owner, ttlMs];
}

export function encodeRelease(lease: string, owner: string): string[] {
  return [lease, owner];
}

export function encodeCommit(request: CommitRequest): string[] {
  return [request.lease, request.positions, request.stream, request.owner, request.lane, request.position, ...request.lanes];
}

export function encodeSettle(request: SettleRequest): Array<string | number> {
  return [request.eventKey, request.lane, request.outcome, request.attempt === undefined ? '' : JSON.stringify(request.attempt), request.attemptsKept, ...request.targets];
}

export function decodeRenew(reply: unknown): { held: boolean } {
  if (!Array.isArray(reply) || reply.length !== 2 || reply[0] !== OUTBOX_OPERATION.renew || !isFlag(reply[1])) refuse(OUTBOX_OPERATION.renew, reply);
  return { held: reply[1] === 1 };
}

export function decodeRelease(reply: unknown): { released: boolean } {
  if (!Array.isArray(reply) || reply.length !== 2 || reply[0] !== OUTBOX_OPERATION.release || !isFlag(reply[1])) refuse(OUTBOX_OPERATION.release, reply);
  return { released: reply[1] === 1 };
}

export function decodeCommit(reply: unknown): { committed: boolean; trimmed: number } {
  if (!Array.isArray(reply) || reply.length !== 3 || reply[0] !== OUTBOX_OPERATION.commit || !isFlag(reply[1]) || !Number.isInteger(reply[2]) || (reply[2] as number) < 0) refuse(OUTBOX_OPERATION.commit, reply);
  return { committed: reply[1] === 1, trimmed: reply[2] as number };
}

export function decodeSettle(reply: unknown): { state: DeliveryState | undefined } {
  if (!Array.isArray(reply) || reply.length !== 2 || reply[0] !== OUTBOX_OPERATION.settle) refuse(OUTBOX_OPERATION.settle, reply);
  const state: unknown = reply[1];
  if (state === '') return { state: undefined };
  if (state !== 'pending' && state !== 'delivered' && state !== 'failed') refuse(OUTBOX_OPERATION.settle, reply);
  return { state };
}
