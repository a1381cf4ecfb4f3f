// Where compiled policies live (decision 0077): with the plan object a config load made, and
// with the `limits` object of a key record the key cache holds. A reloaded plan (a new object)
// or a changed key (a new record, so a new limits object) compiles again on its first request;
// a key dropped from the cache frees its entry. Never compiled per request.
import type { KeyLimits, PlanConfig } from '../config/schema.js';
import { planWithKeyLimits } from '../config/schema.js';
import { compilePolicy, type AdmissionPolicy } from './admission-policy.js';

interface Compiled {
  plan: PlanConfig;
  subjectScopeIsKey: boolean;
  policy: AdmissionPolicy;
}

const byPlan = new WeakMap<PlanConfig, Compiled>();
const byKeyLimits = new WeakMap<KeyLimits, Compiled>();

/** The policy of a plan and a key's own limits (null: the plan's alone), compiled once. */
export function admissionPolicyOf(plan: PlanConfig, keyLimits: KeyLimits | null | undefined, subjectScopeIsKey: boolean): AdmissionPolicy {
  return keyLimits == null ? cached(byPlan, plan, plan, null, subjectScopeIsKey) : cached(byKeyLimits, keyLimits, plan, keyLimits, subjectScopeIsKey);
}

function cached<Owner extends object>(cache: WeakMap<Owner, Compiled>, owner: Owner, plan: PlanConfig, keyLimits: KeyLimits | null, subjectScopeIsKey: boolean): AdmissionPolicy {
  const known = cache.get(owner);
  if (known !== undefined && known.plan === plan && known.subjectScopeIsKey === subjectScopeIsKey) return known.policy;
  const policy = compilePolicy(keyLimits === null ? plan : planWithKeyLimits(plan, keyLimits), subjectScopeIsKey);
  cache.set(owner, { plan, subjectScopeIsKey, policy });
  return policy;
}
