// What the lease book (rate-limit-leases.ts) exchanges with the limiter: a lease granted by
// an admit or renew reply, units to give back, a renewal to send, a lease as tests see it.
import type { RateWindow } from './rate-limiter.js';
import type { RefundArgs } from './protocol/codec.js';

/** What an admit or renew reply said about a lease (figures after the lease was counted). */
export interface LeaseGrant {
  units: number;
  /** Tokens reserved beside the units (plans with token budgets only). */
  tokens?: number;
  /** Micro-dollars reserved beside the units (plans with cost budgets only; decision 0076). */
  cost?: number;
  validMs: number;
  serverNowMs: number;
  /** How far after serverNowMs the lease was counted (a renewal ahead; 0 otherwise). */
  aheadMs?: number;
  /** Per window, from the reply: remaining (without the lease), resetMs, oldestMs. */
  remaining: number[];
  resetMs: number[];
  oldestMs: number[];
}

/**
 * Unused units to give back, and the bucket of each window they were counted in; `tokens` and
 * `cost` (set only when there are some) go back to the same buckets of the budgets.
 */
export interface LeaseRefund extends RefundArgs {
  subject: string;
  windows: readonly RateWindow[];
  buckets: number[];
}

/** A lease as tests and diagnostics see it. */
export interface LeaseState {
  units: number;
  granted: number;
  /** Local clock (the limiter's `now`). */
  expiresAtMs: number;
  /** A call that may bring the next lease is on its way. */
  requesting: boolean;
  /** Marked due for renewal (once per lease). */
  renewing: boolean;
}

/** What a renewal asks for: the renew operation's units (and tokens) and where to count them. */
export interface Renewal {
  windows: readonly RateWindow[];
  units: number;
  tokens: number;
  /** Micro-dollars to reserve beside the units. */
  cost: number;
  /** Server time to count the lease at (the end of the current one), or 0: now. */
  leaseFromMs: number;
}
