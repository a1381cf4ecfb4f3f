// Leases: a busy subject's next requests, counted in Redis ahead of time, so this instance
// admits them without a round trip until the bucket they were counted in ends
// (docs/rate-limits.md "Leases"). Redis still counts every admitted request before it is
// admitted, so N instances never admit more than the limit between them; what a lease
// costs is the other direction — units reserved here and not used are unavailable to other
// instances until the lease ends and gives them back (at most a bucket, ≤ 1 s).
import { windowStatus, type RateLimitDecision, type RateWindow, type WindowStatus } from './rate-limiter.js';
import { bucketWidthMs } from './window-math.js';

/** The most units one lease asks for (at thousands of requests per second: a few calls a second). */
export const MAX_LEASE_UNITS = 1_024;
/** A lease ends with its bucket, and never later than this (a day window's buckets are 24 min). */
export const MAX_LEASE_MS = 1_000;

/** What the script answered about a lease (figures after the lease was counted). */
export interface LeaseGrant {
  units: number;
  validMs: number;
  serverNowMs: number;
  /** Per window, from the reply: remaining (without the lease), resetMs, oldestMs. */
  remaining: number[];
  resetMs: number[];
  oldestMs: number[];
}

/** Unused units to give back, and the bucket of each window they were counted in. */
export interface LeaseRefund {
  subject: string;
  windows: readonly RateWindow[];
  units: number;
  buckets: number[];
}

interface Lease {
  windows: readonly RateWindow[];
  granted: number;
  /** Units not handed out yet. */
  units: number;
  used: number;
  /** Local monotonic ms (performance.now() scale). */
  sentAtMs: number;
  expiresAtMs: number;
  serverNowMs: number;
  remaining: number[];
  resetMs: number[];
  oldestMs: number[];
  /** A call that may grant this subject a lease is on its way: no second one meanwhile. */
  requesting: boolean;
}

export class LeaseBook {
  private readonly leases = new Map<string, Lease>();

  get size(): number {
    return this.leases.size;
  }

  /** A decision from this subject's lease, or undefined when it has none left to use now. */
  take(subject: string, windows: readonly RateWindow[], nowMs: number): RateLimitDecision | undefined {
    const lease = this.leases.get(subject);
    if (lease === undefined || lease.units === 0 || lease.windows !== windows || nowMs >= lease.expiresAtMs) return undefined;
    lease.units -= 1;
    lease.used += 1;
    return { allowed: true, windows: leaseStatuses(lease, nowMs), retryAfterMs: 0 };
  }

  /**
   * How many units the next call for this subject should ask for: none at first sight or
   * while another call may already bring a lease; double the last lease when it ran out
   * before its bucket ended (demand outran it); what the last one used when it expired.
   */
  wanted(subject: string, windows: readonly RateWindow[], count: number, nowMs: number): number {
    const lease = this.leases.get(subject);
    if (lease === undefined || lease.windows !== windows || lease.requesting) return 0;
    const want = nowMs < lease.expiresAtMs ? lease.granted * 2 + count : lease.used;
    return Math.min(MAX_LEASE_UNITS, want);
  }

  /** Marks a call that asks for a lease as on its way. */
  requesting(subject: string): void {
    const lease = this.leases.get(subject);
    if (lease !== undefined) lease.requesting = true;
  }

  /**
   * Takes back the unused units of an expired lease (or of one whose windows changed), for
   * the caller to return to Redis; undefined when there is nothing to return.
   */
  reclaim(subject: string, nowMs: number, windows?: readonly RateWindow[]): LeaseRefund | undefined {
    const lease = this.leases.get(subject);
    if (lease === undefined || lease.units === 0) return undefined;
    if (nowMs < lease.expiresAtMs && lease.windows === windows) return undefined;
    const refund = refundOf(subject, lease);
    lease.units = 0;
    return refund;
  }

  /**
   * Records a call's answer: its lease (possibly 0 units, which still dates the subject's
   * pace) replaces the subject's last one — unless this call did not ask for a lease and
   * the subject holds units, or another call that did is still on its way. Units of a
   * replaced lease that were never handed out come back for the caller to give back.
   */
  granted(subject: string, windows: readonly RateWindow[], sentAtMs: number, grant: LeaseGrant, askedForLease: boolean): LeaseRefund | undefined {
    const current = this.leases.get(subject);
    if (!askedForLease && current !== undefined && (current.units > 0 || current.requesting)) {
      return grant.units > 0 ? refundOf(subject, { windows, units: grant.units, serverNowMs: grant.serverNowMs }) : undefined;
    }
    this.leases.set(subject, {
      windows,
      granted: grant.units,
      units: grant.units,
      used: 0,
      sentAtMs,
      // From the moment the call left: the script ran later, so this is never past its bucket.
      expiresAtMs: sentAtMs + Math.min(grant.validMs, MAX_LEASE_MS),
      serverNowMs: grant.serverNowMs,
      remaining: grant.remaining,
      resetMs: grant.resetMs,
      oldestMs: grant.oldestMs,
      requesting: false,
    });
    return current !== undefined && current.units > 0 ? refundOf(subject, current) : undefined;
  }

  /** A call that asked for a lease failed: the subject may ask again. */
  failed(subject: string): void {
    const lease = this.leases.get(subject);
    if (lease !== undefined) lease.requesting = false;
  }

  /**
   * Forgets leases that have ended (keeping memory to the subjects active in the last
   * second or so) and returns the unused units to give back.
   */
  sweep(nowMs: number): LeaseRefund[] {
    const refunds: LeaseRefund[] = [];
    for (const [subject, lease] of this.leases) {
      if (nowMs < lease.expiresAtMs || lease.requesting) continue;
      if (lease.units > 0) refunds.push(refundOf(subject, lease));
      this.leases.delete(subject);
    }
    return refunds;
  }

  /** Every unused unit, leases forgotten (shutdown). */
  drain(): LeaseRefund[] {
    const refunds: LeaseRefund[] = [];
    for (const [subject, lease] of this.leases) if (lease.units > 0) refunds.push(refundOf(subject, lease));
    this.leases.clear();
    return refunds;
  }
}

function refundOf(subject: string, lease: Pick<Lease, 'windows' | 'units' | 'serverNowMs'>): LeaseRefund {
  return {
    subject,
    windows: lease.windows,
    units: lease.units,
    buckets: lease.windows.map((window) => Math.floor(lease.serverNowMs / bucketWidthMs(window.windowMs))),
  };
}

/**
 * The state a lease-served request sees: the reply's remaining plus the lease units still
 * unused here (the same rule as a coalesced batch's earlier requests), and the reply's times
 * moved on by the time since the call left.
 */
function leaseStatuses(lease: Lease, nowMs: number): WindowStatus[] {
  const elapsedMs = Math.max(0, nowMs - lease.sentAtMs);
  const statuses: WindowStatus[] = new Array(lease.windows.length);
  for (let i = 0; i < lease.windows.length; i += 1) {
    const window = lease.windows[i] as RateWindow;
    const remaining = (lease.remaining[i] as number) + lease.units;
    // Never 0 while nothing remains: the bucket that frees a slot is still ahead.
    const resetMs = remaining > 0 ? 0 : Math.max(1, (lease.resetMs[i] as number) - elapsedMs);
    const oldestMs = lease.oldestMs[i] as number;
    statuses[i] = windowStatus(window, remaining, resetMs, remaining > 0 ? (oldestMs > 0 ? Math.max(1, oldestMs - elapsedMs) : 0) : resetMs);
  }
  return statuses;
}
