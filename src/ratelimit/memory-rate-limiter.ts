// In-process limiter: embedded mode, and the per-instance fallback when Redis is down.
// Same window math as the Redis script; memory is bounded by evicting idle subjects.
// Concurrency caps: an in-process count of held stream slots per subject (this instance's
// streams only: exact in embedded mode, per instance during a Redis outage).
// The windows of nested scopes (an end user, a session, the account; docs/design.md, "Agent runs
// and nested scopes") are held per scope instance and decided together with the subject's in one
// consumeWindows call, as the admit operation does. End users and sessions are many and named by
// clients, so their states are bounded in number (MAX_END_USER_STATES, least recently used
// evicted first), not only by idleness: a client sending a new user_id or session_id per
// request must not grow the heap for a day. Subjects and accounts are the operator's own.
import { systemClock, type Clock } from '../clock.js';
import { metrics } from '../metrics/metrics.js';
import { CONCURRENCY_RETRY_AFTER_MS, type ChargeUsage, type RateLimitDecision, type RateLimiter, type RateWindow, type ScopeKeys, type StreamCap, type StreamSlot } from './rate-limiter.js';
import type { LimitScope } from '../config/limit-window.js';
import { scopeKeyPart } from './rate-limiter.js';
import { bucketWidthMs, chargeUnits, chargeWindows, consumeWindows, idleAfterMs, newBucketCounter, type BucketCounter } from './window-math.js';

export interface MemoryRateLimiterOptions {
  clock?: Clock;
  /** How often (at most) idle subjects are swept out, piggybacked on consume(). Default 10 s. */
  sweepIntervalMs?: number;
  /** End users' states held at most; default MAX_END_USER_STATES. */
  maxEndUsers?: number;
}

/**
 * End users whose counts are held in memory at most (embedded mode, and each instance during a
 * Redis outage): about 1.5 KB each, so about 30 MB. Past it the least recently used end user's
 * state is let go of: that end user starts over (never fewer requests than its limit, only
 * more), and every state still held counts exactly. docs/policy.md states the ceiling.
 */
export const MAX_END_USER_STATES = 20_000;

interface SubjectState {
  /** Window names in the order of `counters`, to notice a config reload. */
  names: string[];
  counters: BucketCounter[];
  /** From this time on every counter of the subject is empty. */
  idleAtMs: number;
}

const NO_WINDOWS: RateLimitDecision = Object.freeze({ allowed: true, windows: [], retryAfterMs: 0 }) as RateLimitDecision;

class MemorySlot implements StreamSlot {
  private released = false;

  constructor(
    private readonly slots: Map<string, number>,
    private readonly subject: string,
  ) {}

  release(): void {
    if (this.released) return;
    this.released = true;
    const held = (this.slots.get(this.subject) ?? 1) - 1;
    if (held <= 0) this.slots.delete(this.subject);
    else this.slots.set(this.subject, held);
    metrics.streamSlotsHeld.dec();
  }
}

export class MemoryRateLimiter implements RateLimiter {
  private readonly clock: Clock;
  private readonly sweepIntervalMs: number;
  private readonly subjects = new Map<string, SubjectState>();
  /** End users' states, least recently used first (an entry used is moved to the end). */
  private readonly endUsers = new Map<string, SubjectState>();
  private readonly maxEndUsers: number;
  /** Stream slots held per subject; an entry leaves when its last slot is released. */
  private readonly slots = new Map<string, number>();
  private nextSweepMs: number;

  constructor(options: MemoryRateLimiterOptions = {}) {
    this.clock = options.clock ?? systemClock;
    this.sweepIntervalMs = options.sweepIntervalMs ?? 10_000;
    this.maxEndUsers = options.maxEndUsers ?? MAX_END_USER_STATES;
    this.nextSweepMs = this.clock.now() + this.sweepIntervalMs;
  }

  /** Subjects and end users currently held in memory (for tests and diagnostics). */
  get subjectCount(): number {
    return this.subjects.size + this.endUsers.size;
  }

  async consume(subject: string, windows: readonly RateWindow[], cap?: StreamCap, scopes?: ScopeKeys): Promise<RateLimitDecision> {
    return this.consumeAt(subject, windows, this.clock.now(), cap, scopes);
  }

  /** Always decides: the counts are in memory. */
  consumeNow(subject: string, windows: readonly RateWindow[], cap?: StreamCap, scopes?: ScopeKeys): RateLimitDecision {
    return this.consumeAt(subject, windows, this.clock.now(), cap, scopes);
  }

  /** Slots held for a subject now (tests, diagnostics). */
  slotsHeld(subject: string): number {
    return this.slots.get(subject) ?? 0;
  }

  /**
   * Synchronous core of consume(), at an explicit time. With a cap, a full cap refuses
   * without counting; a full window outranks it, as in the Redis script.
   */
  consumeAt(subject: string, windows: readonly RateWindow[], nowMs: number, cap?: StreamCap, scopes?: ScopeKeys): RateLimitDecision {
    if (nowMs >= this.nextSweepMs) this.sweep(nowMs);
    if (cap !== undefined) return this.consumeWithSlot(subject, windows, nowMs, cap, scopes);
    if (windows.length === 0) return NO_WINDOWS;
    return this.consumeWindowsAt(subject, windows, nowMs, true, scopes);
  }

  private consumeWithSlot(subject: string, windows: readonly RateWindow[], nowMs: number, cap: StreamCap, scopes: ScopeKeys | undefined): RateLimitDecision {
    const held = this.slots.get(subject) ?? 0;
    const full = held >= cap.streams;
    const decision = windows.length === 0 ? { allowed: true, windows: [], retryAfterMs: 0 } : this.consumeWindowsAt(subject, windows, nowMs, !full, scopes);
    if (!decision.allowed) return decision;
    if (full) return { allowed: false, windows: decision.windows, retryAfterMs: CONCURRENCY_RETRY_AFTER_MS, concurrencyLimited: true };
    this.slots.set(subject, held + 1);
    metrics.streamSlotsHeld.inc();
    decision.slot = new MemorySlot(this.slots, subject);
    return decision;
  }

  private consumeWindowsAt(subject: string, windows: readonly RateWindow[], nowMs: number, count: boolean, scopes: ScopeKeys | undefined): RateLimitDecision {
    const states = this.statesFor(subject, windows, scopes);
    const decision = consumeWindows(states.counters, windows, nowMs, count);
    if (decision.allowed && count) keepUntilIdle(states.held, windows, nowMs);
    return decision;
  }

  charge(subject: string, windows: readonly RateWindow[], usage: ChargeUsage, scopes?: ScopeKeys): void {
    this.chargeAt(subject, windows, usage, this.clock.now(), scopes);
  }

  /** charge() at an explicit time. A subject swept out meanwhile starts over with this charge. */
  chargeAt(subject: string, windows: readonly RateWindow[], usage: ChargeUsage, nowMs: number, scopes?: ScopeKeys): void {
    if (windows.length === 0 || !chargesAnything(windows, usage)) return;
    const states = this.statesFor(subject, windows, scopes);
    chargeWindows(states.counters, windows, nowMs, usage);
    keepUntilIdle(states.held, windows, nowMs);
  }

  /**
   * The counters a decision uses, aligned with `windows`: the subject's own state, and one
   * state per nested scope instance the windows count in (an end user, a session; with an
   * account scope the key's own windows under the account), keyed as the Redis keys are.
   */
  private statesFor(subject: string, windows: readonly RateWindow[], scopes: ScopeKeys | undefined): { counters: BucketCounter[]; held: SubjectState[] } {
    if (scopes === undefined) {
      const state = this.stateFor(subject, windows);
      return { counters: state.counters, held: [state] };
    }
    const counters: BucketCounter[] = new Array(windows.length);
    const held: SubjectState[] = [];
    for (const group of scopeGroupsOf(windows)) {
      const key = subject + memoryScopePart(group.scope, scopes);
      const state = group.scope === 'user' || group.scope === 'session' ? this.endUserStateFor(key, group.windows) : this.stateFor(key, group.windows);
      for (let j = 0; j < group.at.length; j += 1) counters[group.at[j]!] = state.counters[j]!;
      held.push(state);
    }
    return { counters, held };
  }

  async close(): Promise<void> {
    this.subjects.clear();
    this.endUsers.clear();
  }

  /** An end user's state, moved to the most recently used end; a new one evicts the least recently used past the ceiling. */
  private endUserStateFor(key: string, windows: readonly RateWindow[]): SubjectState {
    const users = this.endUsers;
    let state = users.get(key);
    if (state !== undefined) {
      users.delete(key);
      users.set(key, state);
      if (!sameNames(state.names, windows)) realign(state, windows);
      return state;
    }
    if (users.size >= this.maxEndUsers) users.delete(users.keys().next().value!);
    state = newState(windows);
    users.set(key, state);
    return state;
  }

  private stateFor(subject: string, windows: readonly RateWindow[]): SubjectState {
    let state = this.subjects.get(subject);
    if (state === undefined) {
      state = newState(windows);
      this.subjects.set(subject, state);
    } else if (!sameNames(state.names, windows)) {
      realign(state, windows);
    }
    return state;
  }

  private sweep(nowMs: number): void {
    this.nextSweepMs = nowMs + this.sweepIntervalMs;
    for (const states of [this.subjects, this.endUsers]) {
      for (const [subject, state] of states) if (state.idleAtMs <= nowMs) states.delete(subject);
    }
  }
}

function newState(windows: readonly RateWindow[]): SubjectState {
  return { names: windows.map((w) => w.name), counters: windows.map((w) => newBucketCounter(bucketWidthMs(w.windowMs))), idleAtMs: 0 };
}

/** A list's windows of one scope, with their places in the list. */
interface ScopeGroup {
  scope: LimitScope;
  windows: RateWindow[];
  at: number[];
}

// Built once per window list (the policy's lists are built once per plan): no filtering per request.
const scopeGroups = new WeakMap<readonly RateWindow[], ScopeGroup[]>();

function scopeGroupsOf(windows: readonly RateWindow[]): ScopeGroup[] {
  let groups = scopeGroups.get(windows);
  if (groups !== undefined) return groups;
  groups = [];
  for (let i = 0; i < windows.length; i += 1) {
    const window = windows[i]!;
    let group = groups.find((g) => g.scope === window.scope);
    if (group === undefined) groups.push((group = { scope: window.scope, windows: [], at: [] }));
    group.windows.push(window);
    group.at.push(i);
  }
  scopeGroups.set(windows, groups);
  return groups;
}

/** The memory state's name part of a scope instance, as scopeKeyPart names the Redis keys (the end user's as before). */
function memoryScopePart(scope: LimitScope, scopes: ScopeKeys): string {
  const part = scopeKeyPart(scope, scopes);
  return part === '' ? '' : `\n${part}`;
}

/** Whether an answer charges any of the windows (a subject is not brought back for nothing). */
function chargesAnything(windows: readonly RateWindow[], usage: ChargeUsage): boolean {
  for (const window of windows) if (chargeUnits(window, usage) > 0) return true;
  return false;
}

function keepUntilIdle(states: readonly SubjectState[], windows: readonly RateWindow[], nowMs: number): void {
  const idleAtMs = idleAfterMs(windows, nowMs);
  for (const state of states) if (idleAtMs > state.idleAtMs) state.idleAtMs = idleAtMs;
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
