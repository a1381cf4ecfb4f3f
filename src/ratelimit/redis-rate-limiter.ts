// Shared limiter: every window of a request checked and counted in one Lua script call
// (EVALSHA; ioredis re-sends the source on NOSCRIPT). All keys of a subject share the hash
// tag {subject}, so the script runs on Redis Cluster too.
//
// Requests of the same subject that arrive in the same event-loop turn are coalesced into
// one call that carries their count (flushed from setImmediate, i.e. once the turn's I/O
// callbacks have run). Redis admits them in arrival order exactly as that many one-by-one
// calls at the same instant would, so the limit stays exact across instances; the gateway
// sends one script call per subject per turn instead of one per request
// (docs/rate-limits.md "Coalescing").
//
// With `leases` on, a busy subject's call also reserves its next requests (up to a bucket's
// worth, never more than 1/16 of what is left); this instance admits those without a round
// trip and gives unused ones back (rate-limit-leases.ts, docs/rate-limits.md "Leases").
// A lease running low is renewed ahead by one background call per subject, so a busy
// subject's requests do not wait for Redis at a lease's end (decision 0029).
// Beside a token budget the lease also reserves tokens, which pay the answers' charges
// first; only the rest rides the batched charge (decision 0026).
//
// A stream on a plan with a concurrency cap takes its slot in the same script call
// (redis-stream-slots.ts keeps it alive and gives it back); such requests are coalesced
// apart from the subject's other requests, and never admitted from a lease.
//
// Over 300 lines on purpose: coalescing, leases and the script call share one per-subject
// state on the hot path; apart, each request would pay for the seams (docs/decisions/0002, 0005).
import type { Cluster, Redis } from 'ioredis';
import { metrics } from '../metrics/metrics.js';
import {
  CONCURRENCY_RETRY_AFTER_MS,
  windowStatus,
  type RateLimitDecision,
  type RateLimiter,
  type RateWindow,
  type StreamCap,
  type WindowStatus,
} from './rate-limiter.js';
import { RateLimitStoreError, RateLimitStoreTimeoutError } from './rate-limit-store-error.js';
import { withDeadline } from '../deadline.js';
import { LeaseBook, MAX_LEASE_AHEAD_MS, MAX_LEASE_MS, type LeaseGrant, type LeaseRefund, type LeaseState } from './rate-limit-leases.js';
import { RedisStreamSlots, streamSlotsKey } from './redis-stream-slots.js';
import { SLIDING_WINDOW_LUA } from './sliding-window.lua.js';
import { bucketWidthMs } from './window-math.js';

export interface RedisRateLimiterOptions {
  /** Shared client; the limiter never quits it. Create it without `keyPrefix` (prefix below is applied here). */
  client: Redis | Cluster;
  /** config.redis.prefix, e.g. "agentgw:". */
  prefix: string;
  /** config.redis.commandTimeoutMs: a call not answered by then rejects with RateLimitStoreTimeoutError. */
  commandTimeoutMs: number;
  /** config.rateLimits.lease: reserve a busy subject's next requests ahead (default off). */
  leases?: boolean;
  /** With leases: renew a lease running low in the background (default on; decision 0029). */
  renewLeases?: boolean;
  /** Local monotonic clock in ms (default performance.now; tests inject their own). */
  now?: () => number;
}

/** What the limiter did, for tests and diagnostics (cheap counters, never reset). */
export interface RedisRateLimiterCounters {
  /** Script calls that decided requests (each awaited by its requests). */
  requestCalls: number;
  /** Background renewals sent; of those, counted from the current lease's end; and those that failed (error or timeout). */
  renewals: number;
  renewalsAhead: number;
  renewalsFailed: number;
}

export interface RedisConsumeOptions {
  /** Decide at this time instead of the Redis server's TIME (tests). */
  nowMs?: number;
}

const COMMAND = 'agentgwSlidingWindow';
const NO_WINDOWS: RateLimitDecision = Object.freeze({ allowed: true, windows: [], retryAfterMs: 0 }) as RateLimitDecision;

type ScriptCall = (numKeys: number, ...args: Array<string | number>) => Promise<unknown>;

/** Fixed reply fields before the per-window triples: admitted, retryAfterMs, nowMs, lease, leaseValidMs. */
const REPLY_HEAD = 5;
/** After the triples, with a concurrency slot: windowAdmitted, slotsFree. */
const SLOT_TAIL = 2;
/** After the triples, on a call with the token tail (a plan with budgets, leases on): tokenLease. */
const TOKEN_TAIL = 1;

/** `${prefix}rl:{${subject}}:${windowName}` — the layout docs/rate-limits.md describes. */
export function rateLimitKey(prefix: string, subject: string, windowName: string): string {
  return `${prefix}rl:{${subject}}:${windowName}`;
}

interface Waiter {
  resolve(decision: RateLimitDecision): void;
  reject(error: unknown): void;
}

/** The requests of one subject (and one window list, one time override, one cap or none) in this turn. */
interface Batch {
  subject: string;
  windows: readonly RateWindow[];
  cap: StreamCap | undefined;
  nowArg: number | '';
  waiters: Waiter[];
}

/** A subject usable as a Redis hash tag: an empty tag ("{}" or "{}...") would hash the whole key. */
function isUsableSubject(subject: string): boolean {
  return subject.length > 0 && subject.charCodeAt(0) !== 125 /* } */;
}

export class RedisRateLimiter implements RateLimiter {
  private readonly script: ScriptCall;
  private readonly keyHead: string;
  private readonly commandTimeoutMs: number;
  private pending = new Map<string, Batch>();
  /** Batches displaced from `pending` by a window change within the turn; sent all the same. */
  private displaced: Batch[] = [];
  private flushScheduled = false;
  /** Tokens of answers finished in this turn, per subject: one charge call each (docs/rate-limits.md "Token budgets"). */
  private pendingCharges = new Map<string, { windows: readonly RateWindow[]; units: number }>();
  private readonly leases: LeaseBook | null;
  private readonly sweepTimer: NodeJS.Timeout | null;
  private readonly prefix: string;
  private readonly now: () => number;
  private closed = false;
  readonly counters: RedisRateLimiterCounters = { requestCalls: 0, renewals: 0, renewalsAhead: 0, renewalsFailed: 0 };
  /** Stream slots this instance holds (docs/rate-limits.md "Concurrency caps"). */
  readonly slots: RedisStreamSlots;
  private readonly flush = (): void => {
    this.flushScheduled = false;
    const batches = this.pending;
    const displaced = this.displaced;
    this.pending = new Map();
    if (displaced.length > 0) this.displaced = [];
    for (const batch of displaced) this.send(batch);
    for (const batch of batches.values()) this.send(batch);
    // After the turn's batches: a subject that has one asked for its lease with it.
    if (this.leases?.hasDue === true) for (const subject of this.leases.takeDue()) if (!batches.has(subject)) this.renew(subject);
    if (this.pendingCharges.size > 0) {
      const charges = this.pendingCharges;
      this.pendingCharges = new Map();
      for (const [subject, charge] of charges) this.sendCharge(subject, charge.windows, charge.units);
    }
  };

  constructor(options: RedisRateLimiterOptions) {
    const { client } = options;
    client.defineCommand(COMMAND, { lua: SLIDING_WINDOW_LUA });
    const call = (client as unknown as Record<string, ScriptCall>)[COMMAND] as ScriptCall;
    this.script = call.bind(client);
    this.keyHead = `${options.prefix}rl:{`;
    this.prefix = options.prefix;
    this.slots = new RedisStreamSlots(client);
    this.commandTimeoutMs = options.commandTimeoutMs;
    this.now = options.now ?? (() => performance.now());
    this.leases = options.leases ? new LeaseBook(options.renewLeases ?? true) : null;
    // Gives back what ended leases did not use, and forgets them, about once per lease life.
    this.sweepTimer = this.leases ? setInterval(() => this.sweepLeases(), MAX_LEASE_MS) : null;
    this.sweepTimer?.unref();
  }

  /** Decides without Redis only for a plan without windows, or from this subject's lease; never for a slot. */
  consumeNow(subject: string, windows: readonly RateWindow[], cap?: StreamCap): RateLimitDecision | undefined {
    if (cap !== undefined) return undefined;
    if (windows.length === 0) return NO_WINDOWS;
    // An unusable subject is left to consume(), which rejects it.
    return isUsableSubject(subject) ? this.takeLeased(subject, windows) : undefined;
  }

  /** A decision from the subject's lease; a lease it left running low gets its renewal flushed. */
  private takeLeased(subject: string, windows: readonly RateWindow[], nowMs = this.now()): RateLimitDecision | undefined {
    const leases = this.leases;
    if (leases === null) return undefined;
    const decision = leases.take(subject, windows, nowMs);
    if (leases.hasDue && !this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(this.flush);
    }
    return decision;
  }

  consume(subject: string, windows: readonly RateWindow[], cap?: StreamCap, options?: RedisConsumeOptions): Promise<RateLimitDecision> {
    if (windows.length === 0 && cap === undefined) return Promise.resolve(NO_WINDOWS);
    // An empty tag ("{}" or "{}...") would hash the whole key and split a subject across slots.
    if (!isUsableSubject(subject)) {
      return Promise.reject(new TypeError(`rate-limit subject ${JSON.stringify(subject)} cannot be used as a Redis hash tag`));
    }
    const nowArg = options?.nowMs === undefined ? '' : Math.floor(options.nowMs);
    if (nowArg === '' && cap === undefined) {
      const leased = this.takeLeased(subject, windows);
      if (leased !== undefined) return Promise.resolve(leased);
    }
    // Slot requests go in a batch of their own: the subject's other requests keep their leases.
    let batchKey = nowArg === '' ? subject : `${subject}\n${nowArg}`;
    if (cap !== undefined) batchKey += '\ns';
    return new Promise<RateLimitDecision>((resolve, reject) => {
      let batch = this.pending.get(batchKey);
      // A config reload between two requests of one turn may change the windows: the
      // earlier batch keeps its own and is sent apart.
      if (batch !== undefined && (batch.windows !== windows || batch.cap !== cap)) {
        this.displaced.push(batch);
        batch = undefined;
      }
      if (batch === undefined) {
        batch = { subject, windows, cap, nowArg, waiters: [] };
        this.pending.set(batchKey, batch);
      }
      batch.waiters.push({ resolve, reject });
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        setImmediate(this.flush);
      }
    });
  }

  /** The subject's lease as this instance holds it (tests and diagnostics); undefined without one. */
  leaseOf(subject: string): LeaseState | undefined {
    return this.leases?.stateOf(subject);
  }

  /** Queued, and sent with the turn's other calls: never a round trip of its own on a request's path. */
  charge(subject: string, windows: readonly RateWindow[], tokens: number): void {
    if (!(tokens > 0) || windows.length === 0 || !isUsableSubject(subject)) return;
    // Tokens a live lease reserved pay first: they are counted in Redis already.
    if (this.leases !== null) {
      tokens = this.leases.charge(subject, windows, tokens, this.now());
      if (tokens === 0) return;
    }
    const queued = this.pendingCharges.get(subject);
    // A reload that changed the windows within the turn: the earlier charge goes on its own.
    if (queued !== undefined && queued.windows === windows) queued.units += tokens;
    else {
      if (queued !== undefined) this.sendCharge(subject, queued.windows, queued.units);
      this.pendingCharges.set(subject, { windows, units: tokens });
    }
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(this.flush);
    }
  }

  private sendCharge(subject: string, windows: readonly RateWindow[], units: number): void {
    // Lost only if Redis fails: the budget then undercounts by these tokens (docs/rate-limits.md).
    this.call(this.scriptArgs(subject, windows, '', 0, 0, undefined, units), windows.length).then(
      () => undefined,
      () => undefined,
    );
  }

  /**
   * The client belongs to the caller (it is shared with other stores), which closes it after
   * this: unused lease units are given back first, so a restart does not hold them for a window.
   */
  async close(): Promise<void> {
    this.closed = true;
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    this.slots.close();
    if (!this.leases) return;
    await Promise.all(this.leases.drain().map((refund) => this.giveBack(refund)));
  }

  private send(batch: Batch): void {
    if (batch.cap !== undefined) {
      this.sendWithSlots(batch, batch.cap);
      return;
    }
    const { subject, windows } = batch;
    let { waiters } = batch;
    const leases = batch.nowArg === '' ? this.leases : null;
    // Beside a budget, a lease call sends the token tail: a lease then reserves tokens too.
    const tokenTail = leases !== null && windows[windows.length - 1]!.tokens === true;
    let wanted = 0;
    let tokensWanted = 0;
    let refund: LeaseRefund | undefined;
    const sentAtMs = this.now();
    if (leases !== null) {
      // A lease may have come in since these requests were queued: it serves them first, so
      // a new one never replaces units still unused.
      let served = 0;
      for (; served < waiters.length; served += 1) {
        const leased = this.takeLeased(subject, windows, sentAtMs);
        if (leased === undefined) break;
        waiters[served]!.resolve(leased);
      }
      if (served === waiters.length) return;
      if (served > 0) waiters = waiters.slice(served);
      refund = leases.reclaim(subject, sentAtMs, windows);
      // Units counted under other windows (a reload) go back on their own.
      if (refund !== undefined && refund.windows !== windows) {
        void this.giveBack(refund);
        refund = undefined;
      }
      wanted = leases.wanted(subject, windows, waiters.length, sentAtMs);
      if (wanted > 0) {
        leases.requesting(subject);
        if (tokenTail) tokensWanted = leases.tokensWanted(subject, wanted);
      }
    }
    this.counters.requestCalls += 1;
    const args = this.scriptArgs(subject, windows, batch.nowArg, waiters.length, wanted, refund);
    if (tokenTail) this.addTokenTail(args, windows, tokensWanted, refund);
    this.call(args, windows.length).then(
      (reply) => {
        let decisions: RateLimitDecision[];
        try {
          decisions = toDecisions(reply, windows, waiters.length, false, tokenTail);
          if (leases !== null) {
            const displaced = leases.granted(subject, windows, sentAtMs, leaseGrantOf(reply as unknown[], windows.length, tokenTail), wanted > 0);
            if (displaced !== undefined) void this.giveBack(displaced);
          }
        } catch (error) {
          if (wanted > 0) leases?.failed(subject);
          for (const waiter of waiters) waiter.reject(error);
          return;
        }
        for (let i = 0; i < waiters.length; i += 1) waiters[i]!.resolve(decisions[i]!);
      },
      (error: unknown) => {
        if (wanted > 0) leases?.failed(subject);
        for (const waiter of waiters) waiter.reject(error);
      },
    );
  }

  /**
   * The background call for a lease marked due (decision 0029): asks for no request, only the
   * next lease (counted from the current one's end when that is near). Its answer replaces
   * the current lease and gives back what that one did not use; if it fails, nothing changes
   * and the lease runs out as it would have. No request waits for it.
   */
  private renew(subject: string): void {
    const leases = this.leases!;
    const sentAtMs = this.now();
    const renewal = this.closed ? undefined : leases.renewal(subject, sentAtMs);
    if (renewal === undefined) return;
    const { windows, leaseFromMs } = renewal;
    const tokenTail = windows[windows.length - 1]!.tokens === true;
    const args = this.scriptArgs(subject, windows, '', 0, leaseFromMs > 0 ? `${renewal.units}:${Math.floor(leaseFromMs)}` : renewal.units, undefined);
    if (tokenTail) this.addTokenTail(args, windows, renewal.tokens, undefined);
    this.counters.renewals += 1;
    if (leaseFromMs > 0) this.counters.renewalsAhead += 1;
    this.call(args, windows.length).then(
      (reply) => {
        let grant: LeaseGrant;
        try {
          toDecisions(reply, windows, 0, false, tokenTail);
          grant = leaseGrantOf(reply as unknown[], windows.length, tokenTail);
        } catch {
          this.renewalFailed(subject);
          return;
        }
        // The script counted the lease at the current lease's end, clamped to [now, now + MAX_LEASE_AHEAD_MS].
        if (grant.units > 0 && leaseFromMs > grant.serverNowMs) grant.aheadMs = Math.min(Math.floor(leaseFromMs) - grant.serverNowMs, MAX_LEASE_AHEAD_MS);
        const displaced = leases.renewed(subject, windows, sentAtMs, grant);
        if (displaced !== undefined) void this.giveBack(displaced);
        // Closed meanwhile: nothing will use or sweep it, so it goes straight back.
        if (this.closed) for (const refund of leases.drain()) void this.giveBack(refund);
      },
      () => this.renewalFailed(subject),
    );
  }

  private renewalFailed(subject: string): void {
    this.counters.renewalsFailed += 1;
    this.leases!.failed(subject);
  }

  /**
   * Stream requests on a capped plan: windows and slots in one call; each admitted request
   * holds slot `${head}:${i}` from then on, until its stream ends (StreamSlot.release).
   */
  private sendWithSlots(batch: Batch, cap: StreamCap): void {
    const { subject, windows, waiters } = batch;
    const key = streamSlotsKey(this.prefix, subject);
    const head = this.slots.nextMemberHead();
    this.counters.requestCalls += 1;
    const args = this.scriptArgs(subject, windows, batch.nowArg, waiters.length, 0, undefined);
    const n = windows.length;
    // KEYS gain the slot set after the windows' keys; ARGV gains streams, leaseMs, memberHead.
    args.splice(n, 0, key);
    args.push(cap.streams, cap.leaseMs, head);
    this.call(args, n + 1).then(
      (reply) => {
        let decisions: RateLimitDecision[];
        try {
          decisions = toDecisions(reply, windows, waiters.length, true);
        } catch (error) {
          for (const waiter of waiters) waiter.reject(error);
          return;
        }
        for (let i = 0; i < waiters.length; i += 1) {
          const decision = decisions[i]!;
          if (decision.allowed) decision.slot = this.slots.hold(key, cap.leaseMs, `${head}:${i}`);
          waiters[i]!.resolve(decision);
        }
      },
      (error: unknown) => {
        for (const waiter of waiters) waiter.reject(error);
      },
    );
  }

  /** KEYS then ARGV in the script's layout (sliding-window.lua.ts). */
  private scriptArgs(subject: string, windows: readonly RateWindow[], nowArg: number | '', count: number, wanted: number | string, refund: LeaseRefund | undefined, chargeUnits = 0): Array<string | number> {
    const n = windows.length;
    const args: Array<string | number> = new Array(n + 4 + 4 * n);
    const keyHead = this.keyHead + subject + '}:';
    for (let i = 0; i < n; i += 1) {
      const window = windows[i] as RateWindow;
      args[i] = keyHead + window.name;
      const base = n + 4 + 4 * i;
      args[base + 1] = window.windowMs;
      args[base + 2] = bucketWidthMs(window.windowMs);
      if (window.tokens === true) {
        // A budget: limit negated, and the tokens to charge in place of a refund bucket (sliding-window.lua.ts).
        args[base] = -window.limit;
        args[base + 3] = chargeUnits;
      } else {
        args[base] = window.limit;
        args[base + 3] = refund === undefined ? -1 : (refund.buckets[i] as number);
      }
    }
    args[n] = nowArg;
    args[n + 1] = count;
    args[n + 2] = wanted;
    args[n + 3] = refund === undefined ? 0 : refund.units;
    return args;
  }

  /**
   * The token tail (sliding-window.lua.ts): tokenLeaseWanted and tokenRefund after the
   * windows, and each budget's refund bucket in place of its charge (0 on these calls).
   */
  private addTokenTail(args: Array<string | number>, windows: readonly RateWindow[], tokensWanted: number, refund: LeaseRefund | undefined): void {
    const n = windows.length;
    const tokens = refund?.tokens ?? 0;
    for (let i = 0; i < n; i += 1) {
      if (windows[i]!.tokens === true) args[n + 7 + 4 * i] = tokens > 0 ? (refund!.buckets[i] as number) : -1;
    }
    args.push(tokensWanted, tokens);
  }

  /** Returns unused lease units (and tokens) on their own (count 0: nothing is admitted or leased). */
  private giveBack(refund: LeaseRefund): Promise<void> {
    const subject = refund.subject;
    const args = this.scriptArgs(subject, refund.windows, '', 0, 0, refund);
    if (refund.tokens !== undefined) this.addTokenTail(args, refund.windows, 0, refund);
    return this.call(args, refund.windows.length).then(
      () => undefined,
      // Lost only means those units count until their bucket leaves the window, as used ones would.
      () => undefined,
    );
  }

  private sweepLeases(): void {
    for (const refund of this.leases!.sweep(this.now())) void this.giveBack(refund);
  }

  private call(args: Array<string | number>, numKeys: number): Promise<unknown> {
    const timeoutMs = this.commandTimeoutMs;
    const startedMs = performance.now();
    // Our own bound, so it holds whatever the client's options are (offline queue, retries,
    // a hung server that keeps the socket open); see src/deadline.ts for why it is deferred.
    return withDeadline(this.script(numKeys, ...args), timeoutMs, () => new RateLimitStoreTimeoutError(timeoutMs)).then(
      (reply) => {
        metrics.redisCommandDuration.observe({ op: 'ratelimit' }, (performance.now() - startedMs) / 1000);
        return reply;
      },
      (error: unknown) => {
        if (error instanceof RateLimitStoreTimeoutError) throw error;
        throw new RateLimitStoreError(`rate-limit script failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
      },
    );
  }
}

/**
 * One decision per coalesced request, in arrival order: request i < admitted was counted
 * when `admitted - 1 - i` of its batch were still to come, so it sees that many more
 * remaining than the final state; the rest see the final state and are refused.
 */
export function toDecisions(reply: unknown, windows: readonly RateWindow[], count: number, withSlot = false, withTokenLease = false): RateLimitDecision[] {
  if (!Array.isArray(reply) || reply.length !== REPLY_HEAD + 3 * windows.length + (withSlot ? SLOT_TAIL : 0) + (withTokenLease ? TOKEN_TAIL : 0)) {
    throw new RateLimitStoreError(`rate-limit script returned an unexpected reply: ${JSON.stringify(reply)}`);
  }
  const admitted = Number(reply[0]);
  const retryAfterMs = Number(reply[1]);
  // A lease was counted after this batch's requests: they all saw it as still remaining.
  const leased = Number(reply[3]);
  // So was its token reserve, in every budget.
  const tokensLeased = withTokenLease ? Number(reply[REPLY_HEAD + 3 * windows.length]) : 0;
  // Requests the windows would have admitted but no slot was free for (none without a slot).
  const windowAdmitted = withSlot ? Number(reply[REPLY_HEAD + 3 * windows.length]) : admitted;
  const decisions: RateLimitDecision[] = new Array(count);
  let refused: RateLimitDecision | undefined;
  let capped: RateLimitDecision | undefined;
  for (let i = 0; i < count; i += 1) {
    if (i >= windowAdmitted) {
      refused ??= { allowed: false, windows: windowStatuses(reply, windows, 0, 0), retryAfterMs };
      decisions[i] = refused;
    } else if (i >= admitted) {
      capped ??= { allowed: false, windows: windowStatuses(reply, windows, 0, 0), retryAfterMs: CONCURRENCY_RETRY_AFTER_MS, concurrencyLimited: true };
      decisions[i] = capped;
    } else {
      decisions[i] = { allowed: true, windows: windowStatuses(reply, windows, leased + admitted - 1 - i, tokensLeased), retryAfterMs: 0 };
    }
  }
  return decisions;
}

function windowStatuses(reply: unknown[], windows: readonly RateWindow[], extraRemaining: number, extraTokens: number): WindowStatus[] {
  const statuses: WindowStatus[] = new Array(windows.length);
  for (let i = 0; i < windows.length; i += 1) {
    const window = windows[i] as RateWindow;
    const at = REPLY_HEAD + 3 * i;
    // A token window is not counted per request: its remaining is the same for the whole group
    // (plus the token reserve of a lease counted with it, not spent yet).
    const remaining = Number(reply[at]) + (window.tokens === true ? extraTokens : extraRemaining);
    const resetMs = remaining > 0 ? 0 : Number(reply[at + 1]);
    statuses[i] = windowStatus(window, remaining, resetMs, remaining > 0 ? Number(reply[at + 2]) : resetMs);
  }
  return statuses;
}

function leaseGrantOf(reply: unknown[], windowCount: number, withTokenLease: boolean): LeaseGrant {
  const remaining: number[] = new Array(windowCount);
  const resetMs: number[] = new Array(windowCount);
  const oldestMs: number[] = new Array(windowCount);
  for (let i = 0; i < windowCount; i += 1) {
    const at = REPLY_HEAD + 3 * i;
    remaining[i] = Number(reply[at]);
    resetMs[i] = Number(reply[at + 1]);
    oldestMs[i] = Number(reply[at + 2]);
  }
  const grant: LeaseGrant = { units: Number(reply[3]), validMs: Number(reply[4]), serverNowMs: Number(reply[2]), remaining, resetMs, oldestMs };
  if (withTokenLease) grant.tokens = Number(reply[REPLY_HEAD + 3 * windowCount]);
  return grant;
}
