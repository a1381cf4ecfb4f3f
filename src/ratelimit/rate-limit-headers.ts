// Rate-limit response headers (docs/design.md, "Rate-limit headers"): X-RateLimit-* and the
// IETF httpapi ratelimit-headers draft's RateLimit-Policy / RateLimit, from one limiter
// decision.
import type { RateLimitDecision, WindowStatus } from './rate-limiter.js';

/**
 * The names this module sets, in lower case: an upstream's own copies of them are not
 * relayed on a response that carries the gateway's (the gateway's limits are the client's).
 */
export const RATE_LIMIT_HEADER_NAMES: ReadonlySet<string> = new Set(['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'ratelimit-policy', 'ratelimit']);

/**
 * Cost budgets and tool quotas are left out of the headers (decision 0065): the IETF fields
 * describe what a client paces its requests by, and neither is a count of requests or tokens.
 */
function inHeaders(window: WindowStatus): boolean {
  return window.kind !== 'cost' && window.kind !== 'tool_calls';
}

/** Among request windows (budgets are not): lowest remaining; ties → longest reset; further ties → the first in config order. */
export function closestToExhaustion(windows: readonly WindowStatus[]): WindowStatus | undefined {
  let closest: WindowStatus | undefined;
  for (const window of windows) {
    if (window.kind === 'tokens' || !inHeaders(window)) continue;
    if (closest === undefined || window.remaining < closest.remaining || (window.remaining === closest.remaining && window.resetMs > closest.resetMs)) {
      closest = window;
    }
  }
  return closest;
}

/** Whole seconds, rounded up: a client that waits this long is never early. */
function ceilSeconds(ms: number): number {
  return Math.ceil(ms / 1000);
}

/**
 * Whole seconds for `Reset` / `t=`, never more than the window's own length: the bucketed
 * count keeps a request counting up to one bucket (1/60 of the window) past the window, which
 * would otherwise read as "wait longer than the window" (61 s on a 60 s window). Retry-After
 * is not capped: it stays exact and never early (docs/rate-limits.md "Response headers").
 */
export function windowSeconds(ms: number, windowMs: number): number {
  const seconds = ceilSeconds(ms);
  const windowLength = ceilSeconds(windowMs);
  return seconds > windowLength ? windowLength : seconds < 0 ? 0 : seconds;
}

/** `"minute";q=60;w=60, "day";q=10000;w=86400` — every window of the plan. */
export function formatRateLimitPolicy(windows: readonly WindowStatus[]): string {
  let policy = '';
  for (const window of windows) {
    if (!inHeaders(window)) continue;
    if (policy !== '') policy += ', ';
    policy += `"${window.name}";q=${window.limit};w=${ceilSeconds(window.windowMs)}`;
  }
  return policy;
}

// The policy is the same for every request of a plan: the last one is kept and reused while
// the windows match (names, limits, lengths), instead of being formatted per request.
let policyWindows: Array<Pick<WindowStatus, 'name' | 'limit' | 'windowMs'>> = [];
let policyText = '';

/** formatRateLimitPolicy, remembered for the last window list it was asked about. */
export function rateLimitPolicy(windows: readonly WindowStatus[]): string {
  if (windows.length === policyWindows.length) {
    let same = true;
    for (let i = 0; i < windows.length && same; i += 1) {
      const w = windows[i]!;
      const p = policyWindows[i]!;
      same = w.name === p.name && w.limit === p.limit && w.windowMs === p.windowMs;
    }
    if (same && windows.length > 0) return policyText;
  }
  policyText = formatRateLimitPolicy(windows);
  policyWindows = windows.map(({ name, limit, windowMs }) => ({ name, limit, windowMs }));
  return policyText;
}

/**
 * Appends the headers for a decision to `out` as flat name/value pairs (what
 * `res.writeHead` takes); none for a plan without windows. Returns whether it added any.
 */
export function appendRateLimitHeaders(decision: RateLimitDecision, out: Array<string | string[]>): boolean {
  const closest = closestToExhaustion(decision.windows);
  if (closest === undefined) return appendTokenOnlyHeaders(decision, out);
  const remaining = String(closest.remaining);
  let items = `"${closest.name}";r=${remaining};t=${windowSeconds(closest.recoverMs, closest.windowMs)}`;
  // Token budgets follow as their own items (each status says whether it is one).
  items += tokenItems(decision.windows);
  out.push(
    'X-RateLimit-Limit',
    String(closest.limit),
    'X-RateLimit-Remaining',
    remaining,
    'X-RateLimit-Reset',
    String(windowSeconds(closest.resetMs, closest.windowMs)),
    'RateLimit-Policy',
    rateLimitPolicy(decision.windows),
    // t follows the draft (when the quota starts to recover), not X-RateLimit-Reset's
    // "until one more request is allowed", which is 0 while requests remain.
    'RateLimit',
    items,
  );
  return true;
}

/** `, "tokens-day";r=150000;t=86400` for each token budget, in config order. */
function tokenItems(windows: readonly WindowStatus[]): string {
  let items = '';
  for (const window of windows) {
    if (window.kind === 'tokens') items += `, "${window.name}";r=${window.remaining};t=${windowSeconds(window.recoverMs, window.windowMs)}`;
  }
  return items;
}

/** A plan with token budgets only: the policies and their items, no X-RateLimit-* trio (that describes request windows). */
function appendTokenOnlyHeaders(decision: RateLimitDecision, out: Array<string | string[]>): boolean {
  if (!decision.windows.some((window) => window.kind === 'tokens')) return false;
  out.push('RateLimit-Policy', rateLimitPolicy(decision.windows), 'RateLimit', tokenItems(decision.windows).slice(2));
  return true;
}

/** Retry-After seconds for a decision: ceil(retryAfterMs / 1000), at least 1 when rejected; 0 when allowed. */
export function retryAfterSeconds(decision: RateLimitDecision): number {
  if (decision.allowed) return 0;
  return Math.max(1, ceilSeconds(decision.retryAfterMs));
}
