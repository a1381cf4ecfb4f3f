// The audit stream's batch script with usage rollups (docs/admin-api.md "Usage", decision
// 0024): one call per batch, as without rollups, so the gateway sends nothing more. Inside
// Redis it XADDs each record, decodes it and counts it per (hour, key, account, agent) in a
// Lua table (a record naming a session_id: per (hour, key, account, agent, session)); then it
// spreads those counts over the period hashes — for each family (key, account, agent, tuple,
// and session for records that name one) one hash per hour and one per day, a field per group holding its
// packed bucket ("requests=40 tokens=4997 l:30=10", usage-buckets.ts) — and writes each
// hash the batch touched with three commands: HMGET of its groups, HSET of their buckets
// (and of the marker field "#"), EXPIREAT. Per batch of N records within one hour:
// N XADD + 8 × 3 commands (10 × 3 when records name sessions). A stored bucket is not parsed: the batch's counts are appended
// to it after a ";" (a field may then appear twice; readers add them up), and it is
// rewritten with each field once when the appended part outgrows the first segment.
// KEYS[1] the stream; ARGV[1] MAXLEN, ARGV[2] the usage key prefix ("{agentgw:audit}:usage:",
// in the stream's slot), ARGV[3] the retention in seconds, ARGV[4..] one record each.
// Returns the reply its operation lays out around how many records it added
// (audit-stream-operations.ts, AUDIT_APPEND_WITH_USAGE).
import { MAX_TOKENS_USED } from './audit-record.js';
import { MAX_LATENCY_BUCKET, MAX_RECORD_COST_USD, USAGE_HASH_MARKER } from './usage-buckets.js';

/**
 * `streamField`: the one field of each stream entry (AUDIT_STREAM_FIELD); `reply`: the Lua
 * return value of the operation's tagged reply around the count (a Lua expression).
 */
export const auditAppendWithUsageLua = (streamField: string, reply: (added: string) => string): string => `
local maxLen = ARGV[1]
local prefix = ARGV[2]
local ttl = tonumber(ARGV[3])
local LN2 = math.log(2)
local fmt = string.format
-- "hour tuple [session]" -> { hour, key, account, agent, fields, session? }: one table lookup a record.
local tuples, tupleOrder = {}, {}
local function escapeByte(c)
  return fmt('%%%02X', string.byte(c))
end
local function usable(s)
  return type(s) == 'string' and string.find(s, '^[^#%s%c][^%s%c]*$') ~= nil
end
for i = 4, #ARGV do
  local line = ARGV[i]
  redis.call('XADD', KEYS[1], 'MAXLEN', '~', maxLen, '*', '${streamField}', line)
  local ok, r = pcall(cjson.decode, line)
  if ok and type(r) == 'table' and type(r.ts) == 'string' and string.find(r.ts, '^%d%d%d%d%-%d%d%-%d%dT%d%d') ~= nil
      and usable(r.key_id) and usable(r.account) and usable(r.agent) then
    local hour = string.sub(r.ts, 1, 13)
    local id = hour .. ' ' .. r.key_id .. ' ' .. r.account .. ' ' .. r.agent
    -- The agent run, escaped as sessionGroup escapes it (rollup-record.ts): its tuple is its own.
    local session = nil
    if type(r.session_id) == 'string' and r.session_id ~= '' then
      session = (string.gsub(r.session_id, '[%s%c%%]', escapeByte))
      id = id .. ' ' .. session
    end
    local t = tuples[id]
    if not t then
      t = { hour, r.key_id, r.account, r.agent, {}, session }
      tuples[id] = t
      tupleOrder[#tupleOrder + 1] = id
    end
    local f = t[5]
    f['requests'] = (f['requests'] or 0) + 1
    if type(r.tool_calls) == 'table' and #r.tool_calls > 0 then f['tool_calls'] = (f['tool_calls'] or 0) + #r.tool_calls end
    if type(r.tokens_used) == 'number' and r.tokens_used > 0 and r.tokens_used <= ${MAX_TOKENS_USED} and r.tokens_used == math.floor(r.tokens_used) then f['tokens'] = (f['tokens'] or 0) + r.tokens_used end
    -- cost_usd in whole micro-dollars, as costMicroUsd rounds it (usage-buckets.ts).
    local cost = r.cost_usd
    if type(cost) == 'number' and cost >= 0 and cost <= ${MAX_RECORD_COST_USD} then
      local micro = math.floor(cost * 1000000 + 0.5)
      if micro > 0 then f['cost_micro'] = (f['cost_micro'] or 0) + micro end
    end
    local outcome = r.outcome
    if type(outcome) ~= 'string' then outcome = 'error' end
    if outcome ~= 'ok' then
      local e = 'e:' .. outcome
      f[e] = (f[e] or 0) + 1
    end
    local li = 0
    if type(r.latency_ms) == 'number' and r.latency_ms > 1 then
      li = math.ceil(4 * math.log(r.latency_ms) / LN2 - 1e-9)
      if li > ${MAX_LATENCY_BUCKET} then li = ${MAX_LATENCY_BUCKET} end
    end
    local l = 'l:' .. li
    f[l] = (f[l] or 0) + 1
  end
end

-- Days since 1970-01-01 of a civil date (H. Hinnant's days_from_civil).
local function epochDay(y, m, d)
  if m <= 2 then y = y - 1 end
  local era = math.floor(y / 400)
  local yoe = y - era * 400
  local mp = (m + 9) % 12
  local doy = math.floor((153 * mp + 2) / 5) + d - 1
  return era * 146097 + yoe * 365 + math.floor(yoe / 4) - math.floor(yoe / 100) + doy - 719468
end

-- A bucket's fields as "requests=3 tokens=300 l:30=1". A stored bucket is not parsed: a
-- batch appends its counts after a ";" (readers add repeated fields up), and the bucket is
-- compacted (each field once) when what was appended outgrows its first, compacted segment:
-- every appended count is then parsed about twice in all, and a bucket read is at most about
-- twice its compacted size.
local function pack(fields)
  local parts = {}
  if fields['requests'] then parts[1] = 'requests=' .. fmt('%.0f', fields['requests']) end
  for field, n in pairs(fields) do
    if field ~= 'requests' then parts[#parts + 1] = field .. '=' .. fmt('%.0f', n) end
  end
  return table.concat(parts, ' ')
end
-- A bucket with each field once: what a bucket grown past COMPACT_AT bytes is rewritten to.
local function compact(packed)
  local fields = {}
  for field, n in string.gmatch(packed, '([^%s;=]+)=(%d+)') do fields[field] = (fields[field] or 0) + tonumber(n) end
  return pack(fields)
end
local function addFields(into, from)
  for field, n in pairs(from) do into[field] = (into[field] or 0) + n end
end

-- hash key -> { expireAt, { group -> { packed, fields, summed? } }, group order }: a group
-- with one tuple in the batch (a key, a tuple) reuses the tuple's packed counts; one with
-- several (an account, an agent) adds their fields up first.
local hashes, hashOrder = {}, {}
local function into(key, expireAt, group, packed, fields)
  local h = hashes[key]
  if not h then
    h = { expireAt, {}, {} }
    hashes[key] = h
    hashOrder[#hashOrder + 1] = key
  end
  local g = h[2][group]
  if not g then
    h[2][group] = { packed, fields, false }
    h[3][#h[3] + 1] = group
  else
    if not g[3] then
      local sum = {}
      addFields(sum, g[2])
      g[2] = sum
      g[3] = true
    end
    addFields(g[2], fields)
    g[1] = nil
  end
end

-- Per hour of the batch (usually one): its ten hash keys and their expiry, built once.
local periodsOf = {}
local function periods(hour)
  local p = periodsOf[hour]
  if p then return p end
  local day = string.sub(hour, 1, 10)
  local dayStart = epochDay(tonumber(string.sub(hour, 1, 4)), tonumber(string.sub(hour, 6, 7)), tonumber(string.sub(hour, 9, 10))) * 86400
  -- A bucket is kept the retention past the end of its period.
  local hourEnds = dayStart + (tonumber(string.sub(hour, 12, 13)) + 1) * 3600 + ttl
  local dayEnds = dayStart + 86400 + ttl
  p = {}
  for f, family in ipairs({ 'key', 'account', 'agent', 'tuple', 'session' }) do
    p[f] = { prefix .. 'h:' .. family .. ':' .. hour, hourEnds, prefix .. 'd:' .. family .. ':' .. day, dayEnds }
  end
  periodsOf[hour] = p
  return p
end
for _, id in ipairs(tupleOrder) do
  local t = tuples[id]
  local p = periods(t[1])
  local groups = { t[2], t[3], t[4], t[2] .. ' ' .. t[3] .. ' ' .. t[4] }
  local families = 4
  if t[6] then
    groups[5] = groups[4] .. ' ' .. t[6]
    families = 5
  end
  local packed = pack(t[5])
  for f = 1, families do
    into(p[f][1], p[f][2], groups[f], packed, t[5])
    into(p[f][3], p[f][4], groups[f], packed, t[5])
  end
end

local CHUNK = 500
local COMPACT_AT = 200
local MARKER = '${USAGE_HASH_MARKER}'
for _, key in ipairs(hashOrder) do
  local h = hashes[key]
  local order = h[3]
  for from = 1, #order, CHUNK do
    local to = math.min(#order, from + CHUNK - 1)
    local names = {}
    for j = from, to do names[#names + 1] = order[j] end
    local stored = redis.call('HMGET', key, unpack(names))
    -- The marker field's value is longer than hash-max-listpack-value (64 by default), so
    -- HSET converts the hash to a hashtable before writing: in a listpack every changed value
    -- moves the rest of the listpack (measured 13 ms a batch of 256 keys, decision 0024).
    local args = { '#', MARKER }
    for j, group in ipairs(names) do
      local g = h[2][group]
      local value = g[1] or pack(g[2])
      local old = stored[j]
      if old then
        value = old .. ';' .. value
        local first = string.find(value, ';', 1, true)
        if #value > COMPACT_AT and #value > 2 * first then value = compact(value) end
      end
      args[#args + 1] = group
      args[#args + 1] = value
    end
    redis.call('HSET', key, unpack(args))
  end
  redis.call('EXPIREAT', key, h[1])
end
return ${reply('#ARGV - 3')}
`;
