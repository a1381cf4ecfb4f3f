// Leases: a busy subject's next requests, counted in Redis ahead of time, so this instance
// admits them without a round trip until the bucket they were counted in ends
// (docs/rate-limits.md "Leases"). Redis still counts every admitted request before it is
// admitted, so N instances never admit more than the limit between them; what a lease
// costs is the other direction — units reserved here and not used are unavailable to other
// instances until the lease ends and gives them back (at most a bucket, ≤ 1 s).
//
// Beside a token budget a lease also holds tokens, reserved in Redis the same way
// (docs/rate-limits.md "Leases", decision 0026): it admits only while it has a unit and a
// token left, the answers' charges are paid from its tokens first, and unused tokens go back
// with unused units. Its size in tokens follows the subject's average answer. Beside a cost
// budget it holds micro-dollars the same way, sized by the average cost of an answer
// (decision 0076).
//
// One file over 300 lines: taking, renewing and giving back a lease all read and write the
// same per-subject lease record within one turn (the record itself is lease-record.ts).
//
// Renewed ahead (decision 0029): once a lease runs low — RENEW_SPENT_SHARE of its units (or
// tokens) handed out, or RENEW_BEFORE_MS of its life left — the request that took it marks
// it due, and the limiter sends ONE background call for the subject's next lease while this
// one still admits. Near its end the next lease is counted in the bucket that follows, so it
// outlives the bucket boundary; when it answers it replaces this one, whose unused units go
// back as any replaced lease's do. One renewal per lease: if it fails or brings nothing,
// the lease runs out as before and the next request goes to Redis.
import { hasCostBudget, hasTokenBudget, type ChargeUsage, type RateLimitDecision, type RateWindow } from './rate-limiter.js';
import { costFor, holdsAny, leaseStatuses, refundOf, reserveUnknown, spentBesideBudget, type Lease } from './lease-record.js';
import type { LeaseGrant, LeaseRefund, LeaseState, Renewal } from './lease-types.js';
import { MAX_LEASE_AHEAD_MS } from './protocol/lua-windows.js';

export type { LeaseGrant, LeaseRefund, LeaseState, Renewal };
import { bucketWidthMs } from './window-math.js';

/** The most units one lease asks for (at thousands of requests per second: a few calls a second). */
export const MAX_LEASE_UNITS = 1_024;
/** A lease ends with its bucket, and never later than this (a day window's buckets are 24 min). */
export const MAX_LEASE_MS = 1_000;
// How far ahead a renewal may count the next lease: the renew operation's clamp. A renewal
// asks for the end of the lease it replaces, at most RENEW_BEFORE_MS away.
export { MAX_LEASE_AHEAD_MS };
/**
 * A lease with this little life left is renewed by the next request it admits: far more than
 * a loaded Redis round trip (2.5–7 ms in bench/stream-stages.mjs), and wide enough that a
 * subject sending 4 requests a second or more has one in it. What it costs: the next lease is
 * counted up to this much before its bucket starts (decision 0029).
 */
export const RENEW_BEFORE_MS = 250;
/** A lease is renewed once this share of its units (or, beside a budget, its tokens) is handed out. */
export const RENEW_SPENT_SHARE = 3 / 4;

/** The shortest time a subject's pace is measured over. */
const PACE_MIN_MS = 100;
/** A renewal within a bucket asks for this many times what the subject's pace needs until the lease's end. */
const RENEW_MARGIN = 1.5;

/** Weight of the newest answer in a subject's average tokens per answer. */
const AVERAGE_WEIGHT = 1 / 8;


export class LeaseBook {
  private readonly leases = new Map<string, Lease>();
  /** Subjects whose lease a request marked due for renewal since the limiter last looked. */
  private due: string[] = [];

  /** `renewAhead`: mark running-low leases due for renewal (decision 0029). */
  constructor(private readonly renewAhead = true) {}

  get size(): number {
    return this.leases.size;
  }

  stateOf(subject: string): LeaseState | undefined {
    const lease = this.leases.get(subject);
    if (lease === undefined) return undefined;
    const { units, granted, expiresAtMs, requesting, renewing } = lease;
    return { units, granted, expiresAtMs, requesting, renewing };
  }

  /** Some lease was marked due for renewal: the limiter should flush. */
  get hasDue(): boolean {
    return this.due.length > 0;
  }

  /** The subjects marked due since the last call (each once). */
  takeDue(): string[] {
    const due = this.due;
    this.due = [];
    return due;
  }

  /** A decision from this subject's lease, or undefined when it has none left to use now. */
  take(subject: string, windows: readonly RateWindow[], nowMs: number): RateLimitDecision | undefined {
    const lease = this.leases.get(subject);
    if (lease === undefined || lease.units === 0 || lease.windows !== windows || nowMs >= lease.expiresAtMs) return undefined;
    if ((lease.budgeted && lease.tokensLeft === 0) || (lease.costBudgeted && lease.costLeft === 0)) return undefined;
    lease.units -= 1;
    lease.used += 1;
    lease.paceUsed += 1;
    if (this.renewAhead && !lease.renewing && !lease.requesting && runsLow(lease, nowMs)) {
      lease.renewing = true;
      this.due.push(subject);
    }
    return { allowed: true, windows: leaseStatuses(lease, nowMs), retryAfterMs: 0 };
  }

  /**
   * The renewal of a subject marked due, marked as on its way; undefined when there is none
   * to send (the lease ended or was replaced meanwhile, or another call may bring one). Near
   * its end the next lease is counted from this one's end and sized by this one's pace over
   * its next life; earlier (its units ran low) it doubles, as when a lease runs out early.
   */
  renewal(subject: string, nowMs: number): Renewal | undefined {
    const lease = this.leases.get(subject);
    if (lease === undefined || !lease.renewing || lease.requesting || nowMs >= lease.expiresAtMs) return undefined;
    if (reserveUnknown(lease)) return undefined;
    const leftMs = lease.expiresAtMs - nowMs;
    const pace = paceOf(lease, nowMs);
    let units: number;
    let leaseFromMs = 0;
    if (leftMs <= RENEW_BEFORE_MS) {
      // Near its end: the next lease lives from this one's end to the end of the bucket after.
      units = Math.ceil(pace * (leftMs + shortestBucketMs(lease.windows)));
      leaseFromMs = lease.endsAtServerMs;
    } else {
      // Its units ran low early: enough to reach its end with room to spare, never less than it had.
      units = Math.max(lease.granted, Math.ceil(RENEW_MARGIN * pace * leftMs));
    }
    units = Math.min(MAX_LEASE_UNITS, Math.max(1, units));
    lease.requesting = true;
    return { windows: lease.windows, units, tokens: lease.budgeted ? Math.ceil(units * lease.averageTokens) : 0, cost: costFor(lease, units), leaseFromMs };
  }

  /**
   * A renewal's answer: a lease with units replaces the current one (whose unused units come
   * back for the caller to give back, as any replaced lease's); one without leaves the
   * current lease to run out as it would have.
   */
  renewed(subject: string, windows: readonly RateWindow[], sentAtMs: number, grant: LeaseGrant): LeaseRefund | undefined {
    if (grant.units > 0) return this.granted(subject, windows, sentAtMs, grant, true);
    this.failed(subject);
    const tokens = grant.tokens ?? 0;
    const cost = grant.cost ?? 0;
    return tokens > 0 || cost > 0 ? refundOf(subject, { windows, units: 0, tokensLeft: tokens, costLeft: cost, countedAtMs: grant.serverNowMs }) : undefined;
  }

  /**
   * How many units the next call for this subject should ask for: none at first sight or
   * while another call may already bring a lease; double the last lease when it ran out
   * before its bucket ended (demand outran it, or its tokens did); what the last one used
   * when it expired. Beside a budget, nothing until one answer has been charged: the token
   * (and cost) reserve is sized by the subject's answers, and no figure fits every runner.
   */
  wanted(subject: string, windows: readonly RateWindow[], count: number, nowMs: number): number {
    const lease = this.leases.get(subject);
    if (lease === undefined || lease.windows !== windows || lease.requesting) return 0;
    if (reserveUnknown(lease)) return 0;
    const want = nowMs < lease.expiresAtMs ? lease.granted * 2 + count : lease.used;
    return Math.min(MAX_LEASE_UNITS, want);
  }

  /** Tokens to reserve beside `units` wanted: as many answers of the subject's average size. */
  tokensWanted(subject: string, units: number): number {
    const lease = this.leases.get(subject);
    return lease === undefined ? 0 : Math.ceil(units * lease.averageTokens);
  }

  /** Micro-dollars to reserve beside `units` wanted (a plan with a cost budget): as many answers of the subject's average cost. */
  costWanted(subject: string, units: number): number {
    const lease = this.leases.get(subject);
    return lease === undefined ? 0 : costFor(lease, units);
  }

  /**
   * An answer's tokens and cost, charged when it ends: paid from the subject's live lease
   * first (they were counted in Redis with it); returns what is left to charge, for the
   * caller's batched charge (`usage` itself when the lease paid nothing).
   */
  charge(subject: string, windows: readonly RateWindow[], usage: ChargeUsage, nowMs: number): ChargeUsage {
    const lease = this.leases.get(subject);
    if (lease === undefined) return usage;
    let { tokens } = usage;
    let cost = usage.microUsd ?? 0;
    if (tokens > 0) lease.averageTokens = lease.averageTokens === 0 ? tokens : lease.averageTokens + (tokens - lease.averageTokens) * AVERAGE_WEIGHT;
    if (lease.costBudgeted && usage.microUsd !== undefined) {
      lease.averageCost = lease.costCharged ? lease.averageCost + (cost - lease.averageCost) * AVERAGE_WEIGHT : cost;
      lease.costCharged = true;
    }
    if (lease.windows !== windows || nowMs >= lease.expiresAtMs) return usage;
    const paidTokens = Math.min(lease.tokensLeft, tokens);
    const paidCost = Math.min(lease.costLeft, cost);
    if (paidTokens === 0 && paidCost === 0) return usage;
    lease.tokensLeft -= paidTokens;
    lease.costLeft -= paidCost;
    tokens -= paidTokens;
    cost -= paidCost;
    return { ...usage, tokens, microUsd: cost };
  }

  /** Marks a call that asks for a lease as on its way. */
  requesting(subject: string): void {
    const lease = this.leases.get(subject);
    if (lease !== undefined) lease.requesting = true;
  }

  /**
   * Takes back the unused units (and tokens) of an expired lease, of one whose windows
   * changed, or, beside a budget, of one that can admit no more, for the caller to return
   * to Redis; undefined when there is nothing to return.
   */
  reclaim(subject: string, nowMs: number, windows?: readonly RateWindow[]): LeaseRefund | undefined {
    const lease = this.leases.get(subject);
    if (lease === undefined || !holdsAny(lease)) return undefined;
    // A budgeted lease that can admit nothing more (no unit, token or micro-dollar left) gives
    // back the rest now, with the call that replaces it, rather than after that call's reply.
    if (nowMs < lease.expiresAtMs && lease.windows === windows && !spentBesideBudget(lease)) return undefined;
    const refund = refundOf(subject, lease);
    lease.units = 0;
    lease.tokensLeft = 0;
    lease.costLeft = 0;
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
    const tokens = grant.tokens ?? 0;
    const cost = grant.cost ?? 0;
    if (!askedForLease && current !== undefined && (current.units > 0 || current.requesting)) {
      return grant.units > 0 || tokens > 0 || cost > 0 ? refundOf(subject, { windows, units: grant.units, tokensLeft: tokens, costLeft: cost, countedAtMs: grant.serverNowMs }) : undefined;
    }
    const aheadMs = grant.aheadMs ?? 0;
    // From the moment the call left: the script ran later, so this is never past its bucket.
    const lifeMs = Math.min(grant.validMs, aheadMs + MAX_LEASE_MS);
    const carryPace = current !== undefined && aheadMs === 0 && current.renewing && sentAtMs < current.expiresAtMs;
    this.leases.set(subject, {
      windows,
      granted: grant.units,
      units: grant.units,
      used: 0,
      // A renewal within the bucket continues the pace of the lease it replaces; anything else starts it over.
      paceUsed: carryPace ? current.paceUsed : 0,
      paceSinceMs: carryPace ? current.paceSinceMs : sentAtMs,
      budgeted: hasTokenBudget(windows),
      tokensLeft: tokens,
      tokensGranted: tokens,
      averageTokens: current === undefined ? 0 : current.averageTokens,
      costBudgeted: hasCostBudget(windows),
      costLeft: cost,
      costGranted: cost,
      averageCost: current === undefined ? 0 : current.averageCost,
      costCharged: current !== undefined && current.costCharged,
      sentAtMs,
      expiresAtMs: sentAtMs + lifeMs,
      serverNowMs: grant.serverNowMs,
      countedAtMs: grant.serverNowMs + aheadMs,
      endsAtServerMs: grant.serverNowMs + lifeMs,
      remaining: grant.remaining,
      resetMs: grant.resetMs,
      oldestMs: grant.oldestMs,
      requesting: false,
      renewing: false,
    });
    return current !== undefined && holdsAny(current) ? refundOf(subject, current) : undefined;
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
      if (holdsAny(lease)) refunds.push(refundOf(subject, lease));
      this.leases.delete(subject);
    }
    return refunds;
  }

  /** Every unused unit, leases forgotten (shutdown). */
  drain(): LeaseRefund[] {
    const refunds: LeaseRefund[] = [];
    for (const [subject, lease] of this.leases) if (holdsAny(lease)) refunds.push(refundOf(subject, lease));
    this.leases.clear();
    return refunds;
  }
}

/**
 * Due for renewal: its end near; or most of its units (or tokens) handed out and, at the
 * subject's pace, its units would not last to its end (else the renewal near its end does).
 */
function runsLow(lease: Lease, nowMs: number): boolean {
  const leftMs = lease.expiresAtMs - nowMs;
  if (leftMs <= RENEW_BEFORE_MS) return true;
  if (lease.budgeted && lease.tokensLeft <= lease.tokensGranted * (1 - RENEW_SPENT_SHARE)) return true;
  if (lease.costBudgeted && lease.costLeft <= lease.costGranted * (1 - RENEW_SPENT_SHARE)) return true;
  return lease.units <= lease.granted * (1 - RENEW_SPENT_SHARE) && lease.units < paceOf(lease, nowMs) * leftMs;
}

/** Units per ms handed out lately, over at least PACE_MIN_MS (one request just after a grant is no pace). */
function paceOf(lease: Lease, nowMs: number): number {
  return lease.paceUsed / Math.max(PACE_MIN_MS, nowMs - lease.paceSinceMs);
}

/** The narrowest bucket of the windows, as long as a lease may live at most. */
function shortestBucketMs(windows: readonly RateWindow[]): number {
  let shortest = MAX_LEASE_MS;
  for (const window of windows) shortest = Math.min(shortest, bucketWidthMs(window.windowMs));
  return shortest;
}
