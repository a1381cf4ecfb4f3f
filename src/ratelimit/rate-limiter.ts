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
}

/** A window's status from its figures (the one place that lays one out). */
export function windowStatus(window: RateWindow, remaining: number, resetMs: number, recoverMs: number): WindowStatus {
  if (window.endUser === true) {
    const status: WindowStatus = { name: window.name, limit: window.limit, windowMs: window.windowMs, remaining, resetMs, recoverMs, endUser: true };
    if (window.tokens === true) status.tokens = true;
    return status;
  }
  if (window.tokens === true) return { name: window.name, limit: window.limit, windowMs: window.windowMs, remaining, resetMs, recoverMs, tokens: true };
  return { name: window.name, limit: window.limit, windowMs: window.windowMs, remaining, resetMs, recoverMs };
}

/** A refusal that no request window made: every full window is a token budget. */
export function refusedByTokenBudget(decision: RateLimitDecision): boolean {
  for (const window of decision.windows) if (window.tokens !== true && window.remaining === 0) return false;
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
    if (status.remaining > 0) continue;
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
   * Charges an answer's tokens to the subject's token windows (those with `tokens: true`),
   * after the answer: never awaited on the request path, batched where the store is remote.
   */
  charge(subject: string, windows: readonly RateWindow[], tokens: number, endUser?: EndUserHash): void;
  close(): Promise<void>;
}
