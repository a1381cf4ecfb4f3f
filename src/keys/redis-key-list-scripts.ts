// The Lua scripts that read pages of the Redis key store's indexes (redis-key-index.ts) and
// keep its time statuses current. A page is one script call: its work is bounded by the page
// size plus the scan budget, never by the number of keys. Versioned and reply-tagged like the
// store's other scripts (redis-key-scripts.ts).
import { luaFields, luaIndex, luaReply, positions, replyLayout } from '../redis/redis-operation.js';

export const KEY_LIST_SCRIPT = {
  page: 'agw_key_page_v1',
  sweep: 'agw_key_sweep_v1',
} as const;

/** page's reply head; then PAGE_ROW's values per row. state 'end': nothing after this page; 'more': the next starts after cursor. */
export const PAGE_REPLY = replyLayout('state', 'cursor');
/** One row of a page: the key's hash and its record's field/value pairs. */
export const PAGE_ROW = ['hash', 'fields'] as const;
export const PAGE_ROW_AT = positions(PAGE_ROW);
/** sweep's reply: how many keys it moved. */
export const SWEEP_REPLY = replyLayout('moved');

const pageHead = (state: string, cursor: string): string => `{ '${KEY_LIST_SCRIPT.page}', ${luaFields(PAGE_REPLY, { state, cursor })} }`;

// KEYS[1]: the all index (routing only). ARGV: key head, start bound (ZRANGE BYLEX: '-' or
// '(' .. member), limit, scan budget, lowercased name prefix ('' for none), a time in ms
// ('' for none: then keys whose expiry in ix:expiry is due by it do not match, so
// status:active is exact before the sweep has moved them), n, then n index keys that must
// all hold a member.
// Walks the smallest of those indexes (ZCARD is O(1)) in order and checks the others with
// ZSCORE, the name prefix with the record's name_lc. Returns PAGE_REPLY then PAGE_ROW per row:
// state 'end' (nothing after this page) or 'more' (the next page starts after the cursor
// member, which is the last row when the page filled, else the last entry looked at when the
// budget ran out).
export const LIST_PAGE_SCRIPT = `
local head = ARGV[1]
local start = ARGV[2]
local limit = tonumber(ARGV[3])
local budget = tonumber(ARGV[4]) + limit
local prefix = ARGV[5]
local notDueBy = tonumber(ARGV[6])
local n = tonumber(ARGV[7])
local walk, smallest = nil, nil
for j = 1, n do
  local card = redis.call('zcard', ARGV[7 + j])
  if smallest == nil or card < smallest then walk, smallest = ARGV[7 + j], card end
end
if smallest == 0 then return ${pageHead("'end'", "''")} end
local checks = {}
for j = 1, n do if ARGV[7 + j] ~= walk then checks[#checks + 1] = ARGV[7 + j] end end
local out = ${pageHead("'end'", "''")}
local STATE, CURSOR = ${luaIndex(PAGE_REPLY.at.state)}, ${luaIndex(PAGE_REPLY.at.cursor)}
local rows = 0
local scanned = 0
local lastRow = ''
while true do
  local want = math.min(budget - scanned, 200)
  if want <= 0 then
    out[STATE] = 'more'
    return out
  end
  local members = redis.call('zrange', walk, start, '+', 'BYLEX', 'LIMIT', 0, want)
  for _, member in ipairs(members) do
    scanned = scanned + 1
    out[CURSOR] = member
    local ok = true
    for _, check in ipairs(checks) do
      if not redis.call('zscore', check, member) then ok = false break end
    end
    if ok and notDueBy then
      local due = redis.call('zscore', head .. 'ix:expiry', member)
      ok = not due or tonumber(due) > notDueBy
    end
    local hash = false
    if ok then
      hash = redis.call('get', head .. 'keyid:' .. string.sub(member, 17))
      ok = hash ~= false
    end
    if ok and prefix ~= '' then
      local lowered = redis.call('hget', head .. 'key:' .. hash, 'name_lc') or ''
      ok = string.sub(lowered, 1, #prefix) == prefix
    end
    if ok then
      if rows == limit then
        out[STATE] = 'more'
        out[CURSOR] = lastRow
        return out
      end
      local fields = redis.call('hgetall', head .. 'key:' .. hash)
      if #fields > 0 then
        rows = rows + 1
        lastRow = member
        ${PAGE_ROW.map((field) => `out[#out + 1] = ${field}`).join('\n        ')}
      end
    end
  end
  if #members < want then return out end
  start = '(' .. members[#members]
end
`;

// KEYS[1]: the expiry index (routing only). Moves up to ARGV[3] keys whose expiry is due (score <= ARGV[2], ms) from status:active to
// status:expired, and into ix:expired:unannounced (score = expiry) for the expiry sweeper's
// key.expired, which drops what is older than ARGV[4] (ms) unannounced, so the set stays
// bounded when no gateway sends notifications. ARGV[1]: key head. Returns SWEEP_REPLY, how many moved:
// each key moves once, so the sweeps' total work is the number of keys that expire,
// however often they run.
export const SWEEP_SCRIPT = `
local head = ARGV[1]
local due = redis.call('zrangebyscore', head .. 'ix:expiry', '-inf', ARGV[2], 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[3]))
for i = 1, #due, 2 do
  local member = due[i]
  redis.call('zrem', head .. 'ix:status:active', member)
  redis.call('zadd', head .. 'ix:status:expired', 0, member)
  redis.call('zrem', head .. 'ix:expiry', member)
  redis.call('zadd', head .. 'ix:expired:unannounced', due[i + 1], member)
end
redis.call('zremrangebyscore', head .. 'ix:expired:unannounced', '-inf', '(' .. ARGV[4])
return ${luaReply(KEY_LIST_SCRIPT.sweep, SWEEP_REPLY, { moved: '#due / 2' })}
`;
