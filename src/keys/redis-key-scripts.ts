// The Lua scripts of the Redis key store (redis-key-store.ts has the record layout,
// redis-key-index.ts the indexes): each checks and writes a record and its index entries in
// one step inside Redis, and publishes the changed key's hash on the invalidation channel in
// the same step. Index keys share the records' hash tag, so on a Cluster they are local.
// Each script is a versioned operation (redis-key-operations.ts joins it with its encoder and
// decoder): its reply starts with its name and is laid out by the layouts below, which the
// Lua and the decoders both use (docs/keys.md, "Store scripts and upgrades").
import { luaReply, replyLayout } from '../redis/redis-operation.js';

/** The scripts' versioned names: the registered commands and their replies' tags. */
export const KEY_SCRIPT = {
  create: 'agw_key_create_v1',
  revoke: 'agw_key_revoke_v1',
  touch: 'agw_key_touch_v1',
  update: 'agw_key_update_v1',
  migrate: 'agw_key_migrate_v1',
} as const;

/** create's, update's and migrate's reply: what happened, one word (each decoder lists its own). */
export const OUTCOME_REPLY = replyLayout('outcome');
/** revoke's reply: 'revoked' and the record's field/value pairs after the revocation, or 'gone' and none. */
export const REVOKE_REPLY = replyLayout('outcome', 'fields');
/** touch's reply: 1 when last_used_at moved forward, else 0. */
export const TOUCH_REPLY = replyLayout('moved');

/** The Lua `return` of an outcome reply. */
function outcome(tag: string, word: string): string {
  return `return ${luaReply(tag, OUTCOME_REPLY, { outcome: `'${word}'` })}`;
}

/**
 * Applies the index operations at ARGV[i] (redis-key-index.ts, indexOps) and leaves `i` on
 * the argument after them.
 */
const APPLY_INDEX_OPS = `
local nops = tonumber(ARGV[i])
for j = 0, nops - 1 do
  local at = i + 1 + j * 4
  if ARGV[at] == 'a' then redis.call('zadd', ARGV[at + 1], ARGV[at + 2], ARGV[at + 3])
  else redis.call('zrem', ARGV[at + 1], ARGV[at + 3]) end
end
i = i + 1 + nops * 4
`;

// KEYS: the record, its id entry. ARGV: hash, key id, channel, n, n field/value pairs, index ops.
export const CREATE_SCRIPT = `
if redis.call('exists', KEYS[1]) == 1 then ${outcome(KEY_SCRIPT.create, 'hash_exists')} end
if redis.call('exists', KEYS[2]) == 1 then ${outcome(KEY_SCRIPT.create, 'id_exists')} end
local nfields = tonumber(ARGV[4])
redis.call('hset', KEYS[1], unpack(ARGV, 5, 4 + nfields * 2))
redis.call('set', KEYS[2], ARGV[1])
local i = 5 + nfields * 2
${APPLY_INDEX_OPS}
redis.call('publish', ARGV[3], ARGV[1])
${outcome(KEY_SCRIPT.create, 'ok')}
`;

// First revocation wins, so revoking twice keeps the original time. The record's index
// member (field ix) moves to status:revoked. ARGV: time, channel, hash, the store's key head.
export const REVOKE_SCRIPT = `
if redis.call('exists', KEYS[1]) == 0 then return ${luaReply(KEY_SCRIPT.revoke, REVOKE_REPLY, { outcome: "'gone'", fields: '{}' })} end
if not redis.call('hget', KEYS[1], 'revoked_at') then
  redis.call('hset', KEYS[1], 'revoked_at', ARGV[1])
  redis.call('hincrby', KEYS[1], 'rev', 1)
  local member = redis.call('hget', KEYS[1], 'ix')
  if member then
    redis.call('zrem', ARGV[4] .. 'ix:status:active', member)
    redis.call('zrem', ARGV[4] .. 'ix:status:expired', member)
    redis.call('zrem', ARGV[4] .. 'ix:expiry', member)
    redis.call('zadd', ARGV[4] .. 'ix:status:revoked', 0, member)
  end
end
redis.call('publish', ARGV[2], ARGV[3])
return ${luaReply(KEY_SCRIPT.revoke, REVOKE_REPLY, { outcome: "'revoked'", fields: "redis.call('hgetall', KEYS[1])" })}
`;

// Only ever moves last_used_at forward (ISO strings of one format sort as times) and never
// recreates a record that is gone.
export const TOUCH_SCRIPT = `
if redis.call('exists', KEYS[1]) == 0 then return ${luaReply(KEY_SCRIPT.touch, TOUCH_REPLY, { moved: '0' })} end
local current = redis.call('hget', KEYS[1], 'last_used_at')
if current and current >= ARGV[1] then return ${luaReply(KEY_SCRIPT.touch, TOUCH_REPLY, { moved: '0' })} end
redis.call('hset', KEYS[1], 'last_used_at', ARGV[1])
return ${luaReply(KEY_SCRIPT.touch, TOUCH_REPLY, { moved: '1' })}
`;

// Compare-and-set of a key's settings. KEYS[1] the key's hash; for a rotation also KEYS[2]
// the new key's hash, KEYS[3] its id entry. ARGV: expected rev, channel, the key's hash, n,
// n field/value pairs to set, m, m fields to delete, index ops (both keys'), [new key's
// hash, new key id, its field/value pairs...]. The index ops were computed from the record
// at the expected rev, so they apply only with it.
export const UPDATE_SCRIPT = `
if redis.call('exists', KEYS[1]) == 0 then ${outcome(KEY_SCRIPT.update, 'gone')} end
local rev = redis.call('hget', KEYS[1], 'rev') or '0'
if rev ~= ARGV[1] then ${outcome(KEY_SCRIPT.update, 'conflict')} end
local i = 4
local nset = tonumber(ARGV[i])
local sets = {}
for j = 1, nset * 2 do sets[j] = ARGV[i + j] end
i = i + nset * 2 + 1
local ndel = tonumber(ARGV[i])
local dels = {}
for j = 1, ndel do dels[j] = ARGV[i + j] end
i = i + ndel + 1
if #KEYS == 3 then
  if redis.call('exists', KEYS[2]) == 1 then ${outcome(KEY_SCRIPT.update, 'hash_exists')} end
  if redis.call('exists', KEYS[3]) == 1 then ${outcome(KEY_SCRIPT.update, 'id_exists')} end
end
if nset > 0 then redis.call('hset', KEYS[1], unpack(sets)) end
if ndel > 0 then redis.call('hdel', KEYS[1], unpack(dels)) end
redis.call('hincrby', KEYS[1], 'rev', 1)
${APPLY_INDEX_OPS}
redis.call('publish', ARGV[2], ARGV[3])
if #KEYS == 3 then
  redis.call('hset', KEYS[2], unpack(ARGV, i + 2))
  redis.call('set', KEYS[3], ARGV[i])
  redis.call('publish', ARGV[2], ARGV[i])
end
${outcome(KEY_SCRIPT.update, 'ok')}
`;

// Indexes one record written by the layout before the indexes (redis-key-migration.ts) if
// it is still at the rev it was read at, and takes it off the old layout's sets. KEYS: the
// record. ARGV: rev, the old all set, the old account set, key id, n, n field/value pairs,
// index ops.
export const MIGRATE_SCRIPT = `
if redis.call('exists', KEYS[1]) == 0 then ${outcome(KEY_SCRIPT.migrate, 'gone')} end
if (redis.call('hget', KEYS[1], 'rev') or '0') ~= ARGV[1] then ${outcome(KEY_SCRIPT.migrate, 'conflict')} end
local nfields = tonumber(ARGV[5])
redis.call('hset', KEYS[1], unpack(ARGV, 6, 5 + nfields * 2))
local i = 6 + nfields * 2
${APPLY_INDEX_OPS}
redis.call('srem', ARGV[3], ARGV[4])
redis.call('srem', ARGV[2], ARGV[4])
${outcome(KEY_SCRIPT.migrate, 'ok')}
`;
