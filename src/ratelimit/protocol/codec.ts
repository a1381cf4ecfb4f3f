// One encoder and one typed decoder per limiter operation (requests.ts has their types,
// layouts.ts the one definition of where each argument and reply field is). An encoder lays a
// typed request out as the operation's [numKeys, ...KEYS, ...ARGV], by the layout's names; a
// decoder reads the reply by the same names and refuses any reply that is not exactly the
// shape of its operation's version (wrong tag, wrong length, a non-integer field) with a
// RateLimitProtocolError: a RateLimitStoreError, so the failover policy treats it as the store
// failing, and counted as agentgw_redis_errors_total{op="ratelimit_protocol"}.
import { metrics } from '../../metrics/metrics.js';
import { TAG_POSITION } from '../../redis/redis-operation.js';
import { scopeKeyPart, type RateWindow, type ScopeKeys } from '../rate-limiter.js';
import { RateLimitStoreError } from '../rate-limit-store-error.js';
import { bucketWidthMs } from '../window-math.js';
import { OPERATION } from './operations.js';
import {
  ADMIT_AT,
  ADMIT_HEAD,
  CHARGE_AT,
  CHARGE_HEAD,
  DECISION_REPLY,
  DONE_REPLY,
  FIGURE_AT,
  FIGURES_PER_WINDOW,
  REFUND_AT,
  REFUND_HEAD,
  RENEW_AT,
  RENEW_HEAD,
  SLOT_REFRESH_AT,
  SLOT_REFRESH_REPLY,
  WINDOW_ARGS,
  WINDOW_AT,
} from './layouts.js';
import type { AdmitRequest, ChargeRequest, DecisionReply, DoneReply, KeyHead, RefundRequest, RenewRequest } from './requests.js';

export type { AdmitRequest, ChargeRequest, DecisionReply, DoneReply, KeyHead, RefundArgs, RefundRequest, RenewRequest, SlotArgs } from './requests.js';

/** A reply that is not its operation's, or not of its version. */
export class RateLimitProtocolError extends RateLimitStoreError {
  constructor(readonly operation: string, reply: unknown) {
    // Bounded: a hostile or broken server must not fill the logs.
    super(`rate-limit operation ${operation} returned an unexpected reply: ${JSON.stringify(reply)?.slice(0, 200)}`);
    this.name = 'RateLimitProtocolError';
  }
}

/** What the Lua reads of a limit's kind: 0 counted at admission (requests, a tool quota admitting a call), 1 a budget (tokens, a tool's calls), 2 a report-only budget, 3 a cost budget. */
function wireKind(window: RateWindow): number {
  switch (window.kind) {
    case 'requests':
      return 0;
    case 'tokens':
      return 1;
    case 'cost':
      return 3;
    case 'tool_calls':
      return window.use === 'report' ? 2 : window.use === 'admit' ? 0 : 1;
  }
}

/** The window wire encoding, the only one: its WINDOW_VALUES in ARGV from `at`. */
function putWindow(args: Array<string | number>, at: number, window: RateWindow, refundBucket: number): void {
  args[at + WINDOW_AT.limit] = window.limit;
  args[at + WINDOW_AT.windowMs] = window.windowMs;
  args[at + WINDOW_AT.bucketMs] = bucketWidthMs(window.windowMs);
  args[at + WINDOW_AT.refundBucket] = refundBucket;
  args[at + WINDOW_AT.kind] = wireKind(window);
}

/** [numKeys, keys..., head ARGV (left for the caller)..., WINDOW_ARGS per window]; returns the array. */
function windowsCall(keyHead: KeyHead, windows: readonly RateWindow[], extraKeys: number, headArgs: number, buckets: readonly number[] | undefined, scopes?: ScopeKeys): Array<string | number> {
  const n = windows.length;
  const numKeys = n + extraKeys;
  const args: Array<string | number> = new Array(1 + numKeys + headArgs + WINDOW_ARGS * n);
  args[0] = numKeys;
  const argv = 1 + numKeys + headArgs;
  for (let i = 0; i < n; i += 1) {
    const window = windows[i] as RateWindow;
    // A nested scope's window without its instance throws (scopeKeyPart): counted under the
    // subject's own name it would merge every end user (session) into one.
    args[1 + i] = window.scope === 'subject' && scopes === undefined ? keyHead + window.name : keyHead + scopeKeyPart(window.scope, scopes) + window.name;
    putWindow(args, argv + WINDOW_ARGS * i, window, buckets === undefined ? -1 : (buckets[i] as number));
  }
  return args;
}

export function encodeAdmit(request: AdmitRequest): Array<string | number> {
  const { refund, slot, windows } = request;
  const args = windowsCall(request.keyHead, windows, slot === undefined ? 0 : 1, ADMIT_HEAD.length, refund?.buckets, request.scopes);
  let at = 1 + windows.length;
  if (slot !== undefined) args[at++] = slot.key;
  args[at + ADMIT_AT.nowMs] = request.nowMs;
  args[at + ADMIT_AT.count] = request.count;
  args[at + ADMIT_AT.leaseUnits] = request.leaseUnits;
  args[at + ADMIT_AT.leaseTokens] = request.leaseTokens;
  args[at + ADMIT_AT.leaseCost] = request.leaseCost ?? 0;
  args[at + ADMIT_AT.refundUnits] = refund === undefined ? 0 : refund.units;
  args[at + ADMIT_AT.refundTokens] = refund?.tokens ?? 0;
  args[at + ADMIT_AT.refundCost] = refund?.cost ?? 0;
  args[at + ADMIT_AT.slotStreams] = slot === undefined ? 0 : slot.streams;
  args[at + ADMIT_AT.slotLeaseMs] = slot === undefined ? 0 : slot.leaseMs;
  args[at + ADMIT_AT.slotHead] = slot === undefined ? '' : slot.memberHead;
  return args;
}

export function encodeRenew(request: RenewRequest): Array<string | number> {
  const args = windowsCall(request.keyHead, request.windows, 0, RENEW_HEAD.length, undefined, request.scopes);
  const at = 1 + request.windows.length;
  args[at + RENEW_AT.units] = request.units;
  args[at + RENEW_AT.tokens] = request.tokens;
  args[at + RENEW_AT.cost] = request.cost ?? 0;
  args[at + RENEW_AT.leaseFromMs] = Math.floor(request.leaseFromMs);
  return args;
}

/** undefined when no window has an amount to charge: nothing to send. */
export function encodeCharge(request: ChargeRequest): Array<string | number> | undefined {
  const { windows, amounts } = request;
  const charged: RateWindow[] = [];
  const units: number[] = [];
  for (let i = 0; i < windows.length; i += 1) {
    const amount = amounts[i] as number;
    if (!(amount > 0)) continue;
    charged.push(windows[i] as RateWindow);
    units.push(Math.ceil(amount));
  }
  if (charged.length === 0) return undefined;
  const args = windowsCall(request.keyHead, charged, 0, CHARGE_HEAD.length, undefined, request.scopes);
  args[1 + charged.length + CHARGE_AT.nowMs] = request.nowMs;
  for (const amount of units) args.push(amount);
  return args;
}

export function encodeRefund(request: RefundRequest): Array<string | number> {
  const { refund } = request;
  const args = windowsCall(request.keyHead, request.windows, 0, REFUND_HEAD.length, refund.buckets, request.scopes);
  const at = 1 + request.windows.length;
  args[at + REFUND_AT.nowMs] = request.nowMs;
  args[at + REFUND_AT.units] = refund.units;
  args[at + REFUND_AT.tokens] = refund.tokens ?? 0;
  args[at + REFUND_AT.cost] = refund.cost ?? 0;
  return args;
}

/** slotRefresh: [1, key, SLOT_REFRESH_HEAD (leaseMs), ...members]. */
export function encodeSlotRefresh(key: string, leaseMs: number, members: Iterable<string>): Array<string | number> {
  const args: Array<string | number> = [1, key];
  args[2 + SLOT_REFRESH_AT.leaseMs] = leaseMs;
  for (const member of members) args.push(member);
  return args;
}

function refuse(operation: string, reply: unknown): never {
  metrics.redisErrors.inc({ op: 'ratelimit_protocol' });
  throw new RateLimitProtocolError(operation, reply);
}

function isIntegerFrom(reply: unknown[], from: number): boolean {
  for (let i = from; i < reply.length; i += 1) if (!Number.isInteger(reply[i])) return false;
  return true;
}

const FIRST_FIELD = TAG_POSITION + 1;

function decodeDecision(tag: string, reply: unknown, windowCount: number): DecisionReply {
  if (!Array.isArray(reply) || reply[TAG_POSITION] !== tag || reply.length !== DECISION_REPLY.length + FIGURES_PER_WINDOW * windowCount || !isIntegerFrom(reply, FIRST_FIELD)) {
    refuse(tag, reply);
  }
  const values = reply as number[];
  const at = DECISION_REPLY.at;
  const remaining: number[] = new Array(windowCount);
  const resetMs: number[] = new Array(windowCount);
  const oldestMs: number[] = new Array(windowCount);
  for (let i = 0; i < windowCount; i += 1) {
    const figures = DECISION_REPLY.length + FIGURES_PER_WINDOW * i;
    remaining[i] = values[figures + FIGURE_AT.remaining] as number;
    resetMs[i] = values[figures + FIGURE_AT.resetMs] as number;
    oldestMs[i] = values[figures + FIGURE_AT.oldestMs] as number;
  }
  return {
    admitted: values[at.admitted] as number,
    retryAfterMs: values[at.retryAfterMs] as number,
    nowMs: values[at.nowMs] as number,
    leaseUnits: values[at.leaseUnits] as number,
    leaseTokens: values[at.leaseTokens] as number,
    leaseValidMs: values[at.leaseValidMs] as number,
    windowAdmitted: values[at.windowAdmitted] as number,
    slotsFree: values[at.slotsFree] as number,
    leaseCost: values[at.leaseCost] as number,
    remaining,
    resetMs,
    oldestMs,
  };
}

export function decodeAdmit(reply: unknown, windowCount: number, tag: string = OPERATION.admit): DecisionReply {
  return decodeDecision(tag, reply, windowCount);
}

export function decodeRenew(reply: unknown, windowCount: number, tag: string = OPERATION.renew): DecisionReply {
  return decodeDecision(tag, reply, windowCount);
}

/** charge's and refund's reply: the server time they ran at. */
function decodeDone(tag: string, reply: unknown): DoneReply {
  if (!Array.isArray(reply) || reply.length !== DONE_REPLY.length || reply[TAG_POSITION] !== tag || !isIntegerFrom(reply, FIRST_FIELD)) refuse(tag, reply);
  return { nowMs: reply[DONE_REPLY.at.nowMs] as number };
}

export function decodeCharge(reply: unknown, tag: string = OPERATION.charge): DoneReply {
  return decodeDone(tag, reply);
}

export function decodeRefund(reply: unknown, tag: string = OPERATION.refund): DoneReply {
  return decodeDone(tag, reply);
}

export function decodeSlotRefresh(reply: unknown, tag: string = OPERATION.slotRefresh): void {
  if (!Array.isArray(reply) || reply.length !== SLOT_REFRESH_REPLY.length || reply[TAG_POSITION] !== tag) refuse(tag, reply);
}
