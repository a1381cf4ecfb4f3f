// One limit as the limiter takes it (docs/policy.md "Limits and scopes"): a window over a
// sliding period, of one kind and in one scope. The kind says what it counts and when;
// the scope says whose count it is. Both are data the limiter and the refusal classifier
// read by field, never flags to combine (decision 0077).

/**
 * What a limit counts: `requests` are counted at admission; the others are budgets, read at
 * admission and charged after the answer (window-math.ts chargeUnits) with the answer's
 * tokens, micro-dollars (`cost`) or calls of one tool (`tool_calls`).
 */
export type LimitKind = 'requests' | 'tokens' | 'cost' | 'tool_calls';

/**
 * Whose count it is (docs/design.md, "Agent runs and nested scopes"): the subject (account or
 * key, by `rate_limits.scope`), the whole account across its keys, one end user of the
 * subject (`context.user_id`) or one agent run (`context.session_id`).
 */
export type LimitScope = 'subject' | 'account' | 'user' | 'session';

interface WindowFields {
  name: string;
  limit: number;
  windowMs: number;
  scope: LimitScope;
}

export interface RequestWindow extends WindowFields {
  kind: 'requests';
}

export interface TokenWindow extends WindowFields {
  kind: 'tokens';
}

/** Counted in micro-dollars. */
export interface CostWindow extends WindowFields {
  kind: 'cost';
}

/**
 * How a tool quota's window takes part in one admission; the policy builds every form once per
 * quota, with the same name and so the same counter:
 * - `report`: the quota of a tool the request does not name, read and reported (which tools to
 *   withhold), never refusing;
 * - `charge`: refuses while spent, and the answer's calls of the tool are charged after it (a
 *   chat request: which tools the model calls is known only from its answer);
 * - `admit`: refuses while spent, and the call is counted by the admission itself, as a request
 *   is, so concurrent calls can never pass the quota between them (an MCP `tools/call`: the call
 *   is the request; decision 0117).
 */
export type ToolWindowUse = 'report' | 'charge' | 'admit';

/** Calls of `tool` (`"*"`: every tool call). */
export interface ToolCallsWindow extends WindowFields {
  kind: 'tool_calls';
  tool: string;
  use: ToolWindowUse;
}

export type RateWindow = RequestWindow | TokenWindow | CostWindow | ToolCallsWindow;

/** The tool name a `tool_calls` quota uses to count every tool call (docs/design.md section "Agent runs and nested scopes"). */
export const EVERY_TOOL = '*';
/** A quota named `{server}__*` counts every tool of that MCP server (docs/mcp.md "Quotas"). */
export const ALL_OF_A_SERVER = '__*';

/** Whether admitting a request counts one unit in the window: a request window, or a tool quota used to admit a call. */
export function countsAtAdmission(window: RateWindow): boolean {
  return window.kind === 'requests' || (window.kind === 'tool_calls' && window.use === 'admit');
}

/** The name prefix of each scope's windows in headers and keys (`user-minute`, `session-day`). */
export const SCOPE_NAME_PREFIX: Readonly<Record<LimitScope, string>> = { subject: '', account: 'account-', user: 'user-', session: 'session-' };
