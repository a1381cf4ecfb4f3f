// The limit stage for plans limited after the body (docs/design.md, "Agent-aware policy";
// docs/rate-limits.md "End-user windows", "Tool-call quotas", "Cost budgets"): what the request
// names (`context.user_id`, `tools`) is only known once its body is read, so such a plan's windows
// are counted then, in one admit call with the subject's own. Also here: the refusals of cost
// budgets and tool quotas, the tools withheld because their quota is spent, and the answer's
// charge when the response closes. chat-pipeline.ts calls these; its stages stay in order there.
import { GatewayError } from '../errors.js';
import type { Limits, RateWindow, ToolQuota } from '../config/schema.js';
import { metrics } from '../metrics/metrics.js';
import { endUserHash, namesEndUser } from '../ratelimit/end-user-hash.js';
import { hasTokenBudget, type ChargeUsage, type RateLimitDecision, type RateLimiter, type WindowStatus } from '../ratelimit/rate-limiter.js';
import { retryAfterSeconds } from '../ratelimit/rate-limit-headers.js';
import { microUsdOf } from '../ratelimit/window-math.js';
import { estimatedCostUsd } from '../request/cost.js';
import { tokensToCharge } from '../request/token-charge.js';
import type { ChatRequest } from './chat-request.js';
import { applyToolScope } from './tool-scope.js';

/** The stages the after-body limit hands its decision to. */
export interface AdmitStages {
  admit(request: ChatRequest, decision: RateLimitDecision): void;
  fail(request: ChatRequest, error: unknown): void;
}

/** Whether a plan is limited after the body: an end-user policy or tool-call quotas need the body's fields. */
export function limitedAfterBody(limits: Limits): boolean {
  return limits.endUser !== undefined || limits.toolCalls !== undefined;
}

// Window lists per plan and per set of named quota tools, built once: the limiter coalesces a
// turn's requests by list identity, and the memory limiter keeps counters by list order.
const listsByPlan = new WeakMap<Limits, Map<string, readonly RateWindow[]>>();
/** Beyond this many distinct named-tool sets per plan, lists are built per request (still correct). */
const MAX_CACHED_LISTS = 256;

/** The subject's (and end user's) windows, then each tool's quota: refusing for the named tools, reporting for the others. */
export function policyWindows(limits: Limits, named: ReadonlySet<string> | null): readonly RateWindow[] {
  const base = limits.endUser?.windows ?? limits.windows;
  const quotas = limits.toolCalls;
  if (quotas === undefined) return base;
  let key = '';
  for (const quota of quotas) key += named !== null && named.has(quota.tool) ? '1' : '0';
  let lists = listsByPlan.get(limits);
  if (lists === undefined) listsByPlan.set(limits, (lists = new Map()));
  const known = lists.get(key);
  if (known !== undefined) return known;
  const list = [...base];
  for (const quota of quotas) list.push(...(named !== null && named.has(quota.tool) ? quota.windows : quota.reports));
  if (lists.size < MAX_CACHED_LISTS) lists.set(key, list);
  return list;
}

/** What an answer is charged to: every budget of the plan, each tool's quota once (the same list for every request of the plan). */
export function chargeWindows(limits: Limits): readonly RateWindow[] {
  const quotas = limits.toolCalls;
  if (quotas === undefined) return limits.endUser?.windows ?? limits.windows;
  return policyWindows(limits, allTools(quotas));
}

const allToolsOf = new WeakMap<readonly ToolQuota[], ReadonlySet<string>>();
function allTools(quotas: readonly ToolQuota[]): ReadonlySet<string> {
  let tools = allToolsOf.get(quotas);
  if (tools === undefined) allToolsOf.set(quotas, (tools = new Set(quotas.map((quota) => quota.tool))));
  return tools;
}

/** The tools the request itself names (validated: unique strings), or null when it names none. */
function namedTools(tools: readonly string[] | null): ReadonlySet<string> | null {
  return tools !== null && tools.length > 0 ? new Set(tools) : null;
}

/**
 * The subject's windows, its end user's and its tool quotas in one decision, per (subject,
 * `context.user_id`) on a plan with an end-user policy; requests without one share the
 * anonymous end user, unless the policy requires the field.
 */
export function limitAfterBody(limiter: RateLimiter, stages: AdmitStages, request: ChatRequest, body: Buffer, parsed: unknown): void {
  const { state } = request;
  const limits = request.afterBodyLimits!;
  const endUserLimits = limits.endUser;
  if (endUserLimits?.require === true && !namesEndUser(state.userId)) {
    throw new GatewayError('invalid_request', { param: 'context.user_id', message: 'This key\'s plan requires a non-blank "context.user_id": the end user the request is for.' });
  }
  const subject = request.limitSubject;
  const endUser = endUserLimits === undefined ? undefined : endUserHash(subject, state.userId);
  // Until the limit, toolsGiven holds only the request's own list (chat-pipeline.ts forward).
  const windows = policyWindows(limits, limits.toolCalls === undefined ? null : namedTools(state.toolsGiven));
  if (limits.toolCalls !== undefined || hasTokenBudget(windows) || (limits.cost?.length ?? 0) > 0) {
    request.tokenWindows = chargeWindows(limits);
    request.tokenSubject = subject;
    request.tokenEndUser = endUser;
  }
  request.body = body;
  request.parsed = parsed;
  const decision = limiter.consumeNow(subject, windows, request.limitCap, endUser);
  if (decision !== undefined) {
    stages.admit(request, decision);
    return;
  }
  void limiter.consume(subject, windows, request.limitCap, endUser).then(
    (decided) => stages.admit(request, decided),
    (error: unknown) => stages.fail(request, error),
  );
}

/**
 * The budget that refused a decision (a full window that refuses), or undefined when a request
 * window is full (that refusal is `rate_limit_exceeded`, whatever else is spent). Token budgets
 * outrank cost budgets, which outrank tool quotas: the broader the budget, the more it says.
 */
export function refusingBudget(decision: RateLimitDecision): WindowStatus | undefined {
  let budget: WindowStatus | undefined;
  for (const status of decision.windows) {
    if (status.remaining > 0 || status.reportOnly === true) continue;
    if (status.tokens === true) {
      if (budget === undefined || budget.tokens !== true) budget = status;
    } else if (status.cost === true) {
      if (budget === undefined || budget.tool !== undefined) budget = status;
    } else if (status.tool !== undefined) {
      budget ??= status;
    } else {
      return undefined;
    }
  }
  return budget;
}

/** Throws the refusal of a spent cost budget or tool quota (token budgets and request windows are the pipeline's). */
export function refuseByPolicyBudget(request: ChatRequest, decision: RateLimitDecision, budget: WindowStatus): void {
  const { state } = request;
  if (budget.cost === true) {
    metrics.rateLimited.inc({ plan: state.key!.plan });
    state.refusal = 'cost_budget_exceeded';
    throw new GatewayError('cost_budget_exceeded', { retryAfterSeconds: retryAfterSeconds(decision) });
  }
  if (budget.tool !== undefined) {
    metrics.rateLimited.inc({ plan: state.key!.plan });
    state.refusal = 'tool_budget_exceeded';
    throw new GatewayError('tool_budget_exceeded', {
      retryAfterSeconds: retryAfterSeconds(decision),
      param: 'tools',
      message: `The plan's quota of calls to the tool "${budget.tool}" is spent; retry after the time in the Retry-After header, or send the request without it.`,
    });
  }
}

/** Tools whose quota (any of its windows) is spent, in the plan's order; empty when none is. */
export function exhaustedTools(decision: RateLimitDecision): string[] {
  const tools: string[] = [];
  for (const status of decision.windows) {
    if (status.tool !== undefined && status.remaining === 0 && !tools.includes(status.tool)) tools.push(status.tool);
  }
  return tools;
}

/**
 * An admitted request that named no tools, on a plan with tool quotas: it is forwarded with the
 * known list (the key's scope, else the agent's allow-list; tool-scope.ts) less the tools whose
 * quota is spent, which the answer names in `Tools-Withheld` and the audit record in
 * `tools_withheld`. A request that named its tools keeps them (a spent one was refused).
 */
export function withholdSpentTools(request: ChatRequest, decision: RateLimitDecision): void {
  const { state } = request;
  if (state.toolsGiven !== null || request.body === undefined) return;
  const spent = exhaustedTools(decision);
  const scope = state.key!.tools ?? null;
  const decided = applyToolScope(state, request.parsed as Record<string, unknown>, request.body, scope, request.agent!.tools, spent.length > 0 ? new Set(spent) : undefined);
  request.body = decided.body;
  if (decided.withheld.length === 0) return;
  state.toolsWithheld = decided.withheld;
  state.responseHeaders.push('Tools-Withheld', decided.withheld.join(', '));
}

/**
 * What the answer is charged (docs/rate-limits.md "Token budgets", "Cost budgets", "Tool-call
 * quotas"): an answer without a valid count is charged the cost of the tokens its token budgets
 * are charged (what was relayed, decision 0044), so leaving early escapes neither budget.
 */
export function answerUsage(request: ChatRequest): ChargeUsage {
  const { state } = request;
  const tokens = tokensToCharge(state);
  const cost = state.costUsd ?? estimatedCostUsd(tokens, state, request.config.pricing);
  return { tokens, microUsd: microUsdOf(cost), toolCalls: state.toolCalls };
}

/** finish()'s charge: batched by the limiter, never awaited. */
export function chargeAnswer(limiter: RateLimiter, request: ChatRequest): void {
  const windows = request.tokenWindows;
  if (windows === undefined) return;
  limiter.charge(request.tokenSubject, windows, answerUsage(request), request.tokenEndUser);
}
