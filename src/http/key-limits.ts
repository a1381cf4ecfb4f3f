// A key's own limits (its record's `limits`) resolved with its plan into the limits the
// limiter takes (windows, and the concurrency cap): once per key and plan, not per request.
// The cache is keyed by the limits object the key cache holds for the key, so a changed key
// (a new record) or a reloaded plan (a new plan object) resolves again, and a key dropped
// from the cache frees its entry.
import { planWithKeyLimits, type KeyLimits, type PlanConfig } from '../config/schema.js';

const resolved = new WeakMap<KeyLimits, { plan: PlanConfig; limits: PlanConfig }>();

export function keyPlanLimits(limits: KeyLimits, plan: PlanConfig): PlanConfig {
  const known = resolved.get(limits);
  if (known !== undefined && known.plan === plan) return known.limits;
  const own = planWithKeyLimits(plan, limits);
  resolved.set(limits, { plan, limits: own });
  return own;
}
