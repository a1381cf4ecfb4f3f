// From an admit (or renew) reply to what the limiter hands out: one decision per coalesced
// request, and the lease the call brought.
import { countsAtAdmission } from '../config/limit-window.js';
import { CONCURRENCY_RETRY_AFTER_MS, windowStatus, type RateLimitDecision, type RateWindow, type WindowStatus } from './rate-limiter.js';
import type { LeaseGrant } from './lease-types.js';
import type { DecisionReply } from './protocol/codec.js';

/**
 * One decision per coalesced request, in arrival order: request i < admitted was counted
 * when `admitted - 1 - i` of its batch were still to come, so it sees that many more
 * remaining than the final state; the rest see the final state and are refused (those
 * between admitted and windowAdmitted by the concurrency cap, the others by a window).
 */
export function toDecisions(reply: DecisionReply, windows: readonly RateWindow[], count: number): RateLimitDecision[] {
  const { admitted, windowAdmitted, retryAfterMs } = reply;
  // A lease was counted after this batch's requests: they all saw it as still remaining.
  const leased = reply.leaseUnits;
  const decisions: RateLimitDecision[] = new Array(count);
  let refused: RateLimitDecision | undefined;
  let capped: RateLimitDecision | undefined;
  for (let i = 0; i < count; i += 1) {
    if (i >= windowAdmitted) {
      refused ??= { allowed: false, windows: windowStatuses(reply, windows, 0, undefined), retryAfterMs };
      decisions[i] = refused;
    } else if (i >= admitted) {
      capped ??= { allowed: false, windows: windowStatuses(reply, windows, 0, undefined), retryAfterMs: CONCURRENCY_RETRY_AFTER_MS, concurrencyLimited: true };
      decisions[i] = capped;
    } else {
      decisions[i] = { allowed: true, windows: windowStatuses(reply, windows, leased + admitted - 1 - i, reply), retryAfterMs: 0 };
    }
  }
  return decisions;
}

/** `reserves`: the reply whose lease's token and cost reserves still remain (an admitted request's view). */
function windowStatuses(reply: DecisionReply, windows: readonly RateWindow[], extraRemaining: number, reserves: DecisionReply | undefined): WindowStatus[] {
  const statuses: WindowStatus[] = new Array(windows.length);
  for (let i = 0; i < windows.length; i += 1) {
    const window = windows[i] as RateWindow;
    // A budget is not counted per request: its remaining is the same for the whole group (plus
    // the reserve of a lease counted with it, not spent yet). Tool quotas are never leased; one
    // used to admit a call counts per request, as a request window does.
    const remaining = (reply.remaining[i] as number) + (countsAtAdmission(window) ? extraRemaining : reserves === undefined ? 0 : window.kind === 'tokens' ? reserves.leaseTokens : window.kind === 'cost' ? reserves.leaseCost : 0);
    const resetMs = remaining > 0 ? 0 : (reply.resetMs[i] as number);
    statuses[i] = windowStatus(window, remaining, resetMs, remaining > 0 ? (reply.oldestMs[i] as number) : resetMs);
  }
  return statuses;
}

/** The lease a reply brought (possibly 0 units, which still dates the subject's pace). */
export function leaseGrantOf(reply: DecisionReply): LeaseGrant {
  return {
    units: reply.leaseUnits,
    tokens: reply.leaseTokens,
    cost: reply.leaseCost,
    validMs: reply.leaseValidMs,
    serverNowMs: reply.nowMs,
    remaining: reply.remaining,
    resetMs: reply.resetMs,
    oldestMs: reply.oldestMs,
  };
}
