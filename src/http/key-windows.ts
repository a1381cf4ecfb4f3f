// A key's own limits (its record's \`limits\`) resolved with its plan into the windows the
// limiter takes: once per key and plan, not per request. The cache is keyed by the limits
// object the key cache holds for the key, so a changed key (a new record) or a reloaded plan
// (a new plan object) resolves again, and a key dropped from the cache frees its entry.
import { planWithKeyLimits, type KeyLimits, type PlanConfig, type RateWindow } from '../config/schema.js';

const resolved = new WeakMap<KeyLimits, { plan: PlanConfig; windows: readonly RateWindow[] }>();

export function keyWindows(limits: KeyLimits, plan: PlanConfig): readonly RateWindow[] {
  const known = resolved.get(limits);
  if (known !== undefined && known.plan === plan) return known.windows;
  const windows = planWithKeyLimits(plan, limits).windows;
  resolved.set(limits, { plan, windows });
  return windows;
}
