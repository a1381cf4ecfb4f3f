// A lease as the lease book (rate-limit-leases.ts) keeps it, and the rules read off one lease
// alone: what it still holds, whether it can admit more beside its budgets, how large its cost
// reserve is, what it gives back, and the window states a request it admits sees.
import { countsAtAdmission } from '../config/limit-window.js';
import { windowStatus, type RateWindow, type WindowStatus } from './rate-limiter.js';
import type { LeaseRefund } from './lease-types.js';
import { bucketWidthMs } from './window-math.js';

/** One subject's lease as the lease book keeps it. */
export interface Lease {
  windows: readonly RateWindow[];
  granted: number;
  /** Units not handed out yet. */
  units: number;
  used: number;
  /** Units handed out since paceSinceMs (local), across the leases a renewal replaced within a bucket: the subject's pace. */
  paceUsed: number;
  paceSinceMs: number;
  /** The windows end with a token budget: admitting also needs a token left. */
  budgeted: boolean;
  /** Reserved tokens not spent on charges yet. */
  tokensLeft: number;
  /** Tokens reserved with the lease. */
  tokensGranted: number;
  /** The subject's average tokens per charged answer (0: none charged yet), kept across its leases. */
  averageTokens: number;
  /** The windows hold a cost budget: admitting also needs a micro-dollar left. */
  costBudgeted: boolean;
  /** Reserved micro-dollars not spent on charges yet, and how many were reserved. */
  costLeft: number;
  costGranted: number;
  /** The subject's average cost per answer in micro-dollars, and whether any answer's cost was charged yet. */
  averageCost: number;
  costCharged: boolean;
  /** Local monotonic ms (the limiter's clock). */
  sentAtMs: number;
  expiresAtMs: number;
  serverNowMs: number;
  /** Server time whose buckets the lease was counted in (serverNowMs, or later for a renewal ahead). */
  countedAtMs: number;
  /** Server time at which the lease ends (expiresAtMs on the server's clock). */
  endsAtServerMs: number;
  remaining: number[];
  resetMs: number[];
  oldestMs: number[];
  /** A call that may grant this subject a lease is on its way: no second one meanwhile. */
  requesting: boolean;
  /** This lease was marked due for renewal (once per lease, whatever comes of it). */
  renewing: boolean;
}

/** Units, tokens or micro-dollars still reserved in Redis for this lease. */
export function holdsAny(lease: Pick<Lease, 'units' | 'tokensLeft' | 'costLeft'>): boolean {
  return lease.units > 0 || lease.tokensLeft > 0 || lease.costLeft > 0;
}

/** Beside a budget, a lease that can admit no more: no unit, or no token (micro-dollar) of a budget it reserves for. */
export function spentBesideBudget(lease: Lease): boolean {
  if (!lease.budgeted && !lease.costBudgeted) return false;
  return lease.units === 0 || (lease.budgeted && lease.tokensLeft === 0) || (lease.costBudgeted && lease.costLeft === 0);
}

/** A reserve the lease needs is not sized yet: no answer of the subject has been charged. */
export function reserveUnknown(lease: Lease): boolean {
  return (lease.budgeted && lease.averageTokens === 0) || (lease.costBudgeted && !lease.costCharged);
}

/** Micro-dollars for `units` answers of the subject's average cost; at least one, so free answers still lease. */
export function costFor(lease: Lease, units: number): number {
  return lease.costBudgeted ? Math.max(1, Math.ceil(units * lease.averageCost)) : 0;
}

/** The reserve still held by a lease (or a grant not taken up), as units to give back and the buckets they were counted in. */
export function refundOf(subject: string, lease: Pick<Lease, 'windows' | 'units' | 'tokensLeft' | 'costLeft' | 'countedAtMs'>): LeaseRefund {
  const refund: LeaseRefund = {
    subject,
    windows: lease.windows,
    units: lease.units,
    buckets: lease.windows.map((window) => Math.floor(lease.countedAtMs / bucketWidthMs(window.windowMs))),
  };
  if (lease.tokensLeft > 0) refund.tokens = lease.tokensLeft;
  if (lease.costLeft > 0) refund.cost = lease.costLeft;
  return refund;
}

/**
 * The state a lease-served request sees: the reply's remaining plus the lease units still
 * unused here (the same rule as a coalesced batch's earlier requests), and the reply's times
 * moved on by the time since the call left.
 */
export function leaseStatuses(lease: Lease, nowMs: number): WindowStatus[] {
  const elapsedMs = Math.max(0, nowMs - lease.sentAtMs);
  const statuses: WindowStatus[] = new Array(lease.windows.length);
  for (let i = 0; i < lease.windows.length; i += 1) {
    const window = lease.windows[i] as RateWindow;
    // A budget's reply figure counted the whole reserve: what is not spent yet still remains.
    // A report-only window holds none of the lease: its figure is the one read at the grant.
    const remaining = (lease.remaining[i] as number) + (window.kind === 'tokens' ? lease.tokensLeft : window.kind === 'cost' ? lease.costLeft : countsAtAdmission(window) ? lease.units : 0);
    // Never 0 while nothing remains: the bucket that frees a slot is still ahead.
    const resetMs = remaining > 0 ? 0 : Math.max(1, (lease.resetMs[i] as number) - elapsedMs);
    const oldestMs = lease.oldestMs[i] as number;
    statuses[i] = windowStatus(window, remaining, resetMs, remaining > 0 ? (oldestMs > 0 ? Math.max(1, oldestMs - elapsedMs) : 0) : resetMs);
  }
  return statuses;
}
