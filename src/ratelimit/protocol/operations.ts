// The limiter's named operations on Redis (docs/rate-limits.md "The limiter protocol"): one
// script per operation, each with a fixed argument shape, sent by EVALSHA under its name
// (ioredis re-sends the source on NOSCRIPT, so a flushed or restarted or failed-over Redis
// reloads them by itself; decision 0033). Every reply starts with the operation's versioned
// name, which its decoder (codec.ts) checks: a gateway never reads another version's reply.
// A change of behaviour or shape is a new version, a new name: two gateway versions on one
// Redis then run side by side, each its own scripts (their SHA1s differ).
//
// The Lua sources are built from the shared window math (lua-windows.ts), the layouts
// (layouts.ts: where each argument and reply field is, by name) and the operation's name, so a
// test can build the same operation under a later version's name. limiter-operations.ts joins
// each source with its encoder and decoder into one typed operation.
import { luaIndex, luaReply } from '../../redis/redis-operation.js';
import { LUA_WINDOWS } from './lua-windows.js';
import { ADMIT_AT, ADMIT_HEAD, CHARGE_AT, CHARGE_HEAD, DECISION_REPLY, DONE_REPLY, FIGURES_PER_WINDOW, REFUND_AT, REFUND_HEAD, RENEW_AT, RENEW_HEAD, SLOT_REFRESH_AT, SLOT_REFRESH_HEAD, SLOT_REFRESH_REPLY, WINDOW_ARGS, WINDOW_AT, luaArg } from './layouts.js';

/** Operations and their current versioned names (the reply tag each decoder expects). */
export const OPERATION = {
  // v2: a window of kind 2 (report-only) is read and reported, never refusing (decision 0065).
  // v3: kind 3, a cost budget, and a cost reserve beside the token one in a lease (decision 0076).
  admit: 'agw_admit_v3',
  // v2: a cost reserve beside the token one (decision 0076).
  // v3: a window of kind 2 (report-only) is read and reported, never counted, as in admit (decision 0117).
  renew: 'agw_renew_v3',
  // v2: an amount per window (tokens, micro-dollars, tool calls), not one figure for every budget.
  charge: 'agw_charge_v2',
  // v2: a cost reserve given back beside the tokens (decision 0076).
  // v3: a window of kind 2 (report-only) is left alone: no lease was counted in it (decision 0117).
  refund: 'agw_refund_v3',
  slotRefresh: 'agw_slot_refresh_v1',
} as const;

export type OperationKind = keyof typeof OPERATION;

const ADMIT_HEAD_ARGS = ADMIT_HEAD.length;
const RENEW_HEAD_ARGS = RENEW_HEAD.length;
const CHARGE_HEAD_ARGS = CHARGE_HEAD.length;
const REFUND_HEAD_ARGS = REFUND_HEAD.length;
const DECISION_REPLY_HEAD = DECISION_REPLY.length;


/**
 * admit (v3): KEYS = the windows' hashes, then the slot set when slotStreams > 0.
 * ARGV = ADMIT_HEAD (nowMs "": server TIME; slotStreams 0: no slot), then WINDOW_VALUES per
 * window. Reply: the tag, DECISION_REPLY's fields, then WINDOW_FIGURES per window (after the
 * admitted and the lease were counted).
 * A window of kind 2 is left out of the decision (admitCore never sees it) and only read for its
 * figures, which take its place in the reply.
 */
export function admitLua(tag: string = OPERATION.admit): string {
  return `${LUA_WINDOWS}${reportsApart(ADMIT_HEAD_ARGS)}
local slot = false
local streams = tonumber(${luaArg(ADMIT_AT.slotStreams)})
if streams > 0 then slot = { key = KEYS[#all + 1], streams = streams, leaseMs = tonumber(${luaArg(ADMIT_AT.slotLeaseMs)}), head = ${luaArg(ADMIT_AT.slotHead)} } end
local core = admitCore('${tag}', { nowMs = serverNow(${luaArg(ADMIT_AT.nowMs)}), wins = wins, count = tonumber(${luaArg(ADMIT_AT.count)}),
  leaseWanted = tonumber(${luaArg(ADMIT_AT.leaseUnits)}), tokenLeaseWanted = tonumber(${luaArg(ADMIT_AT.leaseTokens)}),
  costLeaseWanted = tonumber(${luaArg(ADMIT_AT.leaseCost)}), leaseFromMs = 0, refundUnits = tonumber(${luaArg(ADMIT_AT.refundUnits)}),
  refundTokens = tonumber(${luaArg(ADMIT_AT.refundTokens)}), refundCost = tonumber(${luaArg(ADMIT_AT.refundCost)}), slot = slot })
${reportsBack()}`;
}

/**
 * The windows from ARGV after `head` values, kind-2 (report-only) windows set apart: `all`
 * every window by its place, `wins` the others (what admitCore decides and counts), `reports`
 * and `isReport` the report-only ones.
 */
function reportsApart(head: number): string {
  return `
local all, wins, reports, isReport = {}, {}, {}, {}
for k = 1, (#ARGV - ${head}) / ${WINDOW_ARGS} do
  local a = ${head + 1} + (k - 1) * ${WINDOW_ARGS}
  all[k] = windowAt(k, a)
  if ${luaArg(WINDOW_AT.kind, 'a')} == '2' then
    isReport[k] = true
    reports[#reports + 1] = all[k]
  else
    wins[#wins + 1] = all[k]
  end
end`;
}

/** Returns admitCore's reply (`core`) with each report-only window's figures, read now, in its place. */
function reportsBack(): string {
  return `if #reports == 0 then return core end
local nowMs = core[${luaIndex(DECISION_REPLY.at.nowMs)}]
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
    for f = 1, ${FIGURES_PER_WINDOW} do reply[#reply + 1] = core[at + f] end
  end
end
return reply
`;
}

/**
 * renew (v3): the next lease of a subject, no request admitted (decision 0029). KEYS = the
 * windows. ARGV = RENEW_HEAD (cost in micro-dollars; leaseFromMs 0: count it now, else at the
 * end of the lease it replaces), then WINDOW_VALUES per window. Reply: admit's. A window of
 * kind 2 is set apart as admit sets it: the lease is never counted in it (v2 counted it).
 */
export function renewLua(tag: string = OPERATION.renew): string {
  return `${LUA_WINDOWS}${reportsApart(RENEW_HEAD_ARGS)}
local core = admitCore('${tag}', { nowMs = serverNow(''), wins = wins, count = 0,
  leaseWanted = tonumber(${luaArg(RENEW_AT.units)}), tokenLeaseWanted = tonumber(${luaArg(RENEW_AT.tokens)}), costLeaseWanted = tonumber(${luaArg(RENEW_AT.cost)}),
  leaseFromMs = tonumber(${luaArg(RENEW_AT.leaseFromMs)}), refundUnits = 0, refundTokens = 0, refundCost = 0, slot = false })
${reportsBack()}`;
}

/**
 * charge (v2): an answer's units, after the answer, each budget its own amount (tokens to a
 * token budget, micro-dollars to a cost budget, calls to a tool's quota). KEYS = the budgets
 * charged. ARGV = CHARGE_HEAD (nowMs "": server TIME), then WINDOW_VALUES per budget, then one
 * amount per budget. Reply: the tag, DONE_REPLY's fields.
 */
export function chargeLua(tag: string = OPERATION.charge): string {
  return `${LUA_WINDOWS}
local n = #KEYS
local nowMs = serverNow(${luaArg(CHARGE_AT.nowMs)})
for w = 1, n do
  local win = windowAt(w, ${CHARGE_HEAD_ARGS + 1} + (w - 1) * ${WINDOW_ARGS})
  local units = tonumber(ARGV[${CHARGE_HEAD_ARGS + 1} + n * ${WINDOW_ARGS} + w - 1])
  loadWindow(win, nowMs, 0)
  if units > 0 then
    countIn(win, math.floor(nowMs / win.bucketMs), units)
    touch(win, nowMs)
  end
end
return ${luaReply(tag, DONE_REPLY, { nowMs: 'nowMs' })}
`;
}

/**
 * refund (v3): a lease's unused units (tokens, micro-dollars) back to the buckets they were
 * counted in, if those still count. KEYS = the windows. ARGV = REFUND_HEAD (nowMs "": server
 * TIME), then WINDOW_VALUES per window. Reply: the tag, DONE_REPLY's fields. A window of kind 2
 * is left alone: no lease was counted in it (v2 gave units back to it).
 */
export function refundLua(tag: string = OPERATION.refund): string {
  return `${LUA_WINDOWS}${reportsApart(REFUND_HEAD_ARGS)}
local nowMs = serverNow(${luaArg(REFUND_AT.nowMs)})
local units, tokens, cost = tonumber(${luaArg(REFUND_AT.units)}), tonumber(${luaArg(REFUND_AT.tokens)}), tonumber(${luaArg(REFUND_AT.cost)})
for w = 1, #wins do
  local win = wins[w]
  if win.cost then loadWindow(win, nowMs, cost)
  elseif win.tokens then loadWindow(win, nowMs, tokens)
  else loadWindow(win, nowMs, units) end
end
return ${luaReply(tag, DONE_REPLY, { nowMs: 'nowMs' })}
`;
}

/**
 * slotRefresh: keeps this instance's stream slots alive (redis-stream-slots.ts). KEYS[1] =
 * the subject's slot set; ARGV = SLOT_REFRESH_HEAD (leaseMs), then the members. XX: a slot already expired (or
 * released) stays gone. Server TIME, as admit uses, so every instance dates slots alike.
 * Reply: the tag alone (SLOT_REFRESH_REPLY). (Releasing a slot is one ZREM, atomic on its own: no script.)
 */
export function slotRefreshLua(tag: string = OPERATION.slotRefresh): string {
  return `
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local leaseMs = ${luaArg(SLOT_REFRESH_AT.leaseMs)}
local expiry = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(leaseMs)
local args = { 'XX' }
for i = ${SLOT_REFRESH_HEAD.length + 1}, #ARGV do
  args[#args + 1] = expiry
  args[#args + 1] = ARGV[i]
  if #args >= 1001 or i == #ARGV then
    redis.call('ZADD', KEYS[1], unpack(args))
    args = { 'XX' }
  end
end
redis.call('PEXPIRE', KEYS[1], leaseMs)
return ${luaReply(tag, SLOT_REFRESH_REPLY, {})}
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
