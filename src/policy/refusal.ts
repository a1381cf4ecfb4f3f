// The one function that says why a decision refused (docs/policy.md "Refusals"; decision 0077):
// which error, naming which field, by which policy. Read from the window statuses alone, so
// the memory and Redis limiters' decisions classify alike.
//
// The kind that decides: a full request window outranks every budget (rate_limit_exceeded,
// whatever else is spent); then token budgets, then cost budgets, then tool quotas: the
// broader the budget, the more it says. The scope named: the broadest among every full window
// that refuses (account, then the subject, then an end user, then a session), so an end user
// or a session is named only when the subject and the account had room.
import type { ErrorType } from '../errors.js';
import type { LimitKind, LimitScope } from '../config/limit-window.js';
import { EVERY_TOOL } from '../config/limit-window.js';
import type { RateLimitDecision, WindowStatus } from '../ratelimit/rate-limiter.js';
import type { RateLimitRefusal } from '../request/rate-limit-refusal.js';

export interface Refusal {
  readonly error: ErrorType;
  /** The audit outcome it becomes. */
  readonly outcome: RateLimitRefusal;
  /** The field the client can act on (`tools`, `context.user_id`, `context.session_id`, `account`), if any. */
  readonly param: string | undefined;
  /** The window (policy) that refused, as RateLimit-Policy names it. */
  readonly policy: string;
  readonly scope: LimitScope;
  readonly kind: LimitKind;
  /** A tool quota's tool (`"*"`: every tool). */
  readonly tool: string | undefined;
}

const KIND_RANK: Readonly<Record<LimitKind, number>> = { requests: 3, tokens: 2, cost: 1, tool_calls: 0 };
const SCOPE_RANK: Readonly<Record<LimitScope, number>> = { account: 3, subject: 2, user: 1, session: 0 };
const SCOPE_PARAM: Readonly<Record<LimitScope, string | undefined>> = { account: 'account', subject: undefined, user: 'context.user_id', session: 'context.session_id' };

const ERROR: Readonly<Record<LimitKind, { error: ErrorType; outcome: RateLimitRefusal }>> = {
  requests: { error: 'rate_limit_exceeded', outcome: 'rate_limited' },
  tokens: { error: 'token_budget_exceeded', outcome: 'token_budget_exceeded' },
  cost: { error: 'cost_budget_exceeded', outcome: 'cost_budget_exceeded' },
  tool_calls: { error: 'tool_budget_exceeded', outcome: 'tool_budget_exceeded' },
};

function kindOf(status: WindowStatus): LimitKind {
  return status.kind ?? 'requests';
}

function scopeOf(status: WindowStatus): LimitScope {
  return status.scope ?? 'subject';
}

/** Why a refused decision refused; a decision no full window refused (a stale read) is a request window's refusal. */
export function classifyRefusal(decision: RateLimitDecision): Refusal {
  let deciding: WindowStatus | undefined;
  let broadest: LimitScope | undefined;
  for (const status of decision.windows) {
    if (status.remaining > 0 || status.reportOnly === true) continue;
    if (deciding === undefined || KIND_RANK[kindOf(status)] > KIND_RANK[kindOf(deciding)]) deciding = status;
    const scope = scopeOf(status);
    if (broadest === undefined || SCOPE_RANK[scope] > SCOPE_RANK[broadest]) broadest = scope;
  }
  const kind = deciding === undefined ? 'requests' : kindOf(deciding);
  const scope = broadest ?? 'subject';
  // A subject's tool quota names the request's `tools`: leaving the tool out is the way on.
  const param = kind === 'tool_calls' && scope === 'subject' ? 'tools' : SCOPE_PARAM[scope];
  return { ...ERROR[kind], param, policy: deciding?.name ?? '', scope, kind, tool: deciding?.tool };
}

/** The message of a tool quota's refusal, naming the tool (cut to its bounded length by the schema). */
export function toolRefusalMessage(refusal: Refusal): string {
  const which = refusal.tool === EVERY_TOOL ? 'tool calls' : `calls to the tool "${refusal.tool}"`;
  const whose = refusal.scope === 'session' ? "this session's" : refusal.scope === 'account' ? "the account's" : "the plan's";
  return `The ${whose} quota of ${which} is spent; retry after the time in the Retry-After header, or send the request without it.`;
}
