// The Lua scripts of the Redis key store (redis-key-store.ts has the key layout): each
// checks and writes in one step inside Redis, and publishes the changed key's hash on the
// invalidation channel in the same step.

export const CREATE_SCRIPT = `
if redis.call('exists', KEYS[1]) == 1 then return 'hash_exists' end
if redis.call('exists', KEYS[2]) == 1 then return 'id_exists' end
redis.call('hset', KEYS[1], unpack(ARGV, 4))
redis.call('set', KEYS[2], ARGV[1])
redis.call('sadd', KEYS[3], ARGV[2])
redis.call('sadd', KEYS[4], ARGV[2])
redis.call('publish', ARGV[3], ARGV[1])
return 'ok'
`;

// First revocation wins, so revoking twice keeps the original time.
export const REVOKE_SCRIPT = `
if redis.call('exists', KEYS[1]) == 0 then return nil end
if not redis.call('hget', KEYS[1], 'revoked_at') then
  redis.call('hset', KEYS[1], 'revoked_at', ARGV[1])
  redis.call('hincrby', KEYS[1], 'rev', 1)
end
redis.call('publish', ARGV[2], ARGV[3])
return redis.call('hgetall', KEYS[1])
`;

// Only ever moves last_used_at forward (ISO strings of one format sort as times) and never
// recreates a record that is gone.
export const TOUCH_SCRIPT = `
if redis.call('exists', KEYS[1]) == 0 then return 0 end
local current = redis.call('hget', KEYS[1], 'last_used_at')
if current and current >= ARGV[1] then return 0 end
redis.call('hset', KEYS[1], 'last_used_at', ARGV[1])
return 1
`;

// Compare-and-set of a key's settings. KEYS[1] the key's hash; for a rotation also KEYS[2]
// the new key's hash, KEYS[3] its id entry, KEYS[4] its account set, KEYS[5] the all set.
// ARGV: expected rev, channel, the key's hash, n, n field/value pairs to set, m, m fields
// to delete, [new key's hash, new key id, its field/value pairs...].
export const UPDATE_SCRIPT = `
if redis.call('exists', KEYS[1]) == 0 then return 'gone' end
local rev = redis.call('hget', KEYS[1], 'rev') or '0'
if rev ~= ARGV[1] then return 'conflict' end
local i = 4
local nset = tonumber(ARGV[i])
local sets = {}
for j = 1, nset * 2 do sets[j] = ARGV[i + j] end
i = i + nset * 2 + 1
local ndel = tonumber(ARGV[i])
local dels = {}
for j = 1, ndel do dels[j] = ARGV[i + j] end
i = i + ndel + 1
if #KEYS == 5 then
  if redis.call('exists', KEYS[2]) == 1 then return 'hash_exists' end
  if redis.call('exists', KEYS[3]) == 1 then return 'id_exists' end
end
if nset > 0 then redis.call('hset', KEYS[1], unpack(sets)) end
if ndel > 0 then redis.call('hdel', KEYS[1], unpack(dels)) end
redis.call('hincrby', KEYS[1], 'rev', 1)
redis.call('publish', ARGV[2], ARGV[3])
if #KEYS == 5 then
  redis.call('hset', KEYS[2], unpack(ARGV, i + 2))
  redis.call('set', KEYS[3], ARGV[i])
  redis.call('sadd', KEYS[4], ARGV[i + 1])
  redis.call('sadd', KEYS[5], ARGV[i + 1])
  redis.call('publish', ARGV[2], ARGV[i])
end
return 'ok'
`;
