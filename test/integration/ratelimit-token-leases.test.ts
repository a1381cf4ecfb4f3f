// Token leases (docs/rate-limits.md "Leases", decision 0026) against a real Redis: beside a
// budget a lease also reserves tokens, counted in Redis before they are spent; charges are
// paid from the reserve first; unused tokens go back, so Redis ends up holding exactly the
// charged tokens; instances sharing a budget stay exact.
import { describe, expect, it } from 'vitest';
import type { RateLimitDecision, RateWindow } from '../../src/ratelimit/rate-limiter.js';
import { RedisRateLimiter, rateLimitKey } from '../../src/ratelimit/redis-rate-limiter.js';
import { createHash } from 'node:crypto';
import { decodeAdmit, encodeAdmit, encodeCharge } from '../../src/ratelimit/protocol/codec.js';
import { OPERATION, OPERATION_SOURCES, type OperationKind } from '../../src/ratelimit/protocol/operations.js';
import { chargeAmounts } from '../../src/ratelimit/charge-batch.js';
import { bucketWidthMs } from '../../src/ratelimit/window-math.js';
import { leasesOver, useLeaseLimiterRedis } from '../helpers/rate-limit-leases.js';
import { startMonitor } from '../helpers/redis-monitor.js';

const PREFIX = 'token-lease-test:';
const T0 = 1_700_000_000_037;
const MINUTE_MS = 60_000;
const HOUR_MS = 3_600_000;

const leases = useLeaseLimiterRedis({ prefix: PREFIX, commandTimeoutMs: 5_000 });
const { instance, scriptCalls, counted, earlyInBucket } = leases;

describe('the admit and charge operations beside a budget (protocol/operations.ts)', () => {
  const BUDGET = 1_000;
  const tokenBucket = (nowMs: number): number => Math.floor(nowMs / bucketWidthMs(HOUR_MS));
  const minuteBucket = (nowMs: number): number => Math.floor(nowMs / bucketWidthMs(MINUTE_MS));

  interface Call {
    count?: number;
    leaseWanted?: number;
    refundUnits?: number;
    refundAtMs?: number;
    /** The token reserve wanted and the unused tokens given back. */
    tail?: { tokensWanted: number; tokenRefund: number };
    charge?: number;
  }

  /** An encoded [numKeys, ...KEYS, ...ARGV] run as EVAL of the operation's source. */
  const evalOperation = (source: string, args: Array<string | number>): Promise<unknown> => leases.admin.eval(source, args[0]!, ...args.slice(1));

  /**
   * One operation for subject `s` with a minute window of 100,000 requests and a budget of
   * 1,000 tokens per hour: charge when `charge` is given, else admit. The admit reply, as
   * admitted, retryAfterMs, nowMs, lease, leaseValidMs, 2 × (remaining, resetMs, oldestMs), tokenLease.
   */
  async function run(s: string, nowMs: number, call: Call): Promise<number[]> {
    const windows: RateWindow[] = [
      { name: 'minute', limit: 100_000, windowMs: MINUTE_MS, kind: 'requests' as const, scope: 'subject' as const },
      { name: 'tokens-hour', limit: BUDGET, windowMs: HOUR_MS, kind: 'tokens' as const, scope: 'subject' as const },
    ];
    const keyHead = `${PREFIX}rl:{${s}}:`;
    if (call.charge !== undefined) {
      await evalOperation(OPERATION_SOURCES.charge, encodeCharge({ keyHead, windows, amounts: chargeAmounts(windows, { tokens: call.charge }) ?? [], nowMs })!);
      return [];
    }
    const refundAt = call.refundAtMs;
    const refund = refundAt === undefined ? undefined : { units: call.refundUnits ?? 0, tokens: call.tail?.tokenRefund ?? 0, buckets: [minuteBucket(refundAt), tokenBucket(refundAt)] };
    const args = encodeAdmit({ keyHead, windows, nowMs, count: call.count ?? 0, leaseUnits: call.leaseWanted ?? 0, leaseTokens: call.tail?.tokensWanted ?? 0, refund, slot: undefined });
    const r = decodeAdmit(await evalOperation(OPERATION_SOURCES.admit, args), windows.length);
    return [r.admitted, r.retryAfterMs, r.nowMs, r.leaseUnits, r.leaseValidMs, r.remaining[0]!, r.resetMs[0]!, r.oldestMs[0]!, r.remaining[1]!, r.resetMs[1]!, r.oldestMs[1]!, r.leaseTokens];
  }

  async function bucketCount(s: string, window: string, bucket: number): Promise<number> {
    return Number((await leases.admin.hget(rateLimitKey(PREFIX, s, window), String(bucket))) ?? 0);
  }

  it('grants units with a token reserve of min(wanted, 1/16 of what is left), counted in the current bucket; the tokens are the reply\'s last field', async () => {
    await run('account:grant', T0, { charge: 600 });
    const reply = await run('account:grant', T0 + 10, { count: 1, leaseWanted: 4, tail: { tokensWanted: 100, tokenRefund: 0 } });
    // admitted, retryAfterMs, nowMs, lease, leaseValidMs, 2 × (remaining, resetMs, oldestMs), tokenLease
    expect(reply).toHaveLength(5 + 3 * 2 + 1);
    expect(reply[0]).toBe(1);
    expect(reply[3]).toBe(4);
    // 400 left: a reserve of ⌊400/16⌋ = 25, not the 100 wanted.
    expect(reply[11]).toBe(25);
    expect(reply[5]).toBe(100_000 - 1 - 4);
    expect(reply[8]).toBe(BUDGET - 600 - 25);
    expect(await bucketCount('account:grant', 'tokens-hour', tokenBucket(T0 + 10))).toBe(625);
    expect(await bucketCount('account:grant', 'minute', minuteBucket(T0 + 10))).toBe(5);
    // Wanted below the share: exactly what was wanted.
    const small = await run('account:grant', T0 + 20, { count: 1, leaseWanted: 2, tail: { tokensWanted: 7, tokenRefund: 0 } });
    expect([small[3], small[11]]).toEqual([2, 7]);
    expect(await counted('account:grant', 'tokens-hour')).toBe(632);
  });

  it('grants no lease at all while a budget has fewer than 16 tokens left, or when no tokens are wanted', async () => {
    await run('account:edge', T0, { charge: BUDGET - 16 });
    const sixteen = await run('account:edge', T0 + 1, { count: 1, leaseWanted: 4, tail: { tokensWanted: 100, tokenRefund: 0 } });
    expect([sixteen[0], sixteen[3], sixteen[11]]).toEqual([1, 4, 1]);
    // 15 left now: the request is admitted, alone.
    const fifteen = await run('account:edge', T0 + 2, { count: 1, leaseWanted: 4, tail: { tokensWanted: 100, tokenRefund: 0 } });
    expect([fifteen[0], fifteen[3], fifteen[11]]).toEqual([1, 0, 0]);
    await run('account:none', T0, { charge: 10 });
    const none = await run('account:none', T0 + 1, { count: 1, leaseWanted: 4, tail: { tokensWanted: 0, tokenRefund: 0 } });
    expect([none[0], none[3], none[11]]).toEqual([1, 0, 0]);
    expect(await counted('account:none', 'minute')).toBe(1);
    expect(await counted('account:none', 'tokens-hour')).toBe(10);
    // No token reserve asked for at all: no lease beside a budget.
    const old = await run('account:none', T0 + 2, { count: 1, leaseWanted: 4 });
    expect(old[3]).toBe(0);
  });

  it('gives back exactly the unused tokens and units to the buckets they were counted in', async () => {
    await run('account:back', T0, { charge: 200 });
    const grant = await run('account:back', T0 + 5, { count: 1, leaseWanted: 8, tail: { tokensWanted: 40, tokenRefund: 0 } });
    expect([grant[3], grant[11]]).toEqual([8, 40]);
    // Later, in a later minute bucket: 3 units and 15 tokens were used; 5 and 25 go back.
    const back = await run('account:back', T0 + 1_500, { refundUnits: 5, refundAtMs: T0 + 5, tail: { tokensWanted: 0, tokenRefund: 25 } });
    expect(back[0]).toBe(0);
    expect(await bucketCount('account:back', 'minute', minuteBucket(T0 + 5))).toBe(1 + 3);
    expect(await bucketCount('account:back', 'tokens-hour', tokenBucket(T0 + 5))).toBe(200 + 15);
    expect(await counted('account:back', 'tokens-hour')).toBe(215);
  });
});

describe('RedisRateLimiter with leases beside a budget', () => {
  it('sends each operation in its fixed shape, the same for a plan with budgets as without; a charge names the budgets only', async () => {
    const limiter = instance();
    const plain: RateWindow[] = [{ name: 'minute', limit: 100_000, windowMs: MINUTE_MS, kind: 'requests' as const, scope: 'subject' as const }];
    const budgeted: RateWindow[] = [...plain, { name: 'tokens-hour', limit: 1_000_000, windowMs: HOUR_MS, kind: 'tokens' as const, scope: 'subject' as const }];
    const operationOf = new Map<string, OperationKind>();
    const kindOf = new Map<string, OperationKind>();
    for (const [kind, source] of Object.entries(OPERATION_SOURCES)) {
      operationOf.set(createHash('sha1').update(source).digest('hex'), kind as OperationKind);
      kindOf.set(OPERATION[kind as OperationKind], kind as OperationKind);
    }
    const monitor = await startMonitor(`redis://${leases.admin.options.host}:${leases.admin.options.port}`);
    const calls: Array<{ kind: OperationKind | undefined; args: string[] }> = [];
    monitor.on('monitor', (_time: string, args: string[]) => {
      // EVAL when the script was not loaded yet (ioredis then re-sends the source): same layout.
      const command = args[0]?.toLowerCase();
      if (command === 'evalsha') calls.push({ kind: operationOf.get(args[1]!), args });
      // MONITOR shows the source escaped: the operation's name in it tells which one it is.
      else if (command === 'eval') calls.push({ kind: kindOf.get(/'(agw_[a-z_]+_v\d+)'/.exec(args[1]!)?.[1] ?? ''), args });
    });
    const of = (subject: string, key: string): Array<{ kind: OperationKind | undefined; args: string[] }> => calls.filter((call) => call.args[3] === rateLimitKey(PREFIX, subject, key));
    try {
      await earlyInBucket();
      // Busy enough for leases, then closed: lease requests and give-backs among the calls.
      for (let i = 0; i < 20; i += 1) {
        await limiter.consume('account:mon-plain', plain);
        await limiter.consume('account:mon-budget', budgeted);
        limiter.charge('account:mon-budget', budgeted, { tokens: 5 });
      }
      await limiter.close();
      await new Promise((resolve) => setTimeout(resolve, 100));
    } finally {
      monitor.disconnect();
    }
    // evalsha sha numkeys KEYS... head ARGV... 5 per window: admit's head is 11 values, renew's and refund's 4, charge's 2.
    const shape: Record<OperationKind, number> = { admit: 11, renew: 4, refund: 4, charge: 2, slotRefresh: 0 };
    const expectShapes = (list: Array<{ kind: OperationKind | undefined; args: string[] }>, windows: number): void => {
      for (const { kind, args } of list) expect(args.length).toBe(3 + windows + shape[kind!] + 5 * windows);
    };
    const plainCalls = of('account:mon-plain', 'minute');
    expect(plainCalls.length).toBeGreaterThan(1);
    expect(plainCalls.every((call) => call.kind !== undefined && call.kind !== 'charge')).toBe(true);
    expectShapes(plainCalls, 1);
    const budgetCalls = of('account:mon-budget', 'minute');
    expectShapes(budgetCalls, 2);
    // Some admit asked for a token reserve (its 4th head value) beside the units.
    expect(budgetCalls.some((call) => call.kind === 'admit' && Number(call.args[3 + 2 + 3]) > 0)).toBe(true);
    const charges = of('account:mon-budget', 'tokens-hour');
    expect(charges.length).toBeGreaterThan(0);
    expect(charges.every((call) => call.kind === 'charge')).toBe(true);
    expectShapes(charges, 1);
  });

  it('serves a busy budgeted subject with few script calls, charges from the reserve first, and Redis then holds exactly the charged tokens', async () => {
    const limiter = instance();
    const limit = 10_000_000;
    const windows: RateWindow[] = [{ name: 'minute', limit: 100_000, windowMs: MINUTE_MS, kind: 'requests' as const, scope: 'subject' as const }, { name: 'tokens-hour', limit, windowMs: HOUR_MS, kind: 'tokens' as const, scope: 'subject' as const }];
    const before = await scriptCalls();
    let withoutWaiting = 0;
    for (let i = 0; i < 2_000; i += 1) {
      let decision = limiter.consumeNow('account:busy', windows);
      if (decision === undefined) decision = await limiter.consume('account:busy', windows);
      else withoutWaiting += 1;
      expect(decision.allowed).toBe(true);
      expect(decision.windows[0]!.remaining).toBe(99_999 - i);
      // The budget's remaining: every earlier charge, except perhaps the last one's batched rest,
      // sent after this request's call in the same turn.
      const tokensLeft = decision.windows[1]!.remaining;
      expect(tokensLeft).toBeLessThanOrEqual(limit - 7 * i + 7);
      expect(tokensLeft).toBeGreaterThanOrEqual(limit - 7 * i);
      limiter.charge('account:busy', windows, { tokens: 7 });
    }
    // Without token leases every request is its admission call plus its charge call.
    expect((await scriptCalls()) - before).toBeLessThan(300);
    expect(withoutWaiting).toBeGreaterThan(1_500);
    await leasesOver();
    expect(await counted('account:busy', 'tokens-hour')).toBe(2_000 * 7);
    expect(await counted('account:busy', 'minute')).toBe(2_000);
  });

  it('pays a charge from a live reserve without a script call; the part beyond it rides the batched charge', async () => {
    const limiter = instance();
    const windows: RateWindow[] = [{ name: 'tokens-minute', limit: 1_000_000, windowMs: MINUTE_MS, kind: 'tokens' as const, scope: 'subject' as const }];
    await earlyInBucket();
    // First sight, then one charged answer (the reserve's size), then a call that asks for a lease.
    await limiter.consume('account:pay', windows);
    limiter.charge('account:pay', windows, { tokens: 50 });
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await counted('account:pay', 'tokens-minute')).toBe(50);
    await limiter.consume('account:pay', windows);
    // One unit wanted (the last lease's 0 × 2 + this call's 1) of 50 tokens: 50 reserved.
    expect(await counted('account:pay', 'tokens-minute')).toBe(100);
    const before = await scriptCalls();
    limiter.charge('account:pay', windows, { tokens: 30 });
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await scriptCalls()).toBe(before);
    expect(await counted('account:pay', 'tokens-minute')).toBe(100);
    // 20 left in the reserve: a charge of 45 pays 20 from it and sends 25.
    limiter.charge('account:pay', windows, { tokens: 45 });
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect((await scriptCalls()) - before).toBe(1);
    expect(await counted('account:pay', 'tokens-minute')).toBe(125);
    await limiter.close();
    expect(await counted('account:pay', 'tokens-minute')).toBe(50 + 30 + 45);
  });

  it('two instances on one budget: exact after leases end, the overshoot within the answers in flight, and both refuse once it is spent', async () => {
    const limiters = [instance(), instance()];
    const budget = 16_000;
    const perAnswer = 10;
    const workersPerInstance = 4;
    const windows: RateWindow[] = [{ name: 'minute', limit: 1_000_000, windowMs: MINUTE_MS, kind: 'requests' as const, scope: 'subject' as const }, { name: 'tokens-hour', limit: budget, windowMs: HOUR_MS, kind: 'tokens' as const, scope: 'subject' as const }];
    const subject = 'account:shared';
    let admitted = 0;
    const decide = async (limiter: RedisRateLimiter): Promise<RateLimitDecision> => limiter.consumeNow(subject, windows) ?? (await limiter.consume(subject, windows));
    // An answer takes a turn or so; its tokens are charged when it ends.
    const answer = async (limiter: RedisRateLimiter): Promise<boolean> => {
      const decision = await decide(limiter);
      if (!decision.allowed) return false;
      admitted += 1;
      await new Promise((resolve) => setImmediate(resolve));
      limiter.charge(subject, windows, { tokens: perAnswer });
      return true;
    };
    const before = await scriptCalls();
    // Each worker answers one request at a time until refused.
    await Promise.all(
      limiters.flatMap((limiter) =>
        Array.from({ length: workersPerInstance }, async () => {
          while (await answer(limiter));
        }),
      ),
    );
    const calls = (await scriptCalls()) - before;
    expect(admitted).toBeGreaterThan(budget / perAnswer / 2);
    // Leases were used. Without them a call decides at most the 4 lockstep workers of an
    // instance and another charges them: at least admitted / 2 calls.
    expect(calls).toBeLessThan(admitted / 4);
    // A refusal may have come while the other instance held a reserve: after leases end, the
    // rest is admitted one by one, until both refuse with no lease anywhere.
    for (let round = 0; round < 20; round += 1) {
      await leasesOver();
      expect(await counted(subject, 'tokens-hour')).toBe(admitted * perAnswer);
      const refusedBy = await Promise.all(limiters.map(async (limiter) => !(await answer(limiter))));
      if (refusedBy.every(Boolean)) break;
      while ((await answer(limiters[0]!)) || (await answer(limiters[1]!)));
    }
    await leasesOver();
    const charged = await counted(subject, 'tokens-hour');
    expect(charged).toBe(admitted * perAnswer);
    expect(charged).toBeGreaterThanOrEqual(budget);
    // The overshoot bound (docs/rate-limits.md "Overshoot bound"): limit − 1 + the tokens of
    // at most twice the answers in flight at once. Here a worker has at most two in flight:
    // its last answer, whose batched charge is sent after the call deciding its next one.
    const inFlightAtOnce = limiters.length * workersPerInstance * 2;
    expect(charged).toBeLessThanOrEqual(budget - 1 + 2 * inFlightAtOnce * perAnswer);
    for (const limiter of limiters) expect((await decide(limiter)).allowed).toBe(false);
  });
});
