// The brute-force model of a budget window that the window-math property tests compare against
// (token budgets, cost budgets, tool-call quotas): every charge kept as (time, units); at any
// moment the model sums the charges whose bucket still counts.
import type { RateWindow } from '../../src/ratelimit/rate-limiter.js';
import { bucketExpiryMs, bucketWidthMs, firstCountedBucket } from '../../src/ratelimit/window-math.js';

export interface ModelCharge {
  atMs: number;
  units: number;
}

/** Units the model counts at nowMs: charges whose bucket is at or after the first counted one. */
export function modelTotal(charges: readonly ModelCharge[], window: RateWindow, nowMs: number): number {
  const bucketMs = bucketWidthMs(window.windowMs);
  const first = firstCountedBucket(nowMs, window.windowMs, bucketMs);
  let total = 0;
  for (const charge of charges) if (Math.floor(charge.atMs / bucketMs) >= first) total += charge.units;
  return total;
}

/** The first ms at or after nowMs when the model's total falls below the limit (no new charges), by trying every expiry. */
export function modelWaitMs(charges: readonly ModelCharge[], window: RateWindow, nowMs: number): number {
  if (modelTotal(charges, window, nowMs) < window.limit) return 0;
  const bucketMs = bucketWidthMs(window.windowMs);
  const candidates = charges.map((c) => bucketExpiryMs(Math.floor(c.atMs / bucketMs), window.windowMs, bucketMs)).filter((t) => t > nowMs).sort((a, b) => a - b);
  for (const at of candidates) if (modelTotal(charges, window, at) < window.limit) return at - nowMs;
  throw new Error('the model never frees the budget');
}

/**
 * The model's charges per (scope instance, window name), for the tests of several scopes: the
 * returned function gives the list of one window in one instance, made empty on first use.
 */
export function scopedModel(): (window: RateWindow, instance: string) => ModelCharge[] {
  const model = new Map<string, ModelCharge[]>();
  return (window, instance) => {
    const id = `${instance}|${window.name}`;
    let list = model.get(id);
    if (list === undefined) model.set(id, (list = []));
    return list;
  };
}
