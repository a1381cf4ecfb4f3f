// In-process limiter: embedded mode, and the per-instance fallback when Redis is down.
// Same window math as the Redis script; memory is bounded by evicting idle subjects.
import { systemClock, type Clock } from '../clock.js';
import type { RateLimitDecision, RateLimiter, RateWindow } from './rate-limiter.js';
import { bucketWidthMs, chargeWindows, consumeWindows, idleAfterMs, newBucketCounter, type BucketCounter } from './window-math.js';

export interface MemoryRateLimiterOptions {
  clock?: Clock;
  /** How often (at most) idle subjects are swept out, piggybacked on consume(). Default 10 s. */
  sweepIntervalMs?: number;
}

interface SubjectState {
  /** Window names in the order of `counters`, to notice a config reload. */
  names: string[];
  counters: BucketCounter[];
  /** From this time on every counter of the subject is empty. */
  idleAtMs: number;
}

const NO_WINDOWS: RateLimitDecision = Object.freeze({ allowed: true, windows: [], retryAfterMs: 0 }) as RateLimitDecision;

export class MemoryRateLimiter implements RateLimiter {
  private readonly clock: Clock;
  private readonly sweepIntervalMs: number;
  private readonly subjects = new Map<string, SubjectState>();
  private nextSweepMs: number;

  constructor(options: MemoryRateLimiterOptions = {}) {
    this.clock = options.clock ?? systemClock;
    this.sweepIntervalMs = options.sweepIntervalMs ?? 10_000;
    this.nextSweepMs = this.clock.now() + this.sweepIntervalMs;
  }

  /** Subjects currently held in memory (for tests and diagnostics). */
  get subjectCount(): number {
    return this.subjects.size;
  }

  async consume(subject: string, windows: readonly RateWindow[]): Promise<RateLimitDecision> {
    return this.consumeAt(subject, windows, this.clock.now());
  }

  /** Always decides: the counts are in memory. */
  consumeNow(subject: string, windows: readonly RateWindow[]): RateLimitDecision {
    return this.consumeAt(subject, windows, this.clock.now());
  }

  /** Synchronous core of consume(), at an explicit time. */
  consumeAt(subject: string, windows: readonly RateWindow[], nowMs: number): RateLimitDecision {
    if (nowMs >= this.nextSweepMs) this.sweep(nowMs);
    if (windows.length === 0) return NO_WINDOWS;
    const state = this.stateFor(subject, windows);
    const decision = consumeWindows(state.counters, windows, nowMs);
    if (decision.allowed) {
      const idleAtMs = idleAfterMs(windows, nowMs);
      if (idleAtMs > state.idleAtMs) state.idleAtMs = idleAtMs;
    }
    return decision;
  }

  charge(subject: string, windows: readonly RateWindow[], tokens: number): void {
    this.chargeAt(subject, windows, tokens, this.clock.now());
  }

  /** charge() at an explicit time. A subject swept out meanwhile starts over with this charge. */
  chargeAt(subject: string, windows: readonly RateWindow[], tokens: number, nowMs: number): void {
    if (!(tokens > 0) || windows.length === 0) return;
    const state = this.stateFor(subject, windows);
    chargeWindows(state.counters, windows, nowMs, tokens);
    const idleAtMs = idleAfterMs(windows, nowMs);
    if (idleAtMs > state.idleAtMs) state.idleAtMs = idleAtMs;
  }

  async close(): Promise<void> {
    this.subjects.clear();
  }

  private stateFor(subject: string, windows: readonly RateWindow[]): SubjectState {
    let state = this.subjects.get(subject);
    if (state === undefined) {
      state = { names: windows.map((w) => w.name), counters: windows.map((w) => newBucketCounter(bucketWidthMs(w.windowMs))), idleAtMs: 0 };
      this.subjects.set(subject, state);
    } else if (!sameNames(state.names, windows)) {
      realign(state, windows);
    }
    return state;
  }

  private sweep(nowMs: number): void {
    this.nextSweepMs = nowMs + this.sweepIntervalMs;
    for (const [subject, state] of this.subjects) {
      if (state.idleAtMs <= nowMs) this.subjects.delete(subject);
    }
  }
}

function sameNames(names: readonly string[], windows: readonly RateWindow[]): boolean {
  if (names.length !== windows.length) return false;
  for (let i = 0; i < names.length; i += 1) if (names[i] !== (windows[i] as RateWindow).name) return false;
  return true;
}

/** After a plan change, keep the counters of windows that still exist (matched by name). */
function realign(state: SubjectState, windows: readonly RateWindow[]): void {
  const byName = new Map(state.names.map((name, i) => [name, state.counters[i] as BucketCounter]));
  state.names = windows.map((w) => w.name);
  state.counters = windows.map((w) => byName.get(w.name) ?? newBucketCounter(bucketWidthMs(w.windowMs)));
}
