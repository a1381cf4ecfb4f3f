// Lua shared by the limiter's operations (operations.ts): the window math of window-math.ts,
// ported line by line, so the memory and Redis limiters take the same decisions (the
// equivalence tests in test/integration/ratelimit-redis.test.ts compare them). Each
// operation's script is this prelude plus its own argument parsing and reply, so the math is
// written once and every script stays a fixed-shape operation (docs/rate-limits.md
// "The limiter protocol").
//
// A window is a table { key, limit, windowMs, bucketMs, refundBucket, tokens }; loadWindow
// adds its live buckets (indexes ascending, counts by index, total) and whether its hash was
// new. A window's hash: field "bw" = bucket width, numeric fields = bucket index -> count.
import { luaFields, luaIndex } from '../../redis/redis-operation.js';
import { DECISION_REPLY, WINDOW_AT, WINDOW_FIGURES, luaArg } from './layouts.js';

/**
 * How far ahead of the server's now a renewal may count the next lease (the renew operation
 * clamps leaseFromMs to it; rate-limit-leases.ts sizes renewals by it).
 */
export const MAX_LEASE_AHEAD_MS = 1_000;

export const LUA_WINDOWS = `
if redis.replicate_commands then redis.replicate_commands() end
local LEASE_SHARE = 16
local MAX_LEASE_AHEAD_MS = ${MAX_LEASE_AHEAD_MS}

-- "" (or nothing): the server's TIME, so every gateway instance agrees on time.
local function serverNow(arg)
  local nowMs = tonumber(arg)
  if nowMs then return nowMs end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- The window at KEYS[k] from its WINDOW_VALUES (layouts.ts) at ARGV[a...]: limit, windowMs, bucketMs,
-- refundBucket (-1: none), kind (0 requests; 1 a budget; 3 a cost budget, whose lease reserve is the
-- cost one; 2 is admit's own). "tokens" marks every budget (read at admission, charged after); "cost"
-- picks the cost reserve.
local function windowAt(k, a)
  local kind = ${luaArg(WINDOW_AT.kind, 'a')}
  return { key = KEYS[k], limit = tonumber(${luaArg(WINDOW_AT.limit, 'a')}), windowMs = tonumber(${luaArg(WINDOW_AT.windowMs, 'a')}),
    bucketMs = tonumber(${luaArg(WINDOW_AT.bucketMs, 'a')}), refundBucket = tonumber(${luaArg(WINDOW_AT.refundBucket, 'a')}),
    tokens = kind == '1' or kind == '3', cost = kind == '3' }
end

-- Reads a window's live buckets at nowMs, first giving back refund units counted in its refundBucket.
local function loadWindow(win, nowMs, refund)
  local key, windowMs, bucketMs = win.key, win.windowMs, win.bucketMs
  -- A window whose length changed (config reload) starts over: old bucket indexes mean other times.
  local storedWidth = redis.call('HGET', key, 'bw')
  if storedWidth and tonumber(storedWidth) ~= bucketMs then
    redis.call('DEL', key)
    storedWidth = false
  end
  win.fresh = not storedWidth
  local first = math.floor((nowMs - windowMs + 1) / bucketMs)
  -- Unused lease units (tokens, in a budget) leave the bucket they were counted in, if it still counts.
  if refund > 0 and storedWidth and win.refundBucket >= first then
    local field = string.format('%d', win.refundBucket)
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
  win.indexes, win.counts, win.total = indexes, counts, total
end

-- Counts units in bucket index of a loaded window.
local function countIn(win, index, units)
  redis.call('HINCRBY', win.key, string.format('%d', index), units)
  local counts, indexes = win.counts, win.indexes
  if counts[index] then
    counts[index] = counts[index] + units
  else
    counts[index] = units
    indexes[#indexes + 1] = index
    table.sort(indexes)
  end
  win.total = win.total + units
end

-- After counting: the width mark on a new hash, and a life until the newest counted bucket stops
-- counting (idle subjects then cost nothing). Taken from the newest bucket, not from now: a later
-- call must not shorten the life of a bucket a renewed lease was counted ahead in.
local function touch(win, nowMs)
  if win.fresh then redis.call('HSET', win.key, 'bw', win.bucketMs) end
  redis.call('PEXPIRE', win.key, (win.indexes[#win.indexes] + 1) * win.bucketMs + win.windowMs - nowMs)
end

-- Appends a loaded window's WINDOW_FIGURES (layouts.ts: remaining, resetMs, oldestMs) to reply; returns resetMs.
-- oldestMs: when the oldest counted bucket stops counting (the IETF header's t while quota remains).
local function figures(win, nowMs, reply)
  local indexes, counts, bucketMs, windowMs = win.indexes, win.counts, win.bucketMs, win.windowMs
  local resetMs = 0
  local excess = win.total - win.limit + 1
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
  local remaining = win.limit - win.total
  if remaining < 0 then remaining = 0 end
  local oldestMs = 0
  if #indexes > 0 then oldestMs = (indexes[1] + 1) * bucketMs + windowMs - 1 - nowMs end
  ${WINDOW_FIGURES.map((figure) => `reply[#reply + 1] = ${figure}`).join('\n  ')}
  return resetMs
end

-- A lease's reserve of one kind of budget (cost or not): what was wanted, at most 1/LEASE_SHARE of
-- what each such budget has left.
local function reserveOf(wins, cost, wanted)
  local reserve = wanted
  for w = 1, #wins do
    local win = wins[w]
    if win.tokens and win.cost == cost then
      local share = math.floor((win.limit - win.total) / LEASE_SHARE)
      if share < reserve then reserve = share end
    end
  end
  return reserve
end

-- The admission of count requests of one subject (coalesced: admitted in order, each only if it fits
-- every window, as count one-by-one calls at the same instant would), with a lease (and, beside
-- budgets, its token and cost reserves) and a stream slot. Budgets are read-only here: they admit
-- every request while they have a unit left, none otherwise. Returns the reply: the tag, DECISION_REPLY's
-- fields (layouts.ts), then the figures per window.
-- p: nowMs, wins, count, leaseWanted, tokenLeaseWanted, costLeaseWanted, leaseFromMs, refundUnits,
-- refundTokens, refundCost, slot (slot: false, or { key, streams, leaseMs, head }).
-- Each reserve is the least of its budgets' shares: a lease beside budgets is granted only with
-- a unit of every reserve its windows need (decisions 0026 and 0076).
local function admitCore(tag, p)
  local nowMs, wins, count, slot = p.nowMs, p.wins, p.count, p.slot
  local n = #wins
  local admitted = count
  local hasTokens, hasCost = false, false
  for w = 1, n do
    local win = wins[w]
    if win.tokens then
      if win.cost then
        hasCost = true
        loadWindow(win, nowMs, p.refundCost or 0)
      else
        hasTokens = true
        loadWindow(win, nowMs, p.refundTokens)
      end
      if win.total >= win.limit then admitted = 0 end
    else
      loadWindow(win, nowMs, p.refundUnits)
      if win.limit - win.total < admitted then admitted = win.limit - win.total end
    end
  end
  if admitted < 0 then admitted = 0 end
  local windowAdmitted = admitted
  local slotsFree = 0
  if slot then
    -- Expired slots (their holder stopped refreshing) go first.
    redis.call('ZREMRANGEBYSCORE', slot.key, '-inf', nowMs)
    slotsFree = slot.streams - redis.call('ZCARD', slot.key)
    if slotsFree < admitted then admitted = slotsFree end
    if admitted < 0 then admitted = 0 end
  end

  -- A lease: granted only when all count were admitted, never beside a slot, and never more than
  -- 1/LEASE_SHARE of what every window has left, so a nearly spent quota is decided request by request.
  local lease, tokenLease, costLease, leaseValidMs = 0, 0, 0, 0
  if admitted == count and p.leaseWanted > 0 and not slot then
    lease = p.leaseWanted
    for w = 1, n do
      local win = wins[w]
      if not win.tokens then
        local share = math.floor((win.limit - win.total - admitted) / LEASE_SHARE)
        if share < lease then lease = share end
      end
    end
    if lease < 0 then lease = 0 end
    -- Beside a budget, units come only with its units to spend: a nearly spent budget is decided call by call.
    if lease > 0 and hasTokens then tokenLease = reserveOf(wins, false, p.tokenLeaseWanted) end
    if lease > 0 and hasCost then costLease = reserveOf(wins, true, p.costLeaseWanted or 0) end
    if (hasTokens and tokenLease < 1) or (hasCost and costLease < 1) then
      lease, tokenLease, costLease = 0, 0, 0
    end
  end
  -- Where the lease is counted: now, or (a renewal ahead) at the end of the lease it replaces,
  -- clamped to [nowMs, nowMs + MAX_LEASE_AHEAD_MS]. A unit counted in a later bucket than the one
  -- it is used in counts longer, never less, so every window bound holds.
  local leaseAtMs = nowMs
  if lease > 0 and p.leaseFromMs > nowMs then leaseAtMs = math.min(p.leaseFromMs, nowMs + MAX_LEASE_AHEAD_MS) end
  -- Until the earliest lease bucket ends; also without a lease: the caller dates the subject's pace by it.
  for w = 1, n do
    local bucketMs = wins[w].bucketMs
    local left = (math.floor(leaseAtMs / bucketMs) + 1) * bucketMs - nowMs
    if w == 1 or left < leaseValidMs then leaseValidMs = left end
  end

  local reply = { tag, ${luaFields(DECISION_REPLY, { admitted: 'admitted', retryAfterMs: '0', nowMs: 'nowMs', leaseUnits: 'lease', leaseTokens: 'tokenLease', leaseValidMs: 'leaseValidMs', windowAdmitted: 'windowAdmitted', slotsFree: '0', leaseCost: 'costLease' })} }
  local retryAfterMs = 0
  for w = 1, n do
    local win = wins[w]
    local nowUnits, leaseUnits = admitted, lease
    if win.cost then nowUnits, leaseUnits = 0, costLease
    elseif win.tokens then nowUnits, leaseUnits = 0, tokenLease end
    local current = math.floor(nowMs / win.bucketMs)
    local leaseBucket = math.floor(leaseAtMs / win.bucketMs)
    if leaseBucket == current then nowUnits, leaseUnits = nowUnits + leaseUnits, 0 end
    if nowUnits + leaseUnits > 0 then
      if nowUnits > 0 then countIn(win, current, nowUnits) end
      if leaseUnits > 0 then countIn(win, leaseBucket, leaseUnits) end
      touch(win, nowMs)
    end
    local resetMs = figures(win, nowMs, reply)
    if admitted < count and resetMs > retryAfterMs then retryAfterMs = resetMs end
  end
  reply[${luaIndex(DECISION_REPLY.at.retryAfterMs)}] = retryAfterMs

  if slot and admitted > 0 then
    local expiry = nowMs + slot.leaseMs
    local args = {}
    -- In chunks: unpack() is bounded by Lua's stack.
    for i = 0, admitted - 1 do
      args[#args + 1] = expiry
      args[#args + 1] = slot.head .. ':' .. i
      if #args >= 1000 or i == admitted - 1 then
        redis.call('ZADD', slot.key, unpack(args))
        args = {}
      end
    end
    -- Refreshed with the slots (redis-stream-slots.ts): idle subjects' sets then cost nothing.
    redis.call('PEXPIRE', slot.key, slot.leaseMs)
    slotsFree = slotsFree - admitted
  end
  reply[${luaIndex(DECISION_REPLY.at.slotsFree)}] = slotsFree
  return reply
end
`;
