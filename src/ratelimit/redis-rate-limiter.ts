// Shared limiter: every window of a request checked and counted in one call of the admit
// operation (src/ratelimit/protocol/: one named, versioned script per operation, each with
// its encoder and typed decoder). All keys of a subject share the hash tag {subject}, so the
// operations run on Redis Cluster too.
//
// Requests of the same subject that arrive in the same event-loop turn are coalesced into
// one call that carries their count (flushed from setImmediate, i.e. once the turn's I/O
// callbacks have run). Redis admits them in arrival order exactly as that many one-by-one
// calls at the same instant would, so the limit stays exact across instances; the gateway
// sends one call per subject per turn instead of one per request
// (docs/rate-limits.md "Coalescing").
//
// With `leases` on (config.rateLimits.lease; on unless configured off), a busy subject's call
// also reserves its next requests (up to a bucket's worth, never more than 1/16 of what is
// left); this instance admits those without a round trip and gives unused ones back
// (rate-limit-leases.ts, docs/rate-limits.md "Leases"). A lease running low is renewed ahead
// by one background call per subject, so a busy subject's requests do not wait for Redis at
// a lease's end. Beside a token (cost) budget the lease also reserves tokens (micro-dollars),
// which pay the answers' charges first; only the rest rides the batched charge.
//
// A stream on a plan with a concurrency cap takes its slot in the same admit call
// (redis-stream-slots.ts keeps it alive and gives it back); such requests are coalesced
// apart from the subject's other requests, and never admitted from a lease.
//
// A request counted in nested scopes (an end user, a session, the account; docs/design.md,
// "Agent runs and nested scopes") is decided with their windows in one admit call, coalesced
// and leased per (subject, scope instances) (lease-key.ts, decisions 0074, 0079); tool quotas
// are never leased (0065, 0076).
//
// One file over 300 lines because its parts share one piece of state and one turn: the
// pending batches, the lease book and the queued charges are flushed together from one
// setImmediate, and a lease reclaimed by send() is given back, renewed or swept by the same
// methods. The pieces that stand alone live apart: the Redis operations (protocol/), the
// lease book (rate-limit-leases.ts), the decisions (redis-decisions.ts), the charge queue
// (charge-batch.ts), the stream slots (redis-stream-slots.ts).
import type { Cluster, Redis } from 'ioredis';
import type { ChargeUsage, RateLimitDecision, RateLimiter, RateWindow, ScopeKeys, StreamCap } from './rate-limiter.js';
import { LeaseBook, MAX_LEASE_AHEAD_MS, MAX_LEASE_MS, type LeaseGrant, type LeaseRefund, type LeaseState } from './rate-limit-leases.js';
import { RedisStreamSlots, streamSlotsKey } from './redis-stream-slots.js';
import { leaseGrantOf, toDecisions } from './redis-decisions.js';
import { leaseKey, leaseOwner } from './lease-key.js';
import { ChargeBatch, chargeAmounts, type QueuedCharge } from './charge-batch.js';
import { OperationClient } from './protocol/redis-operation-client.js';
import { ADMIT, CHARGE, REFUND, RENEW } from './protocol/limiter-operations.js';

export interface RedisRateLimiterOptions {
  /** Shared client; the limiter never quits it. Create it without `keyPrefix` (prefix below is applied here). */
  client: Redis | Cluster;
  /** config.redis.prefix, e.g. "agentgw:". */
  prefix: string;
  /** config.redis.commandTimeoutMs: a call not answered by then rejects with RateLimitStoreTimeoutError. */
  commandTimeoutMs: number;
  /**
   * config.rateLimits.lease (on unless configured off): reserve a busy subject's next
   * requests ahead. Omitted here it is off, so a test counts one call per turn.
   */
  leases?: boolean;
  /** With leases: renew a lease running low in the background (default on; docs/rate-limits.md "Leases"). */
  renewLeases?: boolean;
  /** Local monotonic clock in ms (default performance.now; tests inject their own). */
  now?: () => number;
}

/** What the limiter did, for tests and diagnostics (cheap counters, never reset). */
export interface RedisRateLimiterCounters {
  /** Admit calls that decided requests (each awaited by its requests). */
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

const NO_WINDOWS: RateLimitDecision = Object.freeze({ allowed: true, windows: [], retryAfterMs: 0 }) as RateLimitDecision;

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
  scopes: ScopeKeys | undefined;
  waiters: Waiter[];
}

/** A subject usable as a Redis hash tag: an empty tag ("{}" or "{}...") would hash the whole key. */
function isUsableSubject(subject: string): boolean {
  return subject.length > 0 && subject.charCodeAt(0) !== 125 /* } */;
}

const ignore = (): undefined => undefined;

/**
 * Windows whose requests bypass leases: a chat request's list with tool quotas (decisions 0065,
 * 0076: which tools its answer calls is known only after it, and its report-only figures decide
 * which tools are withheld) — any quota in its `charge` use, or only `report`ing ones. An MCP
 * call's list, whose quotas that name the call count it at admission (`use: admit`, decision
 * 0117), is leased like request windows, its other quotas reporting beside it: the lease's units
 * are counted in the call's quotas with every other window and never in a report-only one
 * (agw_admit_v3, agw_renew_v3 and agw_refund_v3 all set kind 2 apart), and a lease serves only
 * the list it was counted for (LeaseBook.take), so one tool's lease never admits another's
 * call. A session's and the account's windows are leased like an end user's, per (subject,
 * scope instances) (decision 0079): the lease's units are counted in every window of every
 * scope at once.
 */
function bypassesLeases(windows: readonly RateWindow[]): boolean {
  let reports = false;
  let admits = false;
  for (const window of windows) {
    if (window.kind !== 'tool_calls') continue;
    if (window.use === 'charge') return true;
    if (window.use === 'admit') admits = true;
    else reports = true;
  }
  return reports && !admits;
}

export class RedisRateLimiter implements RateLimiter {
  private readonly operations: OperationClient;
  private readonly keyHead: string;
  private pending = new Map<string, Batch>();
  /** Batches displaced from `pending` by a window change within the turn; sent all the same. */
  private displaced: Batch[] = [];
  private flushScheduled = false;
  /** Answers finished in this turn, per subject: one charge call each (docs/rate-limits.md "Token budgets"). */
  private readonly pendingCharges = new ChargeBatch();
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
    if (this.pendingCharges.size > 0) for (const charge of this.pendingCharges.take()) this.sendCharge(charge);
  };

  constructor(options: RedisRateLimiterOptions) {
    const { client } = options;
    this.operations = new OperationClient(client, options.commandTimeoutMs);
    this.keyHead = `${options.prefix}rl:{`;
    this.prefix = options.prefix;
    this.slots = new RedisStreamSlots(this.operations, client);
    this.now = options.now ?? (() => performance.now());
    this.leases = options.leases ? new LeaseBook(options.renewLeases ?? true) : null;
    // Gives back what ended leases did not use, and forgets them, about once per lease life.
    this.sweepTimer = this.leases ? setInterval(() => this.sweepLeases(), MAX_LEASE_MS) : null;
    this.sweepTimer?.unref();
  }

  /** Decides without Redis only for a plan without windows, or from this subject's lease; never for a slot. */
  consumeNow(subject: string, windows: readonly RateWindow[], cap?: StreamCap, scopes?: ScopeKeys): RateLimitDecision | undefined {
    if (cap !== undefined) return undefined;
    if (windows.length === 0) return NO_WINDOWS;
    // An unusable subject is left to consume(), which rejects it.
    return isUsableSubject(subject) ? this.takeLeased(leaseKey(subject, scopes), windows) : undefined;
  }

  /** A decision from the lease of a subject (or of one of its end users); a lease it left running low gets its renewal flushed. */
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

  consume(subject: string, windows: readonly RateWindow[], cap?: StreamCap, scopes?: ScopeKeys, options?: RedisConsumeOptions): Promise<RateLimitDecision> {
    if (windows.length === 0 && cap === undefined) return Promise.resolve(NO_WINDOWS);
    // An empty tag ("{}" or "{}...") would hash the whole key and split a subject across slots.
    if (!isUsableSubject(subject)) {
      return Promise.reject(new TypeError(`rate-limit subject ${JSON.stringify(subject)} cannot be used as a Redis hash tag`));
    }
    const nowArg = options?.nowMs === undefined ? '' : Math.floor(options.nowMs);
    if (nowArg === '' && cap === undefined) {
      const leased = this.takeLeased(leaseKey(subject, scopes), windows);
      if (leased !== undefined) return Promise.resolve(leased);
    }
    // Slot requests go in a batch of their own: the subject's other requests keep their leases.
    let batchKey = nowArg === '' ? subject : `${subject}\n${nowArg}`;
    if (cap !== undefined) batchKey += '\ns';
    if (scopes !== undefined) batchKey = leaseKey(batchKey, scopes);
    return new Promise<RateLimitDecision>((resolve, reject) => {
      let batch = this.pending.get(batchKey);
      // A config reload between two requests of one turn may change the windows: the
      // earlier batch keeps its own and is sent apart.
      if (batch !== undefined && (batch.windows !== windows || batch.cap !== cap)) {
        this.displaced.push(batch);
        batch = undefined;
      }
      if (batch === undefined) {
        batch = { subject, windows, cap, nowArg, scopes, waiters: [] };
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
  leaseOf(subject: string, scopes?: ScopeKeys): LeaseState | undefined {
    return this.leases?.stateOf(leaseKey(subject, scopes));
  }

  /** Queued, and sent with the turn's other calls: never a round trip of its own on a request's path. */
  charge(subject: string, windows: readonly RateWindow[], usage: ChargeUsage, scopes?: ScopeKeys): void {
    if (windows.length === 0 || !isUsableSubject(subject)) return;
    // Tokens and micro-dollars a live lease reserved pay first: they are counted in Redis already.
    if (this.leases !== null && (usage.tokens > 0 || usage.microUsd !== undefined)) usage = this.leases.charge(leaseKey(subject, scopes), windows, usage, this.now());
    const amounts = chargeAmounts(windows, usage);
    if (amounts === undefined) return;
    // A reload that changed the windows within the turn: the earlier charge goes on its own.
    const displaced = this.pendingCharges.add(subject, scopes, windows, amounts);
    if (displaced !== undefined) this.sendCharge(displaced);
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(this.flush);
    }
  }

  private sendCharge(charge: QueuedCharge): void {
    // Queued charges carry an amount (chargeAmounts); lost only if Redis fails: the budgets then
    // undercount by these units (docs/rate-limits.md).
    this.operations.call(CHARGE, { keyHead: this.subjectKeyHead(charge.subject), scopes: charge.scopes, windows: charge.windows, amounts: charge.amounts, nowMs: '' }).catch(ignore);
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

  private subjectKeyHead(subject: string): string {
    return this.keyHead + subject + '}:';
  }

  private send(batch: Batch): void {
    if (batch.cap !== undefined) {
      this.sendWithSlots(batch, batch.cap);
      return;
    }
    const { subject, windows } = batch;
    let { waiters } = batch;
    // A chat request's tool quotas are never leased (decisions 0065, 0076; bypassesLeases).
    const leases = batch.nowArg === '' && !bypassesLeases(windows) ? this.leases : null;
    const key = leaseKey(subject, batch.scopes);
    let wanted = 0;
    let tokensWanted = 0;
    let costWanted = 0;
    let refund: LeaseRefund | undefined;
    const sentAtMs = this.now();
    if (leases !== null) {
      // A lease may have come in since these requests were queued: it serves them first, so
      // a new one never replaces units still unused.
      let served = 0;
      for (; served < waiters.length; served += 1) {
        const leased = this.takeLeased(key, windows, sentAtMs);
        if (leased === undefined) break;
        waiters[served]!.resolve(leased);
      }
      if (served === waiters.length) return;
      if (served > 0) waiters = waiters.slice(served);
      refund = leases.reclaim(key, sentAtMs, windows);
      // Units counted under other windows (a reload) go back on their own.
      if (refund !== undefined && refund.windows !== windows) {
        void this.giveBack(refund);
        refund = undefined;
      }
      wanted = leases.wanted(key, windows, waiters.length, sentAtMs);
      if (wanted > 0) {
        leases.requesting(key);
        // Beside a budget a lease also reserves tokens, micro-dollars (the admit operation grants none without them).
        tokensWanted = leases.tokensWanted(key, wanted);
        costWanted = leases.costWanted(key, wanted);
      }
    }
    this.counters.requestCalls += 1;
    const request = { keyHead: this.subjectKeyHead(subject), scopes: batch.scopes, windows, nowMs: batch.nowArg, count: waiters.length, leaseUnits: wanted, leaseTokens: tokensWanted, leaseCost: costWanted, refund, slot: undefined };
    this.operations.call(ADMIT, request).then(
      (reply) => {
        let decisions: RateLimitDecision[];
        try {
          decisions = toDecisions(reply, windows, waiters.length);
          if (leases !== null) {
            const displaced = leases.granted(key, windows, sentAtMs, leaseGrantOf(reply), wanted > 0);
            if (displaced !== undefined) void this.giveBack(displaced);
          }
        } catch (error) {
          if (wanted > 0) leases?.failed(key);
          for (const waiter of waiters) waiter.reject(error);
          return;
        }
        for (let i = 0; i < waiters.length; i += 1) waiters[i]!.resolve(decisions[i]!);
      },
      (error: unknown) => {
        if (wanted > 0) leases?.failed(key);
        for (const waiter of waiters) waiter.reject(error);
      },
    );
  }

  /**
   * The background call for a lease marked due (docs/rate-limits.md "Leases"): asks for no
   * request, only the next lease (counted from the current one's end when that is near). Its
   * answer replaces the current lease and gives back what that one did not use; if it fails,
   * nothing changes and the lease runs out as it would have. No request waits for it.
   */
  private renew(key: string): void {
    const leases = this.leases!;
    const sentAtMs = this.now();
    const renewal = this.closed ? undefined : leases.renewal(key, sentAtMs);
    if (renewal === undefined) return;
    const { windows, leaseFromMs } = renewal;
    this.counters.renewals += 1;
    if (leaseFromMs > 0) this.counters.renewalsAhead += 1;
    const { subject, scopes } = leaseOwner(key);
    this.operations.call(RENEW, { keyHead: this.subjectKeyHead(subject), scopes, windows, units: renewal.units, tokens: renewal.tokens, cost: renewal.cost, leaseFromMs }).then(
      (reply) => {
        const grant: LeaseGrant = leaseGrantOf(reply);
        // The operation counted the lease at the current lease's end, clamped to [now, now + MAX_LEASE_AHEAD_MS].
        if (grant.units > 0 && leaseFromMs > grant.serverNowMs) grant.aheadMs = Math.min(Math.floor(leaseFromMs) - grant.serverNowMs, MAX_LEASE_AHEAD_MS);
        const displaced = leases.renewed(key, windows, sentAtMs, grant);
        if (displaced !== undefined) void this.giveBack(displaced);
        // Closed meanwhile: nothing will use or sweep it, so it goes straight back.
        if (this.closed) for (const refund of leases.drain()) void this.giveBack(refund);
      },
      () => this.renewalFailed(key),
    );
  }

  private renewalFailed(key: string): void {
    this.counters.renewalsFailed += 1;
    this.leases!.failed(key);
  }

  /**
   * Stream requests on a capped plan: windows and slots in one admit call; each admitted
   * request holds slot `${head}:${i}` from then on, until its stream ends (StreamSlot.release).
   */
  private sendWithSlots(batch: Batch, cap: StreamCap): void {
    const { subject, windows, waiters } = batch;
    const key = streamSlotsKey(this.prefix, subject);
    const head = this.slots.nextMemberHead();
    this.counters.requestCalls += 1;
    const slot = { key, streams: cap.streams, leaseMs: cap.leaseMs, memberHead: head };
    this.operations.call(ADMIT, { keyHead: this.subjectKeyHead(subject), scopes: batch.scopes, windows, nowMs: batch.nowArg, count: waiters.length, leaseUnits: 0, leaseTokens: 0, leaseCost: 0, refund: undefined, slot }).then(
      (reply) => {
        let decisions: RateLimitDecision[];
        try {
          decisions = toDecisions(reply, windows, waiters.length);
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

  /** Returns unused lease units (and tokens) on their own: nothing is admitted or leased. */
  private giveBack(refund: LeaseRefund): Promise<void> {
    const { subject, scopes } = leaseOwner(refund.subject);
    // Lost only means those units count until their bucket leaves the window, as used ones would.
    return this.operations.call(REFUND, { keyHead: this.subjectKeyHead(subject), scopes, windows: refund.windows, nowMs: '', refund }).then(ignore, ignore);
  }

  private sweepLeases(): void {
    for (const refund of this.leases!.sweep(this.now())) void this.giveBack(refund);
  }
}
