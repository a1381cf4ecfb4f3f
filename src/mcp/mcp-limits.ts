// The MCP front door's one call into the limiter (docs/mcp.md "Quotas"): a `tools/call` counts
// one request in the plan's windows and, before it is forwarded, must find room in the
// `tool_calls` quotas named `{server}__{tool}` and `{server}__*`; those quotas are charged one
// call when the call was forwarded. This adapter is the only place the front door meets the
// limiter's API, so a compiled admission policy can replace it without touching the stages.
import type { GatewayConfig, Limits, RateWindow } from '../config/schema.js';
import { keyPlanLimits } from '../http/key-limits.js';
import type { AuthenticatedKey } from '../keys/key-record.js';
import type { RateLimitDecision, RateLimiter } from '../ratelimit/rate-limiter.js';

export interface ToolAdmission {
  subject: string;
  /** The quota windows this call is charged to once forwarded (empty: none). */
  quotaWindows: readonly RateWindow[];
  /** The quota names matched (`files__read_file`, `files__*`): what the charge counts. */
  quotaTools: readonly string[];
  decision: RateLimitDecision | undefined;
}

/** The key's limits: its own over its plan's; undefined when its plan is not configured. */
export function limitsOfKey(config: GatewayConfig, key: AuthenticatedKey): Limits | undefined {
  const plan = config.plans.get(key.plan);
  if (plan === undefined) return undefined;
  return key.limits == null ? plan : keyPlanLimits(key.limits, plan);
}

/** Counts one call of `{server}__{tool}`; `decision` is undefined when the plan has no window and no quota for it. */
export async function admitToolCall(limiter: RateLimiter, config: GatewayConfig, key: AuthenticatedKey, limits: Limits, server: string, tool: string): Promise<ToolAdmission> {
  const subject = config.rateLimits.scope === 'account' ? `account:${key.account}` : `key:${key.keyId}`;
  const quotaWindows: RateWindow[] = [];
  const quotaTools: string[] = [];
  if (limits.toolCalls !== undefined) {
    const exact = `${server}__${tool}`;
    const all = `${server}__*`;
    for (const quota of limits.toolCalls) {
      if (quota.tool !== exact && quota.tool !== all) continue;
      quotaWindows.push(...quota.windows);
      quotaTools.push(quota.tool);
    }
  }
  const windows = quotaWindows.length === 0 ? limits.windows : [...limits.windows, ...quotaWindows];
  if (windows.length === 0) return { subject, quotaWindows, quotaTools, decision: undefined };
  const decision = limiter.consumeNow(subject, windows) ?? (await limiter.consume(subject, windows));
  return { subject, quotaWindows, quotaTools, decision };
}

/** The charge of a forwarded call to its quotas (batched by the limiter, never awaited). */
export function chargeToolCall(limiter: RateLimiter, admission: ToolAdmission): void {
  if (admission.quotaWindows.length === 0) return;
  limiter.charge(admission.subject, admission.quotaWindows, { tokens: 0, toolCalls: admission.quotaTools });
}

/** Why a refused decision refused: a spent quota of the tool, else the plan's request windows. */
export function refusalType(decision: RateLimitDecision): 'tool_budget_exceeded' | 'rate_limit_exceeded' | 'token_budget_exceeded' {
  let byTool = false;
  for (const status of decision.windows) {
    if (status.remaining > 0 || status.reportOnly === true) continue;
    if (status.tool === undefined && status.tokens !== true && status.cost !== true) return 'rate_limit_exceeded';
    if (status.tool !== undefined) byTool = true;
  }
  return byTool ? 'tool_budget_exceeded' : 'token_budget_exceeded';
}
