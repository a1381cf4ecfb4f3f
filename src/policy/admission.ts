// One request's admission under its compiled policy (docs/policy.md "The policy room"): the
// limit stage's one object. It knows the request's subject and scope instances, asks the
// limiter once for every scope (one admit call), turns a refusal into its error, withholds
// spent tools from an admitted request that named none, and charges the answer when the
// response closes. The pipeline asks it; it never branches on which scopes a plan has: those
// are fields of the policy (admission-policy.ts).
import { GatewayError } from '../errors.js';
import type { AuthenticatedKey } from '../keys/key-record.js';
import type { Pricing } from '../config/pricing-schema.js';
import { metrics } from '../metrics/metrics.js';
import { endUserHash } from '../ratelimit/end-user-hash.js';
import { retryAfterSeconds } from '../ratelimit/rate-limit-headers.js';
import { scopeKeys, type ChargeUsage, type RateLimitDecision, type RateLimiter, type RateWindow, type ScopeKeys, type StreamCap } from '../ratelimit/rate-limiter.js';
import { microUsdOf } from '../ratelimit/window-math.js';
import { estimatedCostUsd } from '../request/cost.js';
import type { RequestState } from '../request/request-state.js';
import { tokensToCharge } from '../request/token-charge.js';
import type { AdmissionPolicy } from './admission-policy.js';
import { classifyRefusal, toolRefusalMessage } from './refusal.js';
import { applyToolScope } from './tool-scope.js';

/** A scope id as counted: blank or whitespace-only ids count as absent (decision 0079). */
export function countedId(id: string | null): string | null {
  return id === null || id.trim() === '' ? null : id;
}

const REQUIRE_MESSAGE = {
  user: 'This key\'s plan requires a non-blank "context.user_id": the end user the request is for.',
  session: 'This key\'s plan requires "context.session_id": the agent run the request belongs to.',
};

export class Admission {
  /** The limiter's subject: the account or the key (by `rate_limits.scope`), or the key's account when the policy has an account scope. */
  readonly subject: string;
  /** The windows the request is decided in (the policy's list for what the request names). */
  windows: readonly RateWindow[];
  scopes: ScopeKeys | undefined;
  /** The subject as `rate_limits.scope` names it: end users and sessions are its own, hashed with it. */
  readonly owner: string;
  /** The key's account as a subject (`account:<id>`): where the account scope's thresholds are tracked. */
  readonly account: string;
  /** The session id counted (a policy with a session scope), for the threshold events. */
  sessionId: string | null = null;
  /** What the answer is charged to, once decided (null: nothing). */
  private chargeList: readonly RateWindow[] | null = null;
  readonly cap: StreamCap | undefined;
  /** The decision waits for the body (`context.user_id`, `context.session_id`, `tools`). */
  readonly afterBody: boolean;

  constructor(
    readonly policy: AdmissionPolicy,
    key: AuthenticatedKey,
    subjectScopeIsAccount: boolean,
    stream: boolean,
  ) {
    const room = policy.roomIsAccount;
    this.account = `account:${key.account}`;
    this.owner = subjectScopeIsAccount ? this.account : `key:${key.keyId}`;
    this.subject = room ? this.account : this.owner;
    this.scopes = room ? scopeKeys(undefined, undefined, key.keyId) : undefined;
    this.cap = stream ? policy.cap : undefined;
    this.afterBody = policy.phase === 'after-body';
    this.windows = policy.windowsFor(null, false);
    if (!this.afterBody) this.chargeList = policy.chargeList(false);
  }

  /**
   * The body's fields, on a policy decided after the body: the end user and the session the
   * request counts for (a required one missing is 400 and changes nothing), and the tools it
   * names (their quotas refuse; the others only report).
   */
  bodyRead(state: RequestState): void {
    const { policy } = this;
    const user = policy.scopes.user;
    const session = policy.scopes.session;
    if (user.require && countedId(state.userId) === null) throw new GatewayError('invalid_request', { param: 'context.user_id', message: REQUIRE_MESSAGE.user });
    const sessionId = policy.hasSessionScope ? countedId(state.sessionId) : null;
    if (session.require && sessionId === null) throw new GatewayError('invalid_request', { param: 'context.session_id', message: REQUIRE_MESSAGE.session });
    // Requests without a user id share the subject's anonymous end user; without a session id, no session counts them.
    // Hashed with the owner (the key, under an account's room too): each key's end users and runs are its own.
    const userHash = policy.hasUserScope ? endUserHash(this.owner, state.userId) : undefined;
    const sessionHash = sessionId === null ? undefined : endUserHash(this.owner, sessionId);
    this.sessionId = sessionId;
    this.scopes = scopeKeys(userHash, sessionHash, this.scopes?.key);
    const tools = state.toolsGiven;
    this.windows = policy.windowsFor(policy.hasToolQuotas && tools !== null && tools.length > 0 ? new Set(tools) : null, sessionId !== null);
    this.chargeList = policy.chargeList(sessionId !== null);
  }

  /** The decision when the limiter has it at once (in memory, from a lease); else undefined and nothing counted. */
  decideNow(limiter: RateLimiter): RateLimitDecision | undefined {
    return limiter.consumeNow(this.subject, this.windows, this.cap, this.scopes);
  }

  decide(limiter: RateLimiter): Promise<RateLimitDecision> {
    return limiter.consume(this.subject, this.windows, this.cap, this.scopes);
  }

  /** The error of a refused decision (classified once, refusal.ts), with its metric and audit outcome. */
  refuse(decision: RateLimitDecision, state: RequestState): GatewayError {
    const plan = state.key!.plan;
    if (decision.concurrencyLimited === true) {
      metrics.concurrencyLimited.inc({ plan });
      state.refusal = 'concurrency_limit_exceeded';
      return new GatewayError('concurrency_limit_exceeded', { retryAfterSeconds: retryAfterSeconds(decision) });
    }
    const refusal = classifyRefusal(decision);
    if (refusal.scope === 'user') metrics.endUserLimited.inc({ plan });
    if (refusal.kind === 'tokens') metrics.tokenBudgetExceeded.inc({ plan });
    else metrics.rateLimited.inc({ plan });
    state.refusal = refusal.outcome;
    const message = refusal.kind === 'tool_calls' ? toolRefusalMessage(refusal) : undefined;
    return new GatewayError(refusal.error, { retryAfterSeconds: retryAfterSeconds(decision), param: refusal.param, message });
  }

  /**
   * The body an admitted request is forwarded with. A request that named no tools, on a policy
   * with tool quotas, is given the known list (the key's scope, else the agent's allow-list;
   * tool-scope.ts) less the tools whose quota is spent, which the answer names in
   * `Tools-Withheld` and the audit record in `tools_withheld`.
   */
  admittedBody(decision: RateLimitDecision, state: RequestState, parsed: unknown, body: Buffer, allowList: ReadonlySet<string> | undefined): Buffer {
    if (!this.policy.hasToolQuotas || state.toolsGiven !== null) return body;
    const spent = exhaustedTools(decision);
    const decided = applyToolScope(state, parsed as Record<string, unknown>, body, state.key!.tools ?? null, allowList, spent.size > 0 ? spent : undefined);
    if (decided.withheld.length > 0) {
      state.toolsWithheld = decided.withheld;
      state.responseHeaders.push('Tools-Withheld', decided.withheld.join(', '));
    }
    return decided.body;
  }

  /** finish()'s charge: batched by the limiter, never awaited; nothing on a policy without budgets. */
  charge(limiter: RateLimiter, state: RequestState, pricing: Pricing | null): void {
    const windows = this.chargeList;
    if (windows === null) return;
    limiter.charge(this.subject, windows, answerUsage(state, pricing), this.scopes);
  }
}

/** Tools whose quota (any of its windows, in any scope) is spent. */
export function exhaustedTools(decision: RateLimitDecision): Set<string> {
  const tools = new Set<string>();
  for (const status of decision.windows) if (status.tool !== undefined && status.remaining === 0) tools.add(status.tool);
  return tools;
}

/**
 * What the answer is charged (docs/rate-limits.md "Token budgets", "Cost budgets", "Tool-call
 * quotas"): an answer without a valid count is charged the cost of the tokens its token budgets
 * are charged (what was relayed, decision 0044), so leaving early escapes neither budget.
 */
export function answerUsage(state: RequestState, pricing: Pricing | null): ChargeUsage {
  const tokens = tokensToCharge(state);
  // An answer left before it named its model is priced as its agent's declared one, else at the highest price (decision 0083).
  const cost = state.costUsd ?? estimatedCostUsd(tokens, state, pricing);
  return { tokens, microUsd: microUsdOf(cost), toolCalls: state.toolCalls };
}
