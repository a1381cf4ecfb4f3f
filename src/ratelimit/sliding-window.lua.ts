// The Redis side of window-math.ts: checks and counts every window of a group of requests
// of one subject in one atomic script. Keep the two in step; the equivalence tests in
// test/integration/ratelimit-redis.test.ts compare their decisions.
//
// KEYS[i]  one hash per window: field "bw" = bucket width, numeric fields = bucket index → count.
// ARGV[1]  nowMs override ("" → the server's TIME, so every gateway instance agrees on time)
// ARGV[2]  count: how many requests of this subject arrived together (the gateway coalesces
//          the requests of one event-loop turn). They are admitted in order, each only if it
//          fits every window, exactly as `count` one-by-one calls at the same instant would.
// ARGV[3]  leaseWanted: extra requests to reserve for this instance (rate-limit-leases.ts);
//          granted only when all `count` were admitted, and never more than 1/LEASE_SHARE of
//          what every window has left, so a nearly spent quota is decided request by request.
//          Granted units are counted in the current bucket like admitted requests.
//          A renewal ahead (rate-limit-leases.ts) sends "leaseWanted:leaseFromMs" instead: the
//          lease is then counted in the buckets current at leaseAtMs = leaseFromMs clamped to
//          [nowMs, nowMs + MAX_LEASE_AHEAD_MS] (the end of the lease it replaces, so the new
//          one outlives that bucket), and leaseValidMs runs to the end of those buckets. A
//          unit counted in a later bucket than the one it is used in counts longer, never
//          less, so every window bound holds (docs/rate-limits.md "Leases").
// ARGV[4]  refundUnits: unused units of an earlier lease, given back first
// ARGV[5 + 4(i-1) ..]  limit, windowMs, bucketMs, refundBucket (-1: none) of KEYS[i].
//          A token budget is sent with its limit negated, and its 4th value is the tokens
//          to charge (the batched charge after answers; 0 on an admission call). It is
//          read-only at admission — it admits every request of the group while it has a
//          token left, none otherwise. So a plan without budgets sends exactly the
//          arguments it always did.
// Token leases (docs/rate-limits.md "Leases"), only on the calls of a plan with budgets
// that may ask for or give back a token reserve: two more arguments after the windows',
// tokenLeaseWanted and tokenRefund (#ARGV = 4 + 4n + 2 tells it apart), and each budget's
// 4th value is then its refund bucket (-1: none), as for a request window — such a call
// never charges. A unit lease is then granted only with a token reserve beside it:
// tokenLease = min(tokenLeaseWanted, 1/LEASE_SHARE of what every budget has left), counted
// in the current bucket of every budget; if that is under 1, no lease at all. The reply
// then ends with tokenLease. Unused tokens (tokenRefund) leave their bucket first.
// Concurrency slot (docs/rate-limits.md "Concurrency caps"), only for a stream on a plan
// with a cap, so every other call sends exactly what it did before: one more key, the slot
// set KEYS[n+1] (score = expiry, member = holder), and three more arguments after the
// windows': streams, leaseMs, memberHead. #ARGV = 4 + 4n + 3 tells it apart (4 + 4n without).
// Expired slots are removed first; the requests the windows admit are then admitted only
// while a slot is free, and each admitted one takes slot memberHead..':'..i (i from 0). No
// lease beside a slot (and no token tail). The reply then ends with { windowAdmitted, slotsFree }:
// windowAdmitted = how many the windows alone would have admitted (the others were refused
// by a window; those between admitted and windowAdmitted by the cap).
// Returns  { admitted, retryAfterMs, nowMs, leaseGranted, leaseValidMs,
//            remaining_1, resetMs_1, oldestMs_1, remaining_2, ... }
//   leaseValidMs = until the earliest current bucket of the windows ends (a lease may only
//   be used until the end of the bucket it was counted in — before it too, for a renewal
//   ahead; given with or without a lease); the window figures describe the state
//   after the admitted requests and the lease were counted; oldestMs = when the oldest
//   counted bucket stops counting (0 if none), from which the caller derives each request's
//   own remaining / reset / recover (redis-rate-limiter.ts).
export const SLIDING_WINDOW_LUA = `
if redis.replicate_commands then redis.replicate_commands() end

local nowMs = tonumber(ARGV[1])
if not nowMs then
  local t = redis.call('TIME')
  nowMs = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local count = tonumber(ARGV[2])
local leaseWanted = tonumber(ARGV[3])
local leaseFromMs = nowMs
if not leaseWanted then
  local wanted, from = string.match(ARGV[3], '^(%d+):(%d+)$')
  leaseWanted = tonumber(wanted)
  leaseFromMs = tonumber(from)
end
local refundUnits = tonumber(ARGV[4])
local LEASE_SHARE = 16
local MAX_LEASE_AHEAD_MS = 1000
local hasTokens = false
local n = #KEYS
local slotKey = false
local slotStreams, slotLeaseMs, slotHead
local tokenTail = false
local tokenLeaseWanted, tokenRefund = 0, 0
if #ARGV == 4 * n + 3 then
  slotKey = KEYS[n]
  n = n - 1
  slotStreams = tonumber(ARGV[5 + 4 * n])
  slotLeaseMs = tonumber(ARGV[6 + 4 * n])
  slotHead = ARGV[7 + 4 * n]
elseif #ARGV == 4 * n + 6 then
  tokenTail = true
  tokenLeaseWanted = tonumber(ARGV[5 + 4 * n])
  tokenRefund = tonumber(ARGV[6 + 4 * n])
end
local limits, windowMsList, bucketMsList, tokenCharges, isTokenWindow = {}, {}, {}, {}, {}
local liveIndexes, liveCounts, totals, fresh = {}, {}, {}, {}
local admitted = count

for w = 1, n do
  local key = KEYS[w]
  local base = 5 + (w - 1) * 4
  local limit = tonumber(ARGV[base])
  local windowMs = tonumber(ARGV[base + 1])
  local bucketMs = tonumber(ARGV[base + 2])
  local refundBucket = tonumber(ARGV[base + 3])
  local isTokens = limit < 0
  local refund = refundUnits
  if isTokens then
    hasTokens = true
    isTokenWindow[w] = true
    limit = -limit
    if tokenTail then
      tokenCharges[w] = 0
      refund = tokenRefund
    else
      tokenCharges[w] = refundBucket
      refundBucket = -1
    end
  end
  limits[w], windowMsList[w], bucketMsList[w] = limit, windowMs, bucketMs

  -- A window whose length changed (config reload) starts over: old bucket indexes mean other times.
  local storedWidth = redis.call('HGET', key, 'bw')
  if storedWidth and tonumber(storedWidth) ~= bucketMs then
    redis.call('DEL', key)
    storedWidth = false
  end
  fresh[w] = not storedWidth

  local first = math.floor((nowMs - windowMs + 1) / bucketMs)
  -- Unused lease units (tokens, in a budget) leave the bucket they were counted in, if it still counts.
  if refund > 0 and storedWidth and refundBucket >= first then
    local field = string.format('%d', refundBucket)
    local counted = tonumber(redis.call('HGET', key, field))
    if counted then
      if counted <= refund then redis.call('HDEL', key, field)
      else redis.call('HINCRBY', key, field, -refund) end
    end
  end
  local flat = redis.call('HGETALL', key)
  local indexes, counts, stale = {}, {}, {}
  local total = 0
  for j = 1, #flat, 2 do
    local field = flat[j]
    if field ~= 'bw' then
      local index = tonumber(field)
      if index < first then
        stale[#stale + 1] = field
      else
        local count = tonumber(flat[j + 1])
        indexes[#indexes + 1] = index
        counts[index] = count
        total = total + count
      end
    end
  end
  if #stale > 0 then redis.call('HDEL', key, unpack(stale)) end
  table.sort(indexes)
  liveIndexes[w], liveCounts[w], totals[w] = indexes, counts, total
  if isTokens then
    if total >= limit then admitted = 0 end
  elseif limit - total < admitted then admitted = limit - total end
end
if admitted < 0 then admitted = 0 end
local windowAdmitted = admitted
local slotsFree = 0
if slotKey then
  redis.call('ZREMRANGEBYSCORE', slotKey, '-inf', nowMs)
  slotsFree = slotStreams - redis.call('ZCARD', slotKey)
  if slotsFree < admitted then admitted = slotsFree end
  if admitted < 0 then admitted = 0 end
end

local lease = 0
local tokenLease = 0
local leaseValidMs = 0
if admitted == count and leaseWanted > 0 and (tokenTail or not hasTokens) and not slotKey then
  lease = leaseWanted
  for w = 1, n do
    if not isTokenWindow[w] then
      local share = math.floor((limits[w] - totals[w] - admitted) / LEASE_SHARE)
      if share < lease then lease = share end
    end
  end
  if lease < 0 then lease = 0 end
  -- Beside a budget, units come only with tokens to spend: a nearly spent budget is decided call by call.
  if lease > 0 and hasTokens then
    tokenLease = tokenLeaseWanted
    for w = 1, n do
      if isTokenWindow[w] then
        local share = math.floor((limits[w] - totals[w]) / LEASE_SHARE)
        if share < tokenLease then tokenLease = share end
      end
    end
    if tokenLease < 1 then
      tokenLease = 0
      lease = 0
    end
  end
end
-- Where the lease is counted: now, or (a renewal ahead) at the end of the lease it replaces.
local leaseAtMs = nowMs
if lease > 0 and leaseFromMs > nowMs then leaseAtMs = math.min(leaseFromMs, nowMs + MAX_LEASE_AHEAD_MS) end
-- Also without a lease: the caller dates the subject's pace by it.
for w = 1, n do
  local bucketMs = bucketMsList[w]
  local left = (math.floor(leaseAtMs / bucketMs) + 1) * bucketMs - nowMs
  if w == 1 or left < leaseValidMs then leaseValidMs = left end
end

local result = { admitted, 0, nowMs, lease, leaseValidMs }
local retryAfterMs = 0

for w = 1, n do
  local key = KEYS[w]
  local limit, windowMs, bucketMs = limits[w], windowMsList[w], bucketMsList[w]
  local indexes, counts = liveIndexes[w], liveCounts[w]
  local total = totals[w]
  local nowUnits, leaseUnits = admitted, lease
  if isTokenWindow[w] then nowUnits, leaseUnits = tokenCharges[w], tokenLease end
  local current = math.floor(nowMs / bucketMs)
  local leaseBucket = math.floor(leaseAtMs / bucketMs)
  if leaseBucket == current then nowUnits, leaseUnits = nowUnits + leaseUnits, 0 end

  if nowUnits + leaseUnits > 0 then
    for part = 1, 2 do
      local index, units = current, nowUnits
      if part == 2 then index, units = leaseBucket, leaseUnits end
      if units > 0 then
        redis.call('HINCRBY', key, string.format('%d', index), units)
        if counts[index] then
          counts[index] = counts[index] + units
        else
          counts[index] = units
          indexes[#indexes + 1] = index
          table.sort(indexes)
        end
        total = total + units
      end
    end
    if fresh[w] then redis.call('HSET', key, 'bw', bucketMs) end
    -- Until the newest counted bucket stops counting (idle subjects then cost nothing). Taken
    -- from the newest bucket, not from now: a later call must not shorten the life of a
    -- bucket a renewed lease was counted ahead in.
    redis.call('PEXPIRE', key, (indexes[#indexes] + 1) * bucketMs + windowMs - nowMs)
  end

  local resetMs = 0
  local excess = total - limit + 1
  if excess > 0 then
    local removed = 0
    for i = 1, #indexes do
      removed = removed + counts[indexes[i]]
      if removed >= excess then
        resetMs = (indexes[i] + 1) * bucketMs + windowMs - 1 - nowMs
        break
      end
    end
  end
  if admitted < count and resetMs > retryAfterMs then retryAfterMs = resetMs end

  local remaining = limit - total
  if remaining < 0 then remaining = 0 end
  -- oldestMs: when the oldest counted bucket stops counting (the IETF header's t while quota remains).
  local oldestMs = 0
  if #indexes > 0 then oldestMs = (indexes[1] + 1) * bucketMs + windowMs - 1 - nowMs end
  result[#result + 1] = remaining
  result[#result + 1] = resetMs
  result[#result + 1] = oldestMs
end

result[2] = retryAfterMs
if slotKey then
  if admitted > 0 then
    local expiry = nowMs + slotLeaseMs
    local args = {}
    -- In chunks: unpack() is bounded by Lua's stack.
    for i = 0, admitted - 1 do
      args[#args + 1] = expiry
      args[#args + 1] = slotHead .. ':' .. i
      if #args >= 1000 or i == admitted - 1 then
        redis.call('ZADD', slotKey, unpack(args))
        args = {}
      end
    end
    -- Refreshed with the slots (redis-stream-slots.ts): idle subjects' sets then cost nothing.
    redis.call('PEXPIRE', slotKey, slotLeaseMs)
    slotsFree = slotsFree - admitted
  end
  result[#result + 1] = windowAdmitted
  result[#result + 1] = slotsFree
end
if tokenTail then result[#result + 1] = tokenLease end
return result
`;
