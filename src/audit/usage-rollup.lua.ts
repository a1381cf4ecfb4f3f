// The audit stream's batch script with usage rollups (docs/admin-api.md "Usage"): one call
// per batch, as without rollups, so the gateway sends nothing more. Inside Redis it XADDs
// each record, decodes it, sums the batch per hourly bucket in a Lua table, then writes
// each bucket once: per batch, N XADD + one HINCRBY per distinct (bucket, field) + one
// EXPIRE per bucket the batch created + one SADD and one EXPIRE per day. The fields and the
// latency buckets are those of usage-buckets.ts.
// KEYS[1] the stream; ARGV[1] MAXLEN, ARGV[2] the usage key prefix ("{agentgw:audit}:usage:", in the stream's slot),
// ARGV[3] the retention in seconds, ARGV[4..] one record each. Returns how many it added.
import { MAX_LATENCY_BUCKET } from './usage-buckets.js';

/** `streamField`: the one field of each stream entry (the sink's AUDIT_STREAM_FIELD). */
export const auditAppendWithUsageLua = (streamField: string): string => `
local maxLen = ARGV[1]
local prefix = ARGV[2]
local ttl = tonumber(ARGV[3])
local buckets, bucketOrder, days, dayOrder = {}, {}, {}, {}
local LN2 = math.log(2)
local function bump(key, field, n)
  local b = buckets[key]
  if not b then
    b = {}
    buckets[key] = b
    bucketOrder[#bucketOrder + 1] = key
  end
  b[field] = (b[field] or 0) + n
end
for i = 4, #ARGV do
  local line = ARGV[i]
  redis.call('XADD', KEYS[1], 'MAXLEN', '~', maxLen, '*', '${streamField}', line)
  local ok, r = pcall(cjson.decode, line)
  if ok and type(r) == 'table' and type(r.ts) == 'string' and type(r.key_id) == 'string'
      and type(r.account) == 'string' and type(r.agent) == 'string' then
    local hour = string.sub(r.ts, 1, 13)
    local day = string.sub(r.ts, 1, 10)
    local tokens = 0
    if type(r.tokens_used) == 'number' and r.tokens_used > 0 then tokens = math.floor(r.tokens_used) end
    local li = 0
    if type(r.latency_ms) == 'number' and r.latency_ms > 1 then
      li = math.ceil(4 * math.log(r.latency_ms) / LN2 - 1e-9)
      if li > ${MAX_LATENCY_BUCKET} then li = ${MAX_LATENCY_BUCKET} end
    end
    local outcome = r.outcome
    if type(outcome) ~= 'string' then outcome = 'error' end
    local groups = { 'key:' .. r.key_id, 'account:' .. r.account, 'agent:' .. r.agent, 'key-agent:' .. r.key_id .. '/' .. r.agent }
    for g = 1, 4 do
      local key = prefix .. groups[g] .. ':' .. hour
      bump(key, 'requests', 1)
      if tokens > 0 then bump(key, 'tokens', tokens) end
      if outcome ~= 'ok' then bump(key, 'e:' .. outcome, 1) end
      bump(key, 'l:' .. li, 1)
    end
    local set = days[day]
    if not set then
      set = {}
      days[day] = set
      dayOrder[#dayOrder + 1] = day
    end
    set[r.key_id .. '\\t' .. r.account .. '\\t' .. r.agent] = true
  end
end
for _, key in ipairs(bucketOrder) do
  local b = buckets[key]
  -- requests first: when it comes back equal to what was added the bucket is new, and only
  -- a new bucket needs its TTL (retention counted from the hour's first record).
  local added = string.format('%.0f', b.requests)
  if redis.call('HINCRBY', key, 'requests', added) == tonumber(added) then redis.call('EXPIRE', key, ttl) end
  for field, n in pairs(b) do
    if field ~= 'requests' then redis.call('HINCRBY', key, field, string.format('%.0f', n)) end
  end
end
for _, day in ipairs(dayOrder) do
  local key = prefix .. 'index:' .. day
  local members = {}
  for member in pairs(days[day]) do members[#members + 1] = member end
  redis.call('SADD', key, unpack(members))
  redis.call('EXPIRE', key, ttl + 86400)
end
return #ARGV - 3
`;
