// One encoder and one typed decoder per limiter operation (operations.ts gives each its
// argument shape). An encoder lays a typed request out as the operation's
// [numKeys, ...KEYS, ...ARGV]; a decoder refuses any reply that is not exactly the shape of
// its operation's version (wrong tag, wrong length, a non-integer field) with a
// RateLimitProtocolError: a RateLimitStoreError, so the failover policy treats it as the store
// failing, and counted as agentgw_redis_errors_total{op="ratelimit_protocol"}.
import { metrics } from '../../metrics/metrics.js';
import { scopeKeyPart, type RateWindow, type ScopeKeys } from '../rate-limiter.js';
import { RateLimitStoreError } from '../rate-limit-store-error.js';
import { bucketWidthMs } from '../window-math.js';
import {
  ADMIT_HEAD_ARGS,
  CHARGE_HEAD_ARGS,
  DECISION_REPLY_HEAD,
  FIGURES_PER_WINDOW,
  OPERATION,
  REFUND_HEAD_ARGS,
  RENEW_HEAD_ARGS,
  WINDOW_ARGS,
} from './operations.js';

/** A reply that is not its operation's, or not of its version. */
export class RateLimitProtocolError extends RateLimitStoreError {
  constructor(readonly operation: string, reply: unknown) {
    // Bounded: a hostile or broken server must not fill the logs.
    super(`rate-limit operation ${operation} returned an unexpected reply: ${JSON.stringify(reply)?.slice(0, 200)}`);
    this.name = 'RateLimitProtocolError';
  }
}

/** Unused lease units (and tokens, micro-dollars) to give back, and the bucket of each window they were counted in. */
export interface RefundArgs {
  units: number;
  tokens?: number;
  /** Micro-dollars of a cost reserve (decision 0076). */
  cost?: number;
  /** Per window, in the windows' order. */
  buckets: readonly number[];
}

/** A stream slot to take with the admission (a capped plan's stream). */
export interface SlotArgs {
  key: string;
  streams: number;
  leaseMs: number;
  /** Admitted request i takes member `${memberHead}:${i}`. */
  memberHead: string;
}

/** Where a subject's window hashes live: `${prefix}rl:{${subject}}:` + the window's name. */
export type KeyHead = string;

export interface AdmitRequest {
  keyHead: KeyHead;
  /** The scope instances the windows of nested scopes count in (rate-limiter.ts scopeKeyPart); undefined: the subject's alone. */
  scopes?: ScopeKeys | undefined;
  windows: readonly RateWindow[];
  /** "" : the server's TIME. */
  nowMs: number | '';
  count: number;
  leaseUnits: number;
  leaseTokens: number;
  /** Micro-dollars to reserve beside the units (a plan with cost budgets; decision 0076); none when absent. */
  leaseCost?: number;
  refund: RefundArgs | undefined;
  slot: SlotArgs | undefined;
}

export interface RenewRequest {
  keyHead: KeyHead;
  /** The scope instances the windows of nested scopes count in (rate-limiter.ts scopeKeyPart); undefined: the subject's alone. */
  scopes?: ScopeKeys | undefined;
  windows: readonly RateWindow[];
  units: number;
  tokens: number;
  /** Micro-dollars to reserve beside the units; none when absent. */
  cost?: number;
  /** Server ms to count the lease at (the end of the one it replaces), or 0: now. */
  leaseFromMs: number;
}

export interface ChargeRequest {
  keyHead: KeyHead;
  /** The scope instances the windows of nested scopes count in (rate-limiter.ts scopeKeyPart); undefined: the subject's alone. */
  scopes?: ScopeKeys | undefined;
  /** Any windows: only those with an amount above 0 are sent. */
  windows: readonly RateWindow[];
  /** Per window, in the windows' order: what to charge it (window-math.ts chargeUnits). */
  amounts: readonly number[];
  nowMs: number | '';
}

export interface RefundRequest {
  keyHead: KeyHead;
  /** The scope instances the windows of nested scopes count in (rate-limiter.ts scopeKeyPart); undefined: the subject's alone. */
  scopes?: ScopeKeys | undefined;
  windows: readonly RateWindow[];
  nowMs: number | '';
  refund: RefundArgs;
}

/** admit's and renew's reply, typed. Figures are per window, in the windows' order, after this call counted. */
export interface DecisionReply {
  admitted: number;
  retryAfterMs: number;
  nowMs: number;
  leaseUnits: number;
  leaseTokens: number;
  /** Micro-dollars reserved with the lease (cost budgets). */
  leaseCost: number;
  leaseValidMs: number;
  /** How many the windows alone would have admitted (the rest between admitted and this: the cap). */
  windowAdmitted: number;
  slotsFree: number;
  remaining: number[];
  resetMs: number[];
  oldestMs: number[];
}

/** What the Lua reads of a limit's kind: 0 requests, 1 a budget (tokens, a tool's calls), 2 a report-only budget, 3 a cost budget. */
function wireKind(window: RateWindow): number {
  switch (window.kind) {
    case 'requests':
      return 0;
    case 'tokens':
      return 1;
    case 'cost':
      return 3;
    case 'tool_calls':
      return window.reportOnly ? 2 : 1;
  }
}

/** One window's ARGV at `at`: limit, windowMs, bucketMs, refundBucket, kind. */
function putWindow(args: Array<string | number>, at: number, window: RateWindow, refundBucket: number): void {
  args[at] = window.limit;
  args[at + 1] = window.windowMs;
  args[at + 2] = bucketWidthMs(window.windowMs);
  args[at + 3] = refundBucket;
  args[at + 4] = wireKind(window);
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
  const args = windowsCall(request.keyHead, windows, slot === undefined ? 0 : 1, ADMIT_HEAD_ARGS, refund?.buckets, request.scopes);
  let at = 1 + windows.length;
  if (slot !== undefined) args[at++] = slot.key;
  args[at] = request.nowMs;
  args[at + 1] = request.count;
  args[at + 2] = request.leaseUnits;
  args[at + 3] = request.leaseTokens;
  args[at + 4] = request.leaseCost ?? 0;
  args[at + 5] = refund === undefined ? 0 : refund.units;
  args[at + 6] = refund?.tokens ?? 0;
  args[at + 7] = refund?.cost ?? 0;
  args[at + 8] = slot === undefined ? 0 : slot.streams;
  args[at + 9] = slot === undefined ? 0 : slot.leaseMs;
  args[at + 10] = slot === undefined ? '' : slot.memberHead;
  return args;
}

export function encodeRenew(request: RenewRequest): Array<string | number> {
  const args = windowsCall(request.keyHead, request.windows, 0, RENEW_HEAD_ARGS, undefined, request.scopes);
  const at = 1 + request.windows.length;
  args[at] = request.units;
  args[at + 1] = request.tokens;
  args[at + 2] = request.cost ?? 0;
  args[at + 3] = Math.floor(request.leaseFromMs);
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
  const args = windowsCall(request.keyHead, charged, 0, CHARGE_HEAD_ARGS, undefined, request.scopes);
  args[1 + charged.length] = request.nowMs;
  for (const amount of units) args.push(amount);
  return args;
}

export function encodeRefund(request: RefundRequest): Array<string | number> {
  const { refund } = request;
  const args = windowsCall(request.keyHead, request.windows, 0, REFUND_HEAD_ARGS, refund.buckets, request.scopes);
  const at = 1 + request.windows.length;
  args[at] = request.nowMs;
  args[at + 1] = refund.units;
  args[at + 2] = refund.tokens ?? 0;
  args[at + 3] = refund.cost ?? 0;
  return args;
}

/** slotRefresh: [1, key, leaseMs, ...members]. */
export function encodeSlotRefresh(key: string, leaseMs: number, members: Iterable<string>): Array<string | number> {
  return [1, key, leaseMs, ...members];
}

function refuse(operation: string, reply: unknown): never {
  metrics.redisErrors.inc({ op: 'ratelimit_protocol' });
  throw new RateLimitProtocolError(operation, reply);
}

function isIntegerFrom(reply: unknown[], from: number): boolean {
  for (let i = from; i < reply.length; i += 1) if (!Number.isInteger(reply[i])) return false;
  return true;
}

function decodeDecision(tag: string, reply: unknown, windowCount: number): DecisionReply {
  if (!Array.isArray(reply) || reply[0] !== tag || reply.length !== DECISION_REPLY_HEAD + FIGURES_PER_WINDOW * windowCount || !isIntegerFrom(reply, 1)) {
    refuse(tag, reply);
  }
  const values = reply as number[];
  const remaining: number[] = new Array(windowCount);
  const resetMs: number[] = new Array(windowCount);
  const oldestMs: number[] = new Array(windowCount);
  for (let i = 0; i < windowCount; i += 1) {
    const at = DECISION_REPLY_HEAD + FIGURES_PER_WINDOW * i;
    remaining[i] = values[at] as number;
    resetMs[i] = values[at + 1] as number;
    oldestMs[i] = values[at + 2] as number;
  }
  return {
    admitted: values[1] as number,
    retryAfterMs: values[2] as number,
    nowMs: values[3] as number,
    leaseUnits: values[4] as number,
    leaseTokens: values[5] as number,
    leaseValidMs: values[6] as number,
    windowAdmitted: values[7] as number,
    slotsFree: values[8] as number,
    leaseCost: values[9] as number,
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
function decodeDone(tag: string, reply: unknown): { nowMs: number } {
  if (!Array.isArray(reply) || reply.length !== 2 || reply[0] !== tag || !Number.isInteger(reply[1])) refuse(tag, reply);
  return { nowMs: reply[1] as number };
}

export function decodeCharge(reply: unknown, tag: string = OPERATION.charge): { nowMs: number } {
  return decodeDone(tag, reply);
}

export function decodeRefund(reply: unknown, tag: string = OPERATION.refund): { nowMs: number } {
  return decodeDone(tag, reply);
}

export function decodeSlotRefresh(reply: unknown, tag: string = OPERATION.slotRefresh): void {
  if (!Array.isArray(reply) || reply.length !== 1 || reply[0] !== tag) refuse(tag, reply);
}
