// The Redis side of window-math.ts: checks and counts every window of a group of requests
// of one subject in one atomic script. Keep the two in step; the equivalence tests in
// test/integration/ratelimit-redis.test.ts compare their decisions.
//
// KEYS[i]  one hash per window: field "bw" = bucket width, numeric fields = bucket index → count.
// ARGV[1]  nowMs override ("" → the server's TIME, so every gateway instance agrees on time)
// ARGV[2]  count: how many requests of this subject arrived together (the gateway coalesces
//          the requests of one event-loop turn). They are admitted in order, each only if it
//          fits every window, exactly as `count` one-by-one calls at the same instant would.
// ARGV[3 + 3(i-1) ..]  limit, windowMs, bucketMs of KEYS[i]
// Returns  { admitted, retryAfterMs, nowMs, remaining_1, resetMs_1, oldestMs_1, remaining_2, ... }
//   the window figures describe the state after the admitted requests were counted;
//   oldestMs = when the oldest counted bucket stops counting (0 if none), from which the
//   caller derives each request's own remaining / reset / recover (redis-rate-limiter.ts).
export const SLIDING_WINDOW_LUA = `
if redis.replicate_commands then redis.replicate_commands() end

local nowMs = tonumber(ARGV[1])
if not nowMs then
  local t = redis.call('TIME')
  nowMs = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local count = tonumber(ARGV[2])
local n = #KEYS
local limits, windowMsList, bucketMsList = {}, {}, {}
local liveIndexes, liveCounts, totals, fresh = {}, {}, {}, {}
local admitted = count

for w = 1, n do
  local key = KEYS[w]
  local base = 3 + (w - 1) * 3
  local limit = tonumber(ARGV[base])
  local windowMs = tonumber(ARGV[base + 1])
  local bucketMs = tonumber(ARGV[base + 2])
  limits[w], windowMsList[w], bucketMsList[w] = limit, windowMs, bucketMs

  -- A window whose length changed (config reload) starts over: old bucket indexes mean other times.
  local storedWidth = redis.call('HGET', key, 'bw')
  if storedWidth and tonumber(storedWidth) ~= bucketMs then
    redis.call('DEL', key)
    storedWidth = false
  end
  fresh[w] = not storedWidth

  local first = math.floor((nowMs - windowMs + 1) / bucketMs)
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
  if limit - total < admitted then admitted = limit - total end
end
if admitted < 0 then admitted = 0 end

local result = { admitted, 0, nowMs }
local retryAfterMs = 0

for w = 1, n do
  local key = KEYS[w]
  local limit, windowMs, bucketMs = limits[w], windowMsList[w], bucketMsList[w]
  local indexes, counts = liveIndexes[w], liveCounts[w]
  local total = totals[w]

  if admitted > 0 then
    local current = math.floor(nowMs / bucketMs)
    redis.call('HINCRBY', key, string.format('%d', current), admitted)
    if fresh[w] then redis.call('HSET', key, 'bw', bucketMs) end
    -- Long enough for the newest bucket to stop counting; idle subjects then cost nothing.
    redis.call('PEXPIRE', key, windowMs + bucketMs)
    if counts[current] then
      counts[current] = counts[current] + admitted
    else
      counts[current] = admitted
      indexes[#indexes + 1] = current
      table.sort(indexes)
    end
    total = total + admitted
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
return result
`;
