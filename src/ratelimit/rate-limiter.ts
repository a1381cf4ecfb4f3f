// The request pipeline's view of rate limiting: one call per request, all windows at once.
import type { RateWindow, StreamCap } from '../config/schema.js';
import type { LimitKind, LimitScope } from '../config/limit-window.js';

export type { LimitKind, LimitScope, RateWindow, StreamCap };

export interface WindowStatus {
  name: string;
  limit: number;
  windowMs: number;
  /** Requests (tokens, for a token window) still allowed in this window after this decision. */
  remaining: number;
  /** Milliseconds until one more request would be allowed in this window (0 if one is allowed now). */
  resetMs: number;
  /**
   * Milliseconds until this window's quota starts to recover (the IETF `RateLimit` header's
   * `t`): while remaining > 0, until the oldest request it counts stops counting (0 if it
   * counts none); when remaining is 0, equal to resetMs.
   */
  recoverMs: number;
  /** What the window counts; absent on a request window (its figures count requests). */
  kind?: Exclude<LimitKind, 'requests'>;
  /** Whose count it is; absent on the subject's own window. */
  scope?: Exclude<LimitScope, 'subject'>;
  /** The tool of a tool-call quota's status (`"*"`: every tool). */
  tool?: string;
  /** A window that only reported (a quota of a tool the request did not name): it never refuses. */
  reportOnly?: true;
}

/** A window's status from its figures (the one place that lays one out). */
export function windowStatus(window: RateWindow, remaining: number, resetMs: number, recoverMs: number): WindowStatus {
  const status: WindowStatus = { name: window.name, limit: window.limit, windowMs: window.windowMs, remaining, resetMs, recoverMs };
  if (window.kind !== 'requests') status.kind = window.kind;
  if (window.scope !== 'subject') status.scope = window.scope;
  if (window.kind === 'tool_calls') {
    status.tool = window.tool;
    if (window.use === 'report') status.reportOnly = true;
  }
  return status;
}

/** A refusal that no request window made: every full window is a token budget. */
export function refusedByTokenBudget(decision: RateLimitDecision): boolean {
  for (const window of decision.windows) if (window.kind !== 'tokens' && window.remaining === 0 && window.reportOnly !== true) return false;
  return true;
}

/**
 * Whether a refused decision was refused by an end user's window (one with no room left);
 * the subject's own full windows outrank it (the policy's refusal classifier, src/policy/,
 * ranks every scope the same way).
 */
export function refusedByEndUser(decision: RateLimitDecision): boolean {
  let byEndUser = false;
  for (const status of decision.windows) {
    if (status.remaining > 0 || status.reportOnly === true) continue;
    if (status.scope !== 'user') return false;
    byEndUser = true;
  }
  return byEndUser;
}

/** Whether any window of a list is a token budget: each window's own kind, wherever it stands. */
export function hasTokenBudget(windows: readonly RateWindow[]): boolean {
  for (const window of windows) if (window.kind === 'tokens') return true;
  return false;
}

/** Whether any window of a list is a cost budget (its lease reserves micro-dollars; decision 0076). */
export function hasCostBudget(windows: readonly RateWindow[]): boolean {
  for (const window of windows) if (window.kind === 'cost') return true;
  return false;
}

/**
 * A stream slot held under a concurrency cap (docs/rate-limits.md "Concurrency caps"): kept
 * by the limiter that granted it until release() is called once, when the stream ends.
 */
export interface StreamSlot {
  release(): void;
}

export interface RateLimitDecision {
  allowed: boolean;
  /** One entry per configured window, in config order. */
  windows: WindowStatus[];
  /** When rejected: milliseconds until a request would be admitted in every window. */
  retryAfterMs: number;
  /** Admitted under a concurrency cap: the slot this request holds. */
  slot?: StreamSlot;
  /** Refused because the cap's slots were all held (the request windows had room). */
  concurrencyLimited?: true;
}

/** Retry-After for a concurrency refusal: a slot frees when some stream ends, which no window predicts. */
export const CONCURRENCY_RETRY_AFTER_MS = 1_000;

/**
 * The keyed hash of an end user's `context.user_id` (end-user-hash.ts; the anonymous bucket's
 * for none), or of an agent run's `context.session_id`: never the id in clear.
 */
export type EndUserHash = string;

/**
 * Which instance of each nested scope a request is counted in (docs/design.md, "Agent runs and
 * nested scopes"), built once per request by the admission (src/policy/). A window of scope
 * `user` counts under `user`, of scope `session` under `session`; with `key` set the subject is
 * the key's account (a policy with an account scope, `rate_limits.scope: key`) and the key's
 * own windows count under `key`. `id` is all of them in one string: the request's batches,
 * leases and charges are per (subject, id).
 */
export interface ScopeKeys {
  readonly user?: EndUserHash | undefined;
  readonly session?: EndUserHash | undefined;
  readonly key?: string | undefined;
  readonly id: string;
}

/** The scope keys of an end user alone. */
export function userScope(user: EndUserHash): ScopeKeys {
  return { user, id: `u${user}` };
}

/** Scope keys from their parts; undefined when there are none (the subject alone). */
export function scopeKeys(user: EndUserHash | undefined, session: EndUserHash | undefined, key: string | undefined): ScopeKeys | undefined {
  if (user === undefined && session === undefined && key === undefined) return undefined;
  let id = '';
  if (key !== undefined) id += `k${key}`;
  if (user !== undefined) id += `${id === '' ? '' : '\n'}u${user}`;
  if (session !== undefined) id += `${id === '' ? '' : '\n'}s${session}`;
  return { user, session, key, id };
}

/** Where a window of `scope` is counted beside its subject: '' for the subject's own, else its scope's part of the key. */
export function scopeKeyPart(scope: LimitScope, scopes: ScopeKeys | undefined): string {
  switch (scope) {
    case 'account':
      return '';
    case 'subject':
      return scopes?.key === undefined ? '' : `k:${scopes.key}:`;
    case 'user':
      if (scopes?.user === undefined) throw new TypeError('an end-user window sent without an end user');
      return `u:${scopes.user}:`;
    case 'session':
      if (scopes?.session === undefined) throw new TypeError('a session window sent without a session');
      return `s:${scopes.session}:`;
  }
}

/** What one answer is charged (docs/rate-limits.md "Token budgets", "Cost budgets", "Tool-call quotas"). */
export interface ChargeUsage {
  tokens: number;
  /** The answer's cost in whole micro-dollars, rounded up (microUsdOf). */
  microUsd?: number;
  /** The names of the tools the runner called, once per call. */
  toolCalls?: readonly string[] | null;
}

export interface RateLimiter {
  /**
   * Checks every window and, only if all allow, counts the request in all of them. With a
   * `cap` (a stream on a plan with a concurrency cap) it also needs a free slot, taken in
   * the same decision; the admitted decision carries it.
   */
  consume(subject: string, windows: readonly RateWindow[], cap?: StreamCap, scopes?: ScopeKeys): Promise<RateLimitDecision>;
  /**
   * The decision when it can be made without waiting (in memory, or from a lease), counted
   * exactly as consume() would count it; otherwise undefined, and nothing was counted: call
   * consume(). Lets the request pipeline skip a promise and an await per request.
   */
  consumeNow(subject: string, windows: readonly RateWindow[], cap?: StreamCap, scopes?: ScopeKeys): RateLimitDecision | undefined;
  /**
   * Charges an answer to the subject's budgets: its tokens to the token budgets, its cost to
   * the cost budgets, its tool calls to those tools' quotas (chargeUnits in window-math.ts);
   * after the answer: never awaited on the request path, batched where the store is remote.
   */
  charge(subject: string, windows: readonly RateWindow[], usage: ChargeUsage, scopes?: ScopeKeys): void;
  close(): Promise<void>;
}
