// The request pipeline's view of rate limiting: one call per request, all windows at once.
import type { RateWindow, StreamCap } from '../config/schema.js';

export type { RateWindow, StreamCap };

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
  /** Set on a token budget's status (its figures count tokens). */
  tokens?: true;
  /** Set on an end user's window (a refusal by it names `context.user_id`). */
  endUser?: true;
  /** Set on a cost budget's status (micro-dollars). */
  cost?: true;
  /** The tool of a tool-call quota's status. */
  tool?: string;
  /** A window that only reported (a quota of a tool the request did not name): it never refuses. */
  reportOnly?: true;
}

/** A window's status from its figures (the one place that lays one out). */
export function windowStatus(window: RateWindow, remaining: number, resetMs: number, recoverMs: number): WindowStatus {
  if (window.cost === true || window.tool !== undefined) {
    // Policy windows (docs/rate-limits.md "Cost budgets", "Tool-call quotas"): their flags ride along.
    const status: WindowStatus = { name: window.name, limit: window.limit, windowMs: window.windowMs, remaining, resetMs, recoverMs };
    if (window.cost === true) status.cost = true;
    if (window.tool !== undefined) status.tool = window.tool;
    if (window.reportOnly === true) status.reportOnly = true;
    if (window.endUser === true) status.endUser = true;
    return status;
  }
  if (window.endUser === true) {
    const status: WindowStatus = { name: window.name, limit: window.limit, windowMs: window.windowMs, remaining, resetMs, recoverMs, endUser: true };
    if (window.tokens === true) status.tokens = true;
    return status;
  }
  if (window.tokens === true) return { name: window.name, limit: window.limit, windowMs: window.windowMs, remaining, resetMs, recoverMs, tokens: true };
  return { name: window.name, limit: window.limit, windowMs: window.windowMs, remaining, resetMs, recoverMs };
}

/** A budget: read at admission, charged after the answer (tokens, cost, or one tool's calls). */
export function isBudget(window: RateWindow | WindowStatus): boolean {
  return window.tokens === true || window.cost === true || window.tool !== undefined;
}

/** A refusal that no request window made: every full window is a token budget. */
export function refusedByTokenBudget(decision: RateLimitDecision): boolean {
  for (const window of decision.windows) if (window.tokens !== true && window.remaining === 0 && window.reportOnly !== true) return false;
  return true;
}

/**
 * Whether a refused decision was refused by an end user's window (one with no room left);
 * the subject's own full windows outrank it, so the refusal names the end user only when
 * the subject had room.
 */
export function refusedByEndUser(decision: RateLimitDecision): boolean {
  let byEndUser = false;
  for (const status of decision.windows) {
    if (status.remaining > 0 || status.reportOnly === true) continue;
    if (status.endUser !== true) return false;
    byEndUser = true;
  }
  return byEndUser;
}

/** Whether any window of a list is a token budget: each window's own flag, wherever it stands. */
export function hasTokenBudget(windows: readonly RateWindow[]): boolean {
  for (const window of windows) if (window.tokens === true) return true;
  return false;
}

/** Whether any window of a list is a cost budget (its lease reserves micro-dollars; decision 0076). */
export function hasCostBudget(windows: readonly RateWindow[]): boolean {
  for (const window of windows) if (window.cost === true) return true;
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
 * The end user a request is counted for (docs/design.md, "Agent-aware policy"): `hash` is the keyed hash of
 * its `context.user_id` (end-user-hash.ts; the anonymous bucket's for none). With it, the
 * windows passed are the plan's `endUser.windows` (the subject's, then the end user's).
 */
export type EndUserHash = string;

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
  consume(subject: string, windows: readonly RateWindow[], cap?: StreamCap, endUser?: EndUserHash): Promise<RateLimitDecision>;
  /**
   * The decision when it can be made without waiting (in memory, or from a lease), counted
   * exactly as consume() would count it; otherwise undefined, and nothing was counted: call
   * consume(). Lets the request pipeline skip a promise and an await per request.
   */
  consumeNow(subject: string, windows: readonly RateWindow[], cap?: StreamCap, endUser?: EndUserHash): RateLimitDecision | undefined;
  /**
   * Charges an answer to the subject's budgets: its tokens to the token budgets, its cost to
   * the cost budgets, its tool calls to those tools' quotas (chargeUnits in window-math.ts);
   * after the answer: never awaited on the request path, batched where the store is remote.
   */
  charge(subject: string, windows: readonly RateWindow[], usage: ChargeUsage, endUser?: EndUserHash): void;
  close(): Promise<void>;
}
