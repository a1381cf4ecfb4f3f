// Why the rate limiter refused a request: one kind, named as the audit outcome it becomes
// (src/http/request-outcome.ts). The policy dimensions of docs/design.md, "Agent-aware policy" add their
// own kinds here (tool and cost budgets) rather than one more flag on the request state.
export type RateLimitRefusal = 'rate_limited' | 'token_budget_exceeded' | 'cost_budget_exceeded' | 'tool_budget_exceeded' | 'concurrency_limit_exceeded';
