// The limiter operations' requests and replies, typed (operations.ts has their scripts,
// codec.ts their encoders and decoders, limiter-operations.ts joins the three per operation).
import type { RateWindow, ScopeKeys } from '../rate-limiter.js';

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

/** charge's and refund's reply: the server time they ran at. */
export interface DoneReply {
  nowMs: number;
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
