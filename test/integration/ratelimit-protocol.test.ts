// The limiter protocol (src/ratelimit/protocol/, docs/rate-limits.md "The limiter protocol")
// against a real Redis: every operation through its encoder, its script and its decoder,
// every reply field checked; a reply of another version (or of no version) refused, counted,
// and failed over like a store error; two protocol versions on one Redis side by side.
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { FailoverRateLimiter } from '../../src/ratelimit/failover-rate-limiter.js';
import { MemoryRateLimiter } from '../../src/ratelimit/memory-rate-limiter.js';
import type { RateWindow } from '../../src/ratelimit/rate-limiter.js';
import { RedisRateLimiter, rateLimitKey } from '../../src/ratelimit/redis-rate-limiter.js';
import { streamSlotsKey } from '../../src/ratelimit/redis-stream-slots.js';
import {
  decodeAdmit,
  decodeCharge,
  decodeRefund,
  decodeRenew,
  decodeSlotRefresh,
  encodeAdmit,
  encodeCharge,
  RateLimitProtocolError,
  type DecisionReply,
} from '../../src/ratelimit/protocol/codec.js';
import { OperationClient } from '../../src/ratelimit/protocol/redis-operation-client.js';
import { ADMIT, CHARGE, REFUND, RENEW, SLOT_REFRESH, type LimiterOperation } from '../../src/ratelimit/protocol/limiter-operations.js';
import { admitLua, OPERATION } from '../../src/ratelimit/protocol/operations.js';
import { LUA_WINDOWS } from '../../src/ratelimit/protocol/lua-windows.js';
import { chargeAmounts } from '../../src/ratelimit/charge-batch.js';
import { bucketExpiryMs, bucketWidthMs } from '../../src/ratelimit/window-math.js';
import { captureLogLines } from '../helpers/log-capture.js';
import { redisErrorCount } from '../helpers/metric-counts.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';

const PREFIX = 'protocol-test:';
const T0 = 1_700_000_000_037;
const MINUTE_MS = 60_000;
const HOUR_MS = 3_600_000;
const WINDOWS: RateWindow[] = [
  { name: 'minute', limit: 100, windowMs: MINUTE_MS, kind: 'requests' as const, scope: 'subject' as const },
  { name: 'tokens-hour', limit: 1_000, windowMs: HOUR_MS, kind: 'tokens' as const, scope: 'subject' as const },
];
const keyHead = (subject: string): string => `${PREFIX}rl:{${subject}}:`;
const bucketOf = (nowMs: number, windowMs: number): number => Math.floor(nowMs / bucketWidthMs(windowMs));
/** ms from nowMs until the bucket current at atMs stops counting. */
const expiresIn = (atMs: number, nowMs: number, windowMs: number): number => bucketExpiryMs(bucketOf(atMs, windowMs), windowMs, bucketWidthMs(windowMs)) - nowMs;

let redis: TestRedis;
let client: Redis;
let operations: OperationClient;

beforeAll(async () => {
  redis = await startRedis();
  client = new Redis(redis.url, { maxRetriesPerRequest: 1 });
  operations = new OperationClient(client, 5_000);
});

afterEach(async () => {
  await client.flushall();
});

afterAll(async () => {
  client?.disconnect();
  await redis?.close();
});

/** An operation's script run by EVAL on encoded arguments: its reply as Redis sent it, not decoded. */
function raw(operation: LimiterOperation, args: Array<string | number>): Promise<unknown> {
  return client.eval(operation.source, args[0]!, ...args.slice(1));
}

async function bucketCount(subject: string, window: string, bucket: number): Promise<number> {
  return Number((await client.hget(rateLimitKey(PREFIX, subject, window), String(bucket))) ?? 0);
}

describe('each operation through its codec, on a real Redis', () => {
  it('charge: counts the tokens in the budgets only, answers the time it ran at', async () => {
    const reply = await operations.call(CHARGE, { keyHead: keyHead('s'), windows: WINDOWS, amounts: chargeAmounts(WINDOWS, { tokens: 300 }) ?? [], nowMs: T0 });
    expect(reply).toEqual({ nowMs: T0 });
    expect(await bucketCount('s', 'tokens-hour', bucketOf(T0, HOUR_MS))).toBe(300);
    expect(await client.exists(rateLimitKey(PREFIX, 's', 'minute'))).toBe(0);
    // No budget among the windows: nothing to send.
    expect(encodeCharge({ keyHead: keyHead('s'), windows: [WINDOWS[0]!], amounts: chargeAmounts([WINDOWS[0]!], { tokens: 5 }) ?? [], nowMs: T0 })).toBeUndefined();
  });

  it('charge v2: each budget its own amount (tokens, micro-dollars, one tool\'s calls), request windows never', async () => {
    const budgets: RateWindow[] = [
      ...WINDOWS,
      { name: 'cost-hour', limit: 1_000_000, windowMs: HOUR_MS, kind: 'cost' as const, scope: 'subject' as const },
      { name: 'tool-search-hour', limit: 10, windowMs: HOUR_MS, kind: 'tool_calls' as const, scope: 'subject' as const, tool: 'search', use: 'charge' as const },
      { name: 'tool-browse-hour', limit: 10, windowMs: HOUR_MS, kind: 'tool_calls' as const, scope: 'subject' as const, tool: 'browse', use: 'charge' as const },
    ];
    const amounts = chargeAmounts(budgets, { tokens: 70, microUsd: 1_234, toolCalls: ['search', 'search', 'other'] })!;
    expect(amounts).toEqual([0, 70, 1_234, 2, 0]);
    const args = encodeCharge({ keyHead: keyHead('c2'), windows: budgets, amounts, nowMs: T0 })!;
    // Only the three budgets with an amount are sent: 3 keys, then nowMs, 5 per budget, 3 amounts.
    expect(args[0]).toBe(3);
    expect(args.slice(-3)).toEqual([70, 1_234, 2]);
    expect(decodeCharge(await raw(CHARGE, args))).toEqual({ nowMs: T0 });
    expect(await bucketCount('c2', 'tokens-hour', bucketOf(T0, HOUR_MS))).toBe(70);
    expect(await bucketCount('c2', 'cost-hour', bucketOf(T0, HOUR_MS))).toBe(1_234);
    expect(await bucketCount('c2', 'tool-search-hour', bucketOf(T0, HOUR_MS))).toBe(2);
    expect(await client.exists(rateLimitKey(PREFIX, 'c2', 'tool-browse-hour'), rateLimitKey(PREFIX, 'c2', 'minute'))).toBe(0);
  });

  it('admit v2: a report-only window (kind 2) reports its figures in its place and never refuses', async () => {
    const spent: RateWindow = { name: 'tool-search-hour', limit: 2, windowMs: HOUR_MS, kind: 'tool_calls' as const, scope: 'subject' as const, tool: 'search', use: 'charge' as const };
    await operations.call(CHARGE, { keyHead: keyHead('r'), windows: [spent], amounts: [2], nowMs: T0 });
    const windows: RateWindow[] = [WINDOWS[0]!, { ...spent, use: 'report' as const }, WINDOWS[1]!];
    const args = encodeAdmit({ keyHead: keyHead('r'), windows, nowMs: T0 + 1, count: 1, leaseUnits: 0, leaseTokens: 0, refund: undefined, slot: undefined });
    expect(args.filter((_, i) => i > 1 + 3 + 11 - 1 && (i - (1 + 3 + 11)) % 5 === 4)).toEqual([0, 2, 1]);
    const reported = decodeAdmit(await raw(ADMIT, args), 3);
    expect([reported.admitted, reported.remaining]).toEqual([1, [99, 0, 1_000]]);
    expect(reported.resetMs[1]).toBe(expiresIn(T0, T0 + 1, HOUR_MS));
    // The same window refusing (the request names the tool): refused, nothing counted.
    const refused = await operations.call(ADMIT, { ...{ keyHead: keyHead('r'), nowMs: T0 + 2, count: 1, leaseUnits: 0, leaseTokens: 0, refund: undefined, slot: undefined }, windows: [WINDOWS[0]!, spent, WINDOWS[1]!] });
    expect([refused.admitted, refused.remaining, refused.retryAfterMs]).toEqual([0, [99, 0, 1_000], expiresIn(T0, T0 + 2, HOUR_MS)]);
  });

  it('admit with a slot: every field of the reply, the cap refusing past the free slots', async () => {
    await operations.call(CHARGE, { keyHead: keyHead('a'), windows: WINDOWS, amounts: chargeAmounts(WINDOWS, { tokens: 300 }) ?? [], nowMs: T0 });
    const slot = { key: streamSlotsKey(PREFIX, 'a'), streams: 2, leaseMs: 30_000, memberHead: 'inst:1' };
    const reply = await operations.call(ADMIT, { keyHead: keyHead('a'), windows: WINDOWS, nowMs: T0 + 10, count: 3, leaseUnits: 0, leaseTokens: 0, refund: undefined, slot });
    const now = T0 + 10;
    expect(reply).toEqual({
      admitted: 2,
      // Refused by the cap, not by a window: no window to wait for.
      retryAfterMs: 0,
      nowMs: now,
      leaseUnits: 0,
      leaseTokens: 0,
      leaseCost: 0,
      leaseValidMs: Math.min(bucketWidthMs(MINUTE_MS) - (now % bucketWidthMs(MINUTE_MS)), bucketWidthMs(HOUR_MS) - (now % bucketWidthMs(HOUR_MS))),
      windowAdmitted: 3,
      slotsFree: 0,
      remaining: [98, 700],
      resetMs: [0, 0],
      oldestMs: [expiresIn(now, now, MINUTE_MS), expiresIn(T0, now, HOUR_MS)],
    });
    expect(await client.zrange(slot.key, 0, -1)).toEqual(['inst:1:0', 'inst:1:1']);
  });

  it('admit with a lease and a refund: units and tokens reserved, the earlier lease given back first', async () => {
    const s = 'lease';
    await operations.call(CHARGE, { keyHead: keyHead(s), windows: WINDOWS, amounts: chargeAmounts(WINDOWS, { tokens: 200 }) ?? [], nowMs: T0 });
    const first = await operations.call(ADMIT, { keyHead: keyHead(s), windows: WINDOWS, nowMs: T0, count: 1, leaseUnits: 4, leaseTokens: 30, refund: undefined, slot: undefined });
    expect([first.admitted, first.leaseUnits, first.leaseTokens, first.remaining]).toEqual([1, 4, 30, [95, 770]]);
    // The lease is given back in full with the next call: it comes off before that call counts.
    const refund = { units: 4, tokens: 30, buckets: [bucketOf(T0, MINUTE_MS), bucketOf(T0, HOUR_MS)] };
    const second = await operations.call(ADMIT, { keyHead: keyHead(s), windows: WINDOWS, nowMs: T0 + 5, count: 2, leaseUnits: 0, leaseTokens: 0, refund, slot: undefined });
    expect([second.admitted, second.windowAdmitted, second.leaseUnits, second.leaseTokens, second.remaining]).toEqual([2, 2, 0, 0, [97, 800]]);
  });

  it('admit v3 with a cost budget (kind 3): micro-dollars reserved apart from tokens, each the least 1/16 share, given back apart', async () => {
    const s = 'cost-lease';
    const windows: RateWindow[] = [WINDOWS[0]!, WINDOWS[1]!, { name: 'usd-hour', limit: 16_000, windowMs: HOUR_MS, kind: 'cost' as const, scope: 'subject' as const }];
    const args = encodeAdmit({ keyHead: keyHead(s), windows, nowMs: T0, count: 1, leaseUnits: 4, leaseTokens: 30, leaseCost: 5_000, refund: undefined, slot: undefined });
    expect(args.filter((_, i) => i > 1 + 3 + 11 - 1 && (i - (1 + 3 + 11)) % 5 === 4)).toEqual([0, 1, 3]);
    const first = decodeAdmit(await raw(ADMIT, args), 3);
    // 16,000 / 16 = 1,000 micro-dollars at most; the tokens their own 30.
    expect([first.admitted, first.leaseUnits, first.leaseTokens, first.leaseCost, first.remaining]).toEqual([1, 4, 30, 1_000, [95, 970, 15_000]]);
    expect(await bucketCount(s, 'usd-hour', bucketOf(T0, HOUR_MS))).toBe(1_000);
    // A spent cost budget: no lease at all (units come only with micro-dollars to spend).
    await operations.call(CHARGE, { keyHead: keyHead(s), windows, amounts: [0, 0, 14_990], nowMs: T0 + 1 });
    const starved = await operations.call(ADMIT, { keyHead: keyHead(s), windows, nowMs: T0 + 2, count: 1, leaseUnits: 4, leaseTokens: 30, leaseCost: 500, refund: undefined, slot: undefined });
    expect([starved.admitted, starved.leaseUnits, starved.leaseTokens, starved.leaseCost]).toEqual([1, 0, 0, 0]);
    // The first lease's unused reserve back: units, tokens and micro-dollars each to their own windows.
    const refund = { units: 4, tokens: 30, cost: 600, buckets: [bucketOf(T0, MINUTE_MS), bucketOf(T0, HOUR_MS), bucketOf(T0, HOUR_MS)] };
    await operations.call(REFUND, { keyHead: keyHead(s), windows, nowMs: T0 + 3, refund });
    expect(await bucketCount(s, 'minute', bucketOf(T0, MINUTE_MS))).toBe(2);
    expect(await bucketCount(s, 'tokens-hour', bucketOf(T0, HOUR_MS))).toBe(0);
    expect(await bucketCount(s, 'usd-hour', bucketOf(T0, HOUR_MS))).toBe(1_000 + 14_990 - 600);
    // Renew v2 reserves micro-dollars the same way.
    const renewed = await operations.call(RENEW, { keyHead: keyHead(s), windows: [WINDOWS[0]!, windows[2]!], units: 2, tokens: 0, cost: 10, leaseFromMs: 0 });
    expect([renewed.leaseUnits, renewed.leaseTokens, renewed.leaseCost]).toEqual([2, 0, 10]);
  });

  it('admit refused by a full window: retryAfterMs until the oldest counted bucket leaves', async () => {
    const tight: RateWindow[] = [{ name: 'minute', limit: 2, windowMs: MINUTE_MS, kind: 'requests' as const, scope: 'subject' as const }];
    const call = (nowMs: number, count: number): Promise<DecisionReply> => operations.call(ADMIT, { keyHead: keyHead('full'), windows: tight, nowMs, count, leaseUnits: 0, leaseTokens: 0, refund: undefined, slot: undefined });
    await call(T0, 2);
    const reply = await call(T0 + 1_500, 1);
    expect([reply.admitted, reply.windowAdmitted, reply.remaining[0]]).toEqual([0, 0, 0]);
    expect(reply.retryAfterMs).toBe(expiresIn(T0, T0 + 1_500, MINUTE_MS));
    expect(reply.resetMs[0]).toBe(reply.retryAfterMs);
  });

  it('renew: a lease counted ahead at the end of the one it replaces, on the server clock', async () => {
    const s = 'renew';
    // Minute windows only: a lease ahead lands in a later minute bucket (100 ms wide buckets would not show it).
    const windows: RateWindow[] = [{ name: 'minute', limit: 10_000, windowMs: MINUTE_MS, kind: 'requests' as const, scope: 'subject' as const }];
    const serverMs = Number((await client.time())[0]) * 1_000;
    const leaseFromMs = serverMs + 60_000;
    const reply = await operations.call(RENEW, { keyHead: keyHead(s), windows, units: 6, tokens: 0, leaseFromMs });
    expect([reply.admitted, reply.windowAdmitted, reply.leaseUnits, reply.leaseTokens, reply.slotsFree, reply.retryAfterMs]).toEqual([0, 0, 6, 0, 0, 0]);
    // Clamped to one second ahead of the server's now.
    const leaseAt = reply.nowMs + 1_000;
    expect(await bucketCount(s, 'minute', bucketOf(leaseAt, MINUTE_MS))).toBe(6);
    expect(reply.leaseValidMs).toBe((bucketOf(leaseAt, MINUTE_MS) + 1) * bucketWidthMs(MINUTE_MS) - reply.nowMs);
    expect(reply.remaining).toEqual([10_000 - 6]);
  });

  it('refund: units and tokens leave the buckets they were counted in, and only those', async () => {
    const s = 'refund';
    await operations.call(ADMIT, { keyHead: keyHead(s), windows: WINDOWS, nowMs: T0, count: 5, leaseUnits: 0, leaseTokens: 0, refund: undefined, slot: undefined });
    await operations.call(CHARGE, { keyHead: keyHead(s), windows: WINDOWS, amounts: chargeAmounts(WINDOWS, { tokens: 50 }) ?? [], nowMs: T0 });
    const refund = { units: 3, tokens: 20, buckets: [bucketOf(T0, MINUTE_MS), bucketOf(T0, HOUR_MS)] };
    expect(await operations.call(REFUND, { keyHead: keyHead(s), windows: WINDOWS, nowMs: T0 + 2_000, refund })).toEqual({ nowMs: T0 + 2_000 });
    expect(await bucketCount(s, 'minute', bucketOf(T0, MINUTE_MS))).toBe(2);
    expect(await bucketCount(s, 'tokens-hour', bucketOf(T0, HOUR_MS))).toBe(30);
  });

  it('slotRefresh: moves the held slots\' expiry on; a released one stays gone', async () => {
    const key = streamSlotsKey(PREFIX, 'slots');
    await client.zadd(key, 1, 'a:0', 1, 'a:1');
    await client.zrem(key, 'a:1');
    await operations.call(SLOT_REFRESH, { key, leaseMs: 30_000, members: ['a:0', 'a:1'] });
    const serverMs = Number((await client.time())[0]) * 1_000;
    const scores = await client.zrange(key, 0, -1, 'WITHSCORES');
    expect(scores[0]).toBe('a:0');
    expect(Number(scores[1])).toBeGreaterThan(serverMs + 25_000);
    expect(scores).toHaveLength(2);
  });
});

describe('replies of another version, or of none', () => {
  it('each decoder refuses a reply that is not exactly its operation\'s, and counts it', async () => {
    const before = await redisErrorCount('ratelimit_protocol');
    const args = encodeAdmit({ keyHead: keyHead('v2'), windows: WINDOWS, nowMs: T0, count: 1, leaseUnits: 0, leaseTokens: 0, refund: undefined, slot: undefined });
    const v2 = await client.eval(admitLua('agw_admit_v4'), args[0]!, ...args.slice(1));
    expect((v2 as unknown[])[0]).toBe('agw_admit_v4');
    expect(() => decodeAdmit(v2, WINDOWS.length)).toThrow(RateLimitProtocolError);
    expect(() => decodeAdmit(v2, WINDOWS.length)).toThrow(/agw_admit_v3 returned an unexpected reply/);
    // A renew decoder does not take an admit reply, nor the other way round.
    const admit = await raw(ADMIT, encodeAdmit({ keyHead: keyHead('v1'), windows: WINDOWS, nowMs: T0, count: 1, leaseUnits: 0, leaseTokens: 0, refund: undefined, slot: undefined }));
    expect(() => decodeRenew(admit, WINDOWS.length)).toThrow(RateLimitProtocolError);
    // Malformed: not a list, a figure short, a field not an integer, the pre-protocol reply (no tag).
    const good = admit as unknown[];
    for (const bad of [null, 'OK', good.slice(0, -1), [...good.slice(0, 5), '1', ...good.slice(6)], [...good.slice(0, 5), 1.5, ...good.slice(6)], good.slice(1)]) {
      expect(() => decodeAdmit(bad, WINDOWS.length)).toThrow(RateLimitProtocolError);
    }
    expect(() => decodeCharge(['agw_charge_v1', T0])).toThrow(RateLimitProtocolError);
    expect(() => decodeRefund([OPERATION.refund])).toThrow(RateLimitProtocolError);
    expect(() => decodeSlotRefresh(1)).toThrow(RateLimitProtocolError);
    expect(decodeAdmit(admit, WINDOWS.length).admitted).toBe(1);
    expect((await redisErrorCount('ratelimit_protocol')) - before).toBe(12);
  });

  it('a limiter given a wrong-version reply fails like a store error: the failover policy decides (deny: 503)', async () => {
    // A client on which "agw_admit_v2" runs another version's script: its reply is refused.
    const other = new Redis(redis.url, { maxRetriesPerRequest: 1 });
    const define = other.defineCommand.bind(other);
    other.defineCommand = (name, definition) => define(name, name === OPERATION.admit ? { ...definition, lua: admitLua('agw_admit_v4') } : definition);
    try {
      const primary = new RedisRateLimiter({ client: other, prefix: PREFIX, commandTimeoutMs: 2_000 });
      const fallback = new MemoryRateLimiter({ clock: new ManualClock() });
      const before = await redisErrorCount('ratelimit_protocol');
      await expect(primary.consume('account:x', WINDOWS)).rejects.toThrow(RateLimitProtocolError);
      const deny = new FailoverRateLimiter({ primary, fallback, mode: 'deny', logger: captureLogLines().logger });
      await expect(deny.consume('account:x', WINDOWS)).rejects.toMatchObject({ type: 'store_unavailable' });
      expect((await redisErrorCount('ratelimit_protocol')) - before).toBe(2);
    } finally {
      other.disconnect();
    }
  });
});

/**
 * The agw_admit_v2 argument layout (decision 0065: no cost reserve, 9 head values) over today's
 * window math, as a gateway from before decision 0076 sends it: cost windows go as kind 1.
 */
const ADMIT_V2 = `${LUA_WINDOWS}
local wins = {}
for k = 1, (#ARGV - 9) / 5 do wins[k] = windowAt(k, 10 + (k - 1) * 5) end
return admitCore('agw_admit_v2', { nowMs = serverNow(ARGV[1]), wins = wins, count = tonumber(ARGV[2]),
  leaseWanted = tonumber(ARGV[3]), tokenLeaseWanted = tonumber(ARGV[4]), leaseFromMs = 0,
  refundUnits = tonumber(ARGV[5]), refundTokens = tonumber(ARGV[6]), slot = false })
`;

/** A v3 admit request laid out as v2 took it: no leaseCost, no refundCost. */
function asV2(args: Array<string | number>, windowCount: number): Array<string | number> {
  const at = 1 + windowCount;
  const v2 = [...args];
  v2.splice(at + 7, 1);
  v2.splice(at + 4, 1);
  return v2;
}

describe('the upgrade of decision 0076: agw_admit_v2 gateways beside agw_admit_v3 ones', () => {
  it('count a plan with a cost budget in the same keys, against one limit, each reading its own replies', async () => {
    const old = new Redis(redis.url, { maxRetriesPerRequest: 1 });
    old.defineCommand('agw_admit_v2', { lua: ADMIT_V2 });
    const admitV2 = (old as unknown as Record<string, (...args: Array<string | number>) => Promise<unknown>>)['agw_admit_v2']!.bind(old);
    const windows: RateWindow[] = [{ name: 'minute', limit: 100, windowMs: MINUTE_MS, kind: 'requests' as const, scope: 'subject' as const }, { name: 'usd', limit: 1_000, windowMs: 86_400_000, kind: 'cost' as const, scope: 'subject' as const }];
    const request = (nowMs: number): ReturnType<typeof encodeAdmit> => encodeAdmit({ keyHead: keyHead('account:up'), windows, nowMs, count: 1, leaseUnits: 0, leaseTokens: 0, refund: undefined, slot: undefined });
    try {
      const remaining: number[] = [];
      for (let i = 0; i < 6; i += 1) {
        if (i % 2 === 0) remaining.push(decodeAdmit(await raw(ADMIT, request(T0 + i)), 2).remaining[0]!);
        else remaining.push(decodeAdmit(await admitV2(...asV2(request(T0 + i), 2)), 2, 'agw_admit_v2').remaining[0]!);
      }
      expect(remaining).toEqual([99, 98, 97, 96, 95, 94]);
      // A charge from either counts in the one cost budget both read.
      await operations.call(CHARGE, { keyHead: keyHead('account:up'), windows, amounts: [0, 300], nowMs: T0 + 7 });
      expect(decodeAdmit(await raw(ADMIT, request(T0 + 8)), 2).remaining[1]).toBe(700);
      expect(decodeAdmit(await admitV2(...asV2(request(T0 + 8), 2)), 2, 'agw_admit_v2').remaining[1]).toBe(700);
      const fromV2 = await admitV2(...asV2(request(T0 + 9), 2));
      expect(() => decodeAdmit(fromV2, 2)).toThrow(RateLimitProtocolError);
    } finally {
      old.disconnect();
    }
  });
});

describe('a rolling upgrade: two protocol versions on one Redis', () => {
  it('each version answers its own callers, and both count in the same keys', async () => {
    // The next version's gateway: the same operation under its own name (its own SHA1 in the script cache).
    const next = new Redis(redis.url, { maxRetriesPerRequest: 1 });
    next.defineCommand('agw_admit_v4', { lua: admitLua('agw_admit_v4') });
    const admitV2 = (next as unknown as Record<string, (...args: Array<string | number>) => Promise<unknown>>)['agw_admit_v4']!.bind(next);
    const windows: RateWindow[] = [{ name: 'minute', limit: 10, windowMs: MINUTE_MS, kind: 'requests' as const, scope: 'subject' as const }];
    const request = (nowMs: number): ReturnType<typeof encodeAdmit> => encodeAdmit({ keyHead: keyHead('account:both'), windows, nowMs, count: 1, leaseUnits: 0, leaseTokens: 0, refund: undefined, slot: undefined });
    try {
      const remaining: number[] = [];
      // Interleaved, as two gateway versions behind one load balancer send them.
      for (let i = 0; i < 6; i += 1) {
        if (i % 2 === 0) remaining.push(decodeAdmit(await raw(ADMIT, request(T0 + i)), 1).remaining[0]!);
        else remaining.push(decodeAdmit(await admitV2(...request(T0 + i)), 1, 'agw_admit_v4').remaining[0]!);
      }
      expect(remaining).toEqual([9, 8, 7, 6, 5, 4]);
      expect(Number(await client.hget(rateLimitKey(PREFIX, 'account:both', 'minute'), String(bucketOf(T0, MINUTE_MS))))).toBe(6);
      // Neither reads the other's reply.
      const fromV2 = await admitV2(...request(T0 + 8));
      expect(() => decodeAdmit(fromV2, 1)).toThrow(RateLimitProtocolError);
      const fromV1 = await raw(ADMIT, request(T0 + 9));
      expect(() => decodeAdmit(fromV1, 1, 'agw_admit_v4')).toThrow(RateLimitProtocolError);
      // Both scripts live in the cache side by side.
      const shas = await Promise.all([admitLua(), admitLua('agw_admit_v4')].map((source) => client.script('LOAD', source) as Promise<string>));
      expect(new Set(shas).size).toBe(2);
    } finally {
      next.disconnect();
    }
  });
});
