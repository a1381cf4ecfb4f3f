// The MCP front door's one call into the policy room (docs/mcp.md "Quotas"; docs/policy.md
// "The policy room"): a `tools/call` is one request in the key's compiled admission policy —
// every scope of it: the subject, the account, the end user (`Agentgw-User-Id`) and the
// session (the gateway's MCP session) — and must find room in the `tool_calls` quotas named
// `{server}__{tool}`, `{server}__*` or `"*"`, which count it in the same atomic admission
// (their `admit` form, decision 0117): the call is known before it is forwarded, so it is
// counted as a request is, concurrent calls cannot pass a quota between them, and nothing is
// charged after. The same compiled policy, the same single admit call and the same refusal
// classification as a chat request: no second copy of the limit logic.
import { GatewayError } from '../errors.js';
import type { AuthenticatedKey } from '../keys/key-record.js';
import type { GatewayConfig } from '../config/schema.js';
import { endUserHash } from '../ratelimit/end-user-hash.js';
import { scopeKeys, type RateLimitDecision, type RateLimiter } from '../ratelimit/rate-limiter.js';
import type { AdmissionPolicy } from '../policy/admission-policy.js';
import { countedId } from '../policy/admission.js';
import { admissionPolicyOf } from '../policy/policy-cache.js';

export interface ToolAdmission {
  /** Undefined when the policy has nothing to decide (no window in any scope). */
  decision: RateLimitDecision | undefined;
}

/** The identity a call counts for beside its key. */
export interface ToolCaller {
  /** `Agentgw-User-Id` (null: the subject's anonymous end user). */
  userId: string | null;
  /** The gateway's MCP session (null: none yet). */
  sessionId: string | null;
}

/** The key's compiled policy (its plan's, or its own limits over it); undefined when its plan is not configured. */
export function policyOfKey(config: GatewayConfig, key: AuthenticatedKey): AdmissionPolicy | undefined {
  const plan = config.plans.get(key.plan);
  return plan === undefined ? undefined : admissionPolicyOf(plan, key.limits, config.rateLimits.scope === 'key');
}

/** Counts one call of `{server}__{tool}` in every scope of the policy; `decision` is undefined when the policy has nothing to decide. */
export async function admitToolCall(limiter: RateLimiter, config: GatewayConfig, key: AuthenticatedKey, policy: AdmissionPolicy, server: string, tool: string, caller: ToolCaller): Promise<ToolAdmission> {
  const account = `account:${key.account}`;
  const owner = config.rateLimits.scope === 'account' ? account : `key:${key.keyId}`;
  const room = policy.roomIsAccount;
  const subject = room ? account : owner;
  if (policy.scopes.user.require && countedId(caller.userId) === null) {
    throw new GatewayError('invalid_request', { param: 'Agentgw-User-Id', message: 'This key\'s plan requires the end user the call is for: send the "Agentgw-User-Id" header.' });
  }
  const sessionId = policy.hasSessionScope ? countedId(caller.sessionId) : null;
  if (policy.scopes.session.require && sessionId === null) {
    throw new GatewayError('invalid_request', { param: 'Mcp-Session-Id', message: "This key's plan counts agent runs: initialize an MCP session first." });
  }
  // Hashed with the owner, as a chat request's end users and runs are (admission.ts).
  const userHash = policy.hasUserScope ? endUserHash(owner, countedId(caller.userId)) : undefined;
  const sessionHash = sessionId === null ? undefined : endUserHash(owner, sessionId);
  const scopes = scopeKeys(userHash, sessionHash, room ? key.keyId : undefined);
  // The quotas that count this call in their admit form, the others reporting.
  const windows = policy.hasToolQuotas ? policy.callWindowsFor(new Set([`${server}__${tool}`, `${server}__*`]), sessionId !== null) : policy.windowsFor(null, sessionId !== null);
  if (windows.length === 0) return { decision: undefined };
  const decision = limiter.consumeNow(subject, windows, undefined, scopes) ?? (await limiter.consume(subject, windows, undefined, scopes));
  return { decision };
}
