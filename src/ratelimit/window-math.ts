// The sliding-window algorithm (docs/design.md, "Plans and limits"), pure: no I/O, time passed
// in. The memory limiter runs it directly; protocol/lua-windows.ts is a line-by-line port of it
// that the Redis operations share, so both stores take the same decisions for the same
// request sequence.
//
// Each window is split into buckets of `bucketWidthMs(windowMs)` aligned on epoch time.
// A request at nowMs counts every bucket from the one holding (nowMs - windowMs + 1) to the
// newest, and the oldest of those is counted whole even where it sticks out before the
// window start. So the count is never below the exact sliding-window count: no span of
// windowMs ever holds more than `limit` admitted requests (no boundary burst). The price:
// a request keeps counting until its bucket's end + windowMs - 1, i.e. at most
// bucketMs - 1 ms longer than an exact sliding log would count it.
import { ALL_OF_A_SERVER, countsAtAdmission, EVERY_TOOL } from '../config/limit-window.js';
import { windowStatus, type ChargeUsage, type RateLimitDecision, type RateWindow, type WindowStatus } from './rate-limiter.js';

/** Buckets per window: bounds memory per subject and window to ~61 counters. */
export const BUCKETS_PER_WINDOW = 60;
/** Finer buckets than this buy nothing at gateway request rates and cost memory. */
export const MIN_BUCKET_MS = 100;

/** The bucket width for a window; the Redis operations receive this value, they never recompute it. */
export function bucketWidthMs(windowMs: number): number {
  return Math.min(windowMs, Math.max(MIN_BUCKET_MS, Math.ceil(windowMs / BUCKETS_PER_WINDOW)));
}

/** Index of the oldest bucket still counted at nowMs (the one overlapping the window start). */
export function firstCountedBucket(nowMs: number, windowMs: number, bucketMs: number): number {
  return Math.floor((nowMs - windowMs + 1) / bucketMs);
}

/** The first millisecond at which bucket `index` no longer counts. */
export function bucketExpiryMs(index: number, windowMs: number, bucketMs: number): number {
  return (index + 1) * bucketMs + windowMs - 1;
}

/** One window's live buckets for one subject, oldest first. */
export interface BucketCounter {
  bucketMs: number;
  /** Bucket indexes (floor(ms / bucketMs)), ascending. */
  indexes: number[];
  /** Requests in the bucket at the same position of `indexes`. */
  counts: number[];
  /** Sum of `counts`. */
  total: number;
}

export function newBucketCounter(bucketMs: number): BucketCounter {
  return { bucketMs, indexes: [], counts: [], total: 0 };
}

function resetCounter(counter: BucketCounter, bucketMs: number): void {
  counter.bucketMs = bucketMs;
  counter.indexes.length = 0;
  counter.counts.length = 0;
  counter.total = 0;
}

function dropBucketsBefore(counter: BucketCounter, firstIndex: number): void {
  const { indexes, counts } = counter;
  while (indexes.length > 0 && (indexes[0] as number) < firstIndex) {
    indexes.shift();
    counter.total -= counts.shift() as number;
  }
}

function addToBucket(counter: BucketCounter, index: number, units = 1): void {
  const { indexes, counts } = counter;
  counter.total += units;
  let at = indexes.length;
  // Time only goes backwards when a clock is stepped; then walk back to keep the order.
  while (at > 0 && (indexes[at - 1] as number) > index) at -= 1;
  if (at > 0 && indexes[at - 1] === index) {
    counts[at - 1] = (counts[at - 1] as number) + units;
  } else if (at === indexes.length) {
    indexes.push(index);
    counts.push(units);
  } else {
    indexes.splice(at, 0, index);
    counts.splice(at, 0, units);
  }
}

/**
 * Milliseconds from nowMs until the counter holds fewer than `limit` requests, with no
 * new requests meanwhile (0 when it already does). Expects expired buckets dropped.
 */
export function msUntilBelowLimit(counter: BucketCounter, limit: number, nowMs: number, windowMs: number): number {
  const excess = counter.total - limit + 1;
  if (excess <= 0) return 0;
  let removed = 0;
  for (let i = 0; i < counter.indexes.length; i += 1) {
    removed += counter.counts[i] as number;
    if (removed >= excess) return bucketExpiryMs(counter.indexes[i] as number, windowMs, counter.bucketMs) - nowMs;
  }
  // Unreachable while limit >= 1: dropping every bucket leaves 0 < limit.
  return 0;
}

/** Milliseconds from nowMs until the oldest counted bucket stops counting; 0 for an empty counter. Expects expired buckets dropped. */
export function msUntilOldestExpires(counter: BucketCounter, windowMs: number, nowMs: number): number {
  if (counter.indexes.length === 0) return 0;
  return bucketExpiryMs(counter.indexes[0] as number, windowMs, counter.bucketMs) - nowMs;
}

/**
 * Checks every window at nowMs and, only if all have room (and `count` is not false), counts
 * one request in each. `counters[i]` belongs to `windows[i]` and is updated in place (a
 * counter whose bucket width no longer matches its window, after a config reload, starts over).
 * With `count` false the decision is only read (a stream refused for want of a slot).
 */
export function consumeWindows(counters: readonly BucketCounter[], windows: readonly RateWindow[], nowMs: number, count = true): RateLimitDecision {
  let allowed = true;
  for (let i = 0; i < windows.length; i += 1) {
    const window = windows[i] as RateWindow;
    const counter = counters[i] as BucketCounter;
    const bucketMs = bucketWidthMs(window.windowMs);
    if (counter.bucketMs !== bucketMs) resetCounter(counter, bucketMs);
    dropBucketsBefore(counter, firstCountedBucket(nowMs, window.windowMs, bucketMs));
    // A budget admits while it has a unit left, as a request window does while it has a request
    // left; a report-only window (a quota of a tool the request does not name) never refuses.
    if (counter.total >= window.limit && !reportsOnly(window)) allowed = false;
  }
  const statuses: WindowStatus[] = new Array(windows.length);
  let retryAfterMs = 0;
  for (let i = 0; i < windows.length; i += 1) {
    const window = windows[i] as RateWindow;
    const counter = counters[i] as BucketCounter;
    // A budget is only checked here: its answer's units are charged later (chargeWindows).
    if (allowed && count && countsAtAdmission(window)) addToBucket(counter, Math.floor(nowMs / counter.bucketMs));
    const resetMs = msUntilBelowLimit(counter, window.limit, nowMs, window.windowMs);
    // Nothing is consumed on a rejection, so counts only fall until then: the slowest
    // window to free a slot decides when every window admits.
    if (!allowed && resetMs > retryAfterMs && !reportsOnly(window)) retryAfterMs = resetMs;
    const remaining = Math.max(0, window.limit - counter.total);
    statuses[i] = windowStatus(window, remaining, resetMs, remaining === 0 ? resetMs : msUntilOldestExpires(counter, window.windowMs, nowMs));
  }
  return { allowed, windows: statuses, retryAfterMs };
}

/** A tool quota of a tool the request does not name: read and reported, never refusing. */
function reportsOnly(window: RateWindow): boolean {
  return window.kind === 'tool_calls' && window.use === 'report';
}

/** The first millisecond at which a request admitted at nowMs stops counting in every window. */
export function idleAfterMs(windows: readonly RateWindow[], nowMs: number): number {
  let idleAtMs = nowMs;
  for (const window of windows) {
    const bucketMs = bucketWidthMs(window.windowMs);
    const expiryMs = bucketExpiryMs(Math.floor(nowMs / bucketMs), window.windowMs, bucketMs);
    if (expiryMs > idleAtMs) idleAtMs = expiryMs;
  }
  return idleAtMs;
}

/**
 * What one answer charges a budget: its tokens to a token budget, its micro-dollars to a cost
 * budget, its calls of the window's tool to a tool quota; 0 to a request window.
 */
export function chargeUnits(window: RateWindow, usage: ChargeUsage): number {
  switch (window.kind) {
    case 'requests':
      return 0;
    case 'tokens':
      return usage.tokens;
    case 'cost':
      return usage.microUsd ?? 0;
    case 'tool_calls': {
      const calls = usage.toolCalls;
      if (calls == null) return 0;
      // "*" counts every tool call (docs/design.md, "Agent runs and nested scopes").
      const tool = window.tool;
      if (tool === EVERY_TOOL) return calls.length;
      let count = 0;
      // "{server}__*" counts every call of an MCP server's tools (docs/mcp.md "Quotas").
      if (tool.endsWith(ALL_OF_A_SERVER)) {
        const prefix = tool.slice(0, -1);
        for (const called of calls) if (called.startsWith(prefix)) count += 1;
        return count;
      }
      for (const called of calls) if (called === tool) count += 1;
      return count;
    }
  }
}

/**
 * Charges an answer at nowMs to the budgets of `windows` (chargeUnits); request windows are
 * left alone. Same counters as consumeWindows.
 */
export function chargeWindows(counters: readonly BucketCounter[], windows: readonly RateWindow[], nowMs: number, usage: ChargeUsage): void {
  for (let i = 0; i < windows.length; i += 1) {
    const window = windows[i] as RateWindow;
    const units = chargeUnits(window, usage);
    if (!(units > 0)) continue;
    const counter = counters[i] as BucketCounter;
    const bucketMs = bucketWidthMs(window.windowMs);
    if (counter.bucketMs !== bucketMs) resetCounter(counter, bucketMs);
    dropBucketsBefore(counter, firstCountedBucket(nowMs, window.windowMs, bucketMs));
    addToBucket(counter, Math.floor(nowMs / bucketMs), units);
  }
}

/** An answer's cost in whole micro-dollars, rounded up (never under-charged); 0 for none or nonsense. */
export function microUsdOf(costUsd: number | null | undefined): number {
  if (typeof costUsd !== 'number' || !(costUsd > 0) || !Number.isFinite(costUsd)) return 0;
  // Through thousandths of a micro-dollar first: 0.1 USD is 100000.00000000001 micro-dollars in doubles, not 100001.
  return Math.ceil(Math.round(costUsd * 1e9) / 1e3);
}
