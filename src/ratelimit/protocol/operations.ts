// The limiter's named operations on Redis (docs/rate-limits.md "The limiter protocol"): one
// script per operation, each with a fixed argument shape, sent by EVALSHA under its name
// (ioredis re-sends the source on NOSCRIPT, so a flushed or restarted or failed-over Redis
// reloads them by itself; decision 0033). Every reply starts with the operation's versioned
// name, which its decoder (codec.ts) checks: a gateway never reads another version's reply.
// A change of behaviour or shape is a new version, a new name: two gateway versions on one
// Redis then run side by side, each its own scripts (their SHA1s differ).
//
// The Lua sources are built from the shared window math (lua-windows.ts) and the operation's
// name, so a test can build the same operation under a later version's name.
import { LUA_WINDOWS } from './lua-windows.js';

/** Operations and their current versioned names (the reply tag each decoder expects). */
export const OPERATION = {
  // v2: a window of kind 2 (report-only) is read and reported, never refusing (decision 0065).
  // v3: kind 3, a cost budget, and a cost reserve beside the token one in a lease (decision 0076).
  admit: 'agw_admit_v3',
  // v2: a cost reserve beside the token one (decision 0076).
  renew: 'agw_renew_v2',
  // v2: an amount per window (tokens, micro-dollars, tool calls), not one figure for every budget.
  charge: 'agw_charge_v2',
  // v2: a cost reserve given back beside the tokens (decision 0076).
  refund: 'agw_refund_v2',
  slotRefresh: 'agw_slot_refresh_v1',
} as const;

export type OperationKind = keyof typeof OPERATION;

/**
 * ARGV values per window: limit, windowMs, bucketMs, refundBucket (-1: none), kind (0 requests,
 * 1 a budget: tokens or a tool's calls; 2 a report-only budget, admit only; 3 a cost budget,
 * whose lease reserve is the cost one).
 */
export const WINDOW_ARGS = 5;
/** ARGV before the windows' values, per operation. */
export const ADMIT_HEAD_ARGS = 11;
export const RENEW_HEAD_ARGS = 4;
export const CHARGE_HEAD_ARGS = 1;
export const REFUND_HEAD_ARGS = 4;
/** Reply fields before the windows' figures (admit and renew). */
export const DECISION_REPLY_HEAD = 10;
/** Reply figures per window: remaining, resetMs, oldestMs. */
export const FIGURES_PER_WINDOW = 3;

function windowsFrom(head: number): string {
  return `
local wins = {}
for k = 1, (#ARGV - ${head}) / ${WINDOW_ARGS} do wins[k] = windowAt(k, ${head + 1} + (k - 1) * ${WINDOW_ARGS}) end
`;
}

/**
 * admit (v3): KEYS = the windows' hashes, then the slot set when slotStreams > 0.
 * ARGV = nowMs ("": server TIME), count, leaseUnits, leaseTokens, leaseCost, refundUnits,
 * refundTokens, refundCost, slotStreams (0: no slot), slotLeaseMs, slotHead, then WINDOW_ARGS
 * per window. Reply: tag, admitted, retryAfterMs, nowMs, lease, tokenLease, leaseValidMs,
 * windowAdmitted, slotsFree, costLease, then remaining, resetMs, oldestMs per window (after
 * the admitted and the lease were counted).
 * A window of kind 2 is left out of the decision (admitCore never sees it) and only read for its
 * figures, which take its place in the reply.
 */
export function admitLua(tag: string = OPERATION.admit): string {
  return `${LUA_WINDOWS}
local all, wins, reports, isReport = {}, {}, {}, {}
for k = 1, (#ARGV - ${ADMIT_HEAD_ARGS}) / ${WINDOW_ARGS} do
  local a = ${ADMIT_HEAD_ARGS + 1} + (k - 1) * ${WINDOW_ARGS}
  all[k] = windowAt(k, a)
  if ARGV[a + 4] == '2' then
    isReport[k] = true
    reports[#reports + 1] = all[k]
  else
    wins[#wins + 1] = all[k]
  end
end
local slot = false
local streams = tonumber(ARGV[9])
if streams > 0 then slot = { key = KEYS[#all + 1], streams = streams, leaseMs = tonumber(ARGV[10]), head = ARGV[11] } end
local core = admitCore('${tag}', { nowMs = serverNow(ARGV[1]), wins = wins, count = tonumber(ARGV[2]),
  leaseWanted = tonumber(ARGV[3]), tokenLeaseWanted = tonumber(ARGV[4]), costLeaseWanted = tonumber(ARGV[5]), leaseFromMs = 0,
  refundUnits = tonumber(ARGV[6]), refundTokens = tonumber(ARGV[7]), refundCost = tonumber(ARGV[8]), slot = slot })
if #reports == 0 then return core end
local nowMs = core[4]
local reply = {}
for i = 1, ${DECISION_REPLY_HEAD} do reply[i] = core[i] end
local w, r = 0, 0
for k = 1, #all do
  if isReport[k] then
    r = r + 1
    loadWindow(reports[r], nowMs, 0)
    figures(reports[r], nowMs, reply)
  else
    local at = ${DECISION_REPLY_HEAD} + w * ${FIGURES_PER_WINDOW}
    w = w + 1
    reply[#reply + 1] = core[at + 1]
    reply[#reply + 1] = core[at + 2]
    reply[#reply + 1] = core[at + 3]
  end
end
return reply
`;
}

/**
 * renew (v2): the next lease of a subject, no request admitted (decision 0029). KEYS = the
 * windows. ARGV = units, tokens, cost (micro-dollars), leaseFromMs (0: count it now; else at
 * the end of the lease it replaces), then WINDOW_ARGS per window. Reply: admit's.
 */
export function renewLua(tag: string = OPERATION.renew): string {
  return `${LUA_WINDOWS}${windowsFrom(RENEW_HEAD_ARGS)}
return admitCore('${tag}', { nowMs = serverNow(''), wins = wins, count = 0,
  leaseWanted = tonumber(ARGV[1]), tokenLeaseWanted = tonumber(ARGV[2]), costLeaseWanted = tonumber(ARGV[3]),
  leaseFromMs = tonumber(ARGV[4]), refundUnits = 0, refundTokens = 0, refundCost = 0, slot = false })
`;
}

/**
 * charge (v2): an answer's units, after the answer, each budget its own amount (tokens to a
 * token budget, micro-dollars to a cost budget, calls to a tool's quota). KEYS = the budgets
 * charged. ARGV = nowMs ("": server TIME), then WINDOW_ARGS per budget, then one amount per
 * budget. Reply: tag, nowMs.
 */
export function chargeLua(tag: string = OPERATION.charge): string {
  return `${LUA_WINDOWS}
local n = #KEYS
local nowMs = serverNow(ARGV[1])
for w = 1, n do
  local win = windowAt(w, ${CHARGE_HEAD_ARGS + 1} + (w - 1) * ${WINDOW_ARGS})
  local units = tonumber(ARGV[${CHARGE_HEAD_ARGS + 1} + n * ${WINDOW_ARGS} + w - 1])
  loadWindow(win, nowMs, 0)
  if units > 0 then
    countIn(win, math.floor(nowMs / win.bucketMs), units)
    touch(win, nowMs)
  end
end
return { '${tag}', nowMs }
`;
}

/**
 * refund (v2): a lease's unused units (tokens, micro-dollars) back to the buckets they were
 * counted in, if those still count. KEYS = the windows. ARGV = nowMs ("": server TIME), units,
 * tokens, cost, then WINDOW_ARGS per window. Reply: tag, nowMs.
 */
export function refundLua(tag: string = OPERATION.refund): string {
  return `${LUA_WINDOWS}${windowsFrom(REFUND_HEAD_ARGS)}
local nowMs = serverNow(ARGV[1])
local units, tokens, cost = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
for w = 1, #wins do
  local win = wins[w]
  if win.cost then loadWindow(win, nowMs, cost)
  elseif win.tokens then loadWindow(win, nowMs, tokens)
  else loadWindow(win, nowMs, units) end
end
return { '${tag}', nowMs }
`;
}

/**
 * slotRefresh: keeps this instance's stream slots alive (redis-stream-slots.ts). KEYS[1] =
 * the subject's slot set; ARGV = leaseMs, then the members. XX: a slot already expired (or
 * released) stays gone. Server TIME, as admit uses, so every instance dates slots alike.
 * Reply: tag. (Releasing a slot is one ZREM, atomic on its own: no script.)
 */
export function slotRefreshLua(tag: string = OPERATION.slotRefresh): string {
  return `
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local expiry = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[1])
local args = { 'XX' }
for i = 2, #ARGV do
  args[#args + 1] = expiry
  args[#args + 1] = ARGV[i]
  if #args >= 1001 or i == #ARGV then
    redis.call('ZADD', KEYS[1], unpack(args))
    args = { 'XX' }
  end
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return { '${tag}' }
`;
}

/** Every operation's current source, by kind (what a client registers). */
export const OPERATION_SOURCES: Record<OperationKind, string> = {
  admit: admitLua(),
  renew: renewLua(),
  charge: chargeLua(),
  refund: refundLua(),
  slotRefresh: slotRefreshLua(),
};
