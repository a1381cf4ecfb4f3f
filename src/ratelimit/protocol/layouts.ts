// The limiter operations' argument and reply layouts, each defined once as a list of names:
// the Lua sources (operations.ts, lua-windows.ts) are generated from these lists and the
// codec (codec.ts) reads and writes by the same names, so a script and its decoder cannot
// disagree on where a field is. A change to any list changes the wire: it is a new version
// of every operation using it (test/integration/ratelimit-protocol.test.ts pins each
// version's layout).
import { positions, replyLayout } from '../../redis/redis-operation.js';

/**
 * One window's ARGV values: kind 0 requests, 1 a budget (tokens or a tool's calls), 2 a
 * report-only budget (admit only), 3 a cost budget (its lease reserve is the cost one).
 */
export const WINDOW_VALUES = ['limit', 'windowMs', 'bucketMs', 'refundBucket', 'kind'] as const;
export const WINDOW_AT = positions(WINDOW_VALUES);
export const WINDOW_ARGS = WINDOW_VALUES.length;

/** admit's ARGV before the windows. nowMs "": the server's TIME; slotStreams 0: no slot. */
export const ADMIT_HEAD = ['nowMs', 'count', 'leaseUnits', 'leaseTokens', 'leaseCost', 'refundUnits', 'refundTokens', 'refundCost', 'slotStreams', 'slotLeaseMs', 'slotHead'] as const;
export const ADMIT_AT = positions(ADMIT_HEAD);
/** renew's ARGV before the windows. leaseFromMs 0: count the lease now. */
export const RENEW_HEAD = ['units', 'tokens', 'cost', 'leaseFromMs'] as const;
export const RENEW_AT = positions(RENEW_HEAD);
/** charge's ARGV before the windows (then one amount per window after them). */
export const CHARGE_HEAD = ['nowMs'] as const;
export const CHARGE_AT = positions(CHARGE_HEAD);
/** refund's ARGV before the windows. */
export const REFUND_HEAD = ['nowMs', 'units', 'tokens', 'cost'] as const;
export const REFUND_AT = positions(REFUND_HEAD);
/** slotRefresh's ARGV before the slot members it refreshes. */
export const SLOT_REFRESH_HEAD = ['leaseMs'] as const;
export const SLOT_REFRESH_AT = positions(SLOT_REFRESH_HEAD);

/** admit's and renew's reply head (after the tag), then WINDOW_FIGURES per window. */
export const DECISION_REPLY = replyLayout('admitted', 'retryAfterMs', 'nowMs', 'leaseUnits', 'leaseTokens', 'leaseValidMs', 'windowAdmitted', 'slotsFree', 'leaseCost');
/** Per window, after this call counted; the Lua locals that hold them carry the same names. */
export const WINDOW_FIGURES = ['remaining', 'resetMs', 'oldestMs'] as const;
export const FIGURE_AT = positions(WINDOW_FIGURES);
export const FIGURES_PER_WINDOW = WINDOW_FIGURES.length;
/** charge's and refund's reply: the server time they ran at. */
export const DONE_REPLY = replyLayout('nowMs');
/** slotRefresh's reply: the tag alone. */
export const SLOT_REFRESH_REPLY = replyLayout();

/** `ARGV[...]` of a position counted from 0 after `base` (a Lua expression, or none). */
export function luaArg(position: number, base?: string): string {
  return base === undefined ? `ARGV[${position + 1}]` : `ARGV[${base} + ${position}]`;
}
