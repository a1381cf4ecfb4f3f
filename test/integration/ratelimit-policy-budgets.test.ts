// Cost budgets and tool-call quotas in the limiter itself (docs/rate-limits.md "Cost budgets",
// "Tool-call quotas"), on a real Redis (single and a 3-master Cluster) and in memory: the
// agw_admit_v3 and agw_charge_v2 operations take the same decisions as window-math.ts (the
// Lua port equals the TypeScript), report-only windows never refuse, a quota admitting an MCP
// call counts it at admission (decision 0117), every key of a subject sits in one slot, and
// plans with tool quotas never take a lease (decisions 0065, 0076).
import { Cluster, Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { planSchema } from '../../src/config/plan-schema.js';
import { compilePolicy } from '../../src/policy/admission-policy.js';
import { chargeAmounts } from '../../src/ratelimit/charge-batch.js';
import { endUserHash } from '../../src/ratelimit/end-user-hash.js';
import { MemoryRateLimiter } from '../../src/ratelimit/memory-rate-limiter.js';
import { CHARGE, REFUND, RENEW } from '../../src/ratelimit/protocol/limiter-operations.js';
import { bucketWidthMs } from '../../src/ratelimit/window-math.js';
import { OperationClient } from '../../src/ratelimit/protocol/redis-operation-client.js';
import { userScope, type ChargeUsage, type RateLimitDecision } from '../../src/ratelimit/rate-limiter.js';
import { RedisRateLimiter } from '../../src/ratelimit/redis-rate-limiter.js';
import { lcg } from '../helpers/lcg.js';
import { waitFor } from '../helpers/redis-process.js';
import { TOPOLOGIES, useSingleAndClusterRedis } from '../helpers/single-and-cluster-redis.js';

const PREFIX = 'pb:';
const T0 = 1_700_000_000_037;
const PLAN = planSchema.parse({
  windows: [{ requests: 40, per: '1m' }],
  tokens: [{ tokens: 3_000, per: '1m' }],
  cost: [{ usd: 0.0004, per: '1m' }],
  tool_calls: { search: [{ calls: 4, per: '1m' }], browse: [{ calls: 2, per: '10s' }] },
});
const WITH_END_USERS = planSchema.parse({
  windows: [{ requests: 40, per: '1m' }],
  cost: [{ usd: 0.0004, per: '1m' }],
  tool_calls: { search: [{ calls: 4, per: '1m' }] },
  end_user: { windows: [{ requests: 6, per: '1m' }] },
});
const policyWindows = (plan: typeof PLAN, named: ReadonlySet<string> | null) => compilePolicy(plan, false).windowsFor(named, false);
const CHARGED = policyWindows(PLAN, new Set(['search', 'browse']));
const NAMED_SETS = [null, new Set(['search']), new Set(['browse']), new Set(['search', 'browse'])];
/** Two quotas of one MCP server's tools and no budget (a lease beside a budget waits for a charge, which MCP calls never make). */
const TWO_QUOTAS = planSchema.parse({ windows: [{ requests: 1_000_000, per: '1m' }], tool_calls: { files__echo: [{ calls: 120, per: '1m' }], files__other: [{ calls: 5, per: '1m' }] } });
/** An MCP call's list: the quotas that count the call in their admit form (decision 0117). */
const callWindows = (plan: typeof PLAN, call: ReadonlySet<string>) => compilePolicy(plan, false).callWindowsFor(call, false);
const CALL_SETS = [new Set(['search']), new Set(['browse']), new Set(['search']), new Set(['other'])];

const topologies = useSingleAndClusterRedis();
const allKeys = (client: Redis | Cluster, prefix: string): Promise<string[]> => topologies.allKeys(client, prefix);

function kindOfRefusal(decision: RateLimitDecision): string {
  const full = decision.windows.filter((w) => w.remaining === 0 && w.reportOnly !== true);
  if (full.some((w) => w.kind === undefined)) return 'requests';
  if (full.some((w) => w.kind === 'tokens')) return 'tokens';
  if (full.some((w) => w.kind === 'cost')) return 'cost';
  return 'tool';
}

for (const topology of TOPOLOGIES) {
  describe(`cost budgets and tool quotas on Redis (${topology})`, () => {
    const client = (): Redis | Cluster => topologies.client(topology);

    it('takes the same decisions as the memory limiter, admissions and charges interleaved (the Lua port equals window-math)', async () => {
      const prefix = `${PREFIX}eq:`;
      const limiter = new RedisRateLimiter({ client: client(), prefix, commandTimeoutMs: 2_000 });
      const operations = new OperationClient(client(), 2_000);
      const memory = new MemoryRateLimiter();
      const random = lcg(topology === 'single' ? 11 : 12);
      const refusals = new Map<string, number>();
      let reportedSpent = 0;
      let nowMs = T0;
      for (let i = 0; i < 400; i += 1) {
        nowMs += random() < 0.8 ? Math.floor(random() * 60) : Math.floor(random() * 4_000);
        const subject = `account:${i % 2}`;
        if (random() < 0.45) {
          const usage: ChargeUsage = {
            tokens: Math.floor(random() * 300),
            microUsd: Math.floor(random() * 60),
            toolCalls: ['search', 'browse', 'other'].filter(() => random() < 0.5),
          };
          memory.chargeAt(subject, CHARGED, usage, nowMs);
          const amounts = chargeAmounts(CHARGED, usage);
          if (amounts !== undefined) await operations.call(CHARGE, { keyHead: `${prefix}rl:{${subject}}:`, windows: CHARGED, amounts, nowMs });
          continue;
        }
        const isCall = random() < 0.5;
        const windows = isCall ? callWindows(PLAN, CALL_SETS[Math.floor(random() * CALL_SETS.length)]!) : policyWindows(PLAN, NAMED_SETS[Math.floor(random() * NAMED_SETS.length)]!);
        const expected = memory.consumeAt(subject, windows, nowMs);
        expect(await limiter.consume(subject, windows, undefined, undefined, { nowMs }), `request ${i}`).toEqual(expected);
        if (!expected.allowed) {
          // A call refused with its own quota full (whatever else is full) counts as the case this covers.
          const byCallQuota = isCall && expected.windows.some((w) => w.tool !== undefined && w.remaining === 0 && w.reportOnly !== true);
          const kind = byCallQuota ? 'call tool' : kindOfRefusal(expected);
          refusals.set(kind, (refusals.get(kind) ?? 0) + 1);
        }
        else if (expected.windows.some((w) => w.reportOnly === true && w.remaining === 0)) reportedSpent += 1;
      }
      // Every kind of refusal, and admissions beside a spent report-only quota, must occur for the comparison to mean anything.
      for (const kind of ['tokens', 'cost', 'tool', 'call tool']) expect(refusals.get(kind) ?? 0, kind).toBeGreaterThan(2);
      expect(reportedSpent).toBeGreaterThan(2);
      await limiter.close();
    });

    it('an MCP call is leased, other quotas reporting beside it: the call\'s quota holds exactly, the reported ones are never counted in', async () => {
      const prefix = `${PREFIX}lease-${Math.random().toString(36).slice(2)}:`;
      const limiter = new RedisRateLimiter({ client: client(), prefix, commandTimeoutMs: 2_000, leases: true });
      const echo = callWindows(TWO_QUOTAS, new Set(['files__echo', 'files__*']));
      expect(echo.filter((w) => w.kind === 'tool_calls').map((w) => w.kind === 'tool_calls' && w.use)).toEqual(['admit', 'report']);
      let admitted = 0;
      for (let i = 0; i < 200; i += 1) {
        const decision = limiter.consumeNow('account:q', echo) ?? (await limiter.consume('account:q', echo));
        if (decision.allowed) admitted += 1;
        // A lease's figures never spend the reported quota.
        expect(decision.windows.find((w) => w.tool === 'files__other')).toMatchObject({ remaining: 5, reportOnly: true });
      }
      expect(admitted).toBe(120);
      // Leases served some of the calls, and at least one was renewed (agw_renew_v3 with a report-only window in the list).
      expect(limiter.counters.requestCalls).toBeLessThan(200);
      // Unused lease units go back on close (agw_refund_v3, a report-only window in its list): the call's quota counts exactly the calls admitted,
      // and the reported quota was never written.
      await limiter.close();
      const sum = (fields: Record<string, string>) => Object.entries(fields).reduce((total, [field, value]) => (field === 'bw' ? total : total + Number(value)), 0);
      expect(sum(await client().hgetall(`${prefix}rl:{account:q}:tool-files__echo-minute`))).toBe(120);
      expect(sum(await client().hgetall(`${prefix}rl:{account:q}:tool-files__other-minute`))).toBe(0);
      // A chat request's list with quotas (here: naming no tool, all reporting) still makes an admit call each time.
      const chat = new RedisRateLimiter({ client: client(), prefix: `${prefix}c:`, commandTimeoutMs: 2_000, leases: true });
      const unnamed = compilePolicy(TWO_QUOTAS, false).windowsFor(null, false);
      for (let i = 0; i < 8; i += 1) expect((chat.consumeNow('account:c', unnamed) ?? (await chat.consume('account:c', unnamed))).allowed).toBe(true);
      expect(chat.counters.requestCalls).toBe(8);
      await chat.close();
    });

    it('agw_renew_v3 and agw_refund_v3 set a report-only window apart: a lease is never counted in it, nor given back to it', async () => {
      const prefix = `${PREFIX}v3-${Math.random().toString(36).slice(2)}:`;
      const keyHead = `${prefix}rl:{account:v}:`;
      const operations = new OperationClient(client(), 2_000);
      const list = callWindows(TWO_QUOTAS, new Set(['files__echo']));
      const other = list.findIndex((w) => w.kind === 'tool_calls' && w.tool === 'files__other');
      const echo = list.findIndex((w) => w.kind === 'tool_calls' && w.tool === 'files__echo');
      // Three calls of the other tool, charged by chat answers.
      const chargeList = compilePolicy(TWO_QUOTAS, false).chargeList(false)!;
      await operations.call(CHARGE, { keyHead, windows: chargeList, amounts: chargeAmounts(chargeList, { tokens: 0, toolCalls: ['files__other', 'files__other', 'files__other'] })!, nowMs: '' });
      const sum = async (name: string) => Object.entries(await client().hgetall(`${keyHead}${name}`)).reduce((total, [field, value]) => (field === 'bw' ? total : total + Number(value)), 0);
      const renewed = await operations.call(RENEW, { keyHead, windows: list, units: 4, tokens: 0, leaseFromMs: 0 });
      expect(renewed.leaseUnits).toBe(4);
      // Counted in the request window and the call's quota, not in the reported one, whose figure is read in its place.
      expect([await sum('minute'), await sum('tool-files__echo-minute'), await sum('tool-files__other-minute')]).toEqual([4, 4, 3]);
      expect(renewed.remaining[other]).toBe(2);
      expect(renewed.remaining[echo]).toBe(120 - 4);
      // Given back: the units leave the windows they were counted in; the reported quota keeps its three calls.
      const bucket = (w: (typeof list)[number]) => Math.floor(renewed.nowMs / bucketWidthMs(w.windowMs));
      await operations.call(REFUND, { keyHead, windows: list, nowMs: '', refund: { units: 4, buckets: list.map(bucket) } });
      expect([await sum('minute'), await sum('tool-files__echo-minute'), await sum('tool-files__other-minute')]).toEqual([0, 0, 3]);
    });

    it('charges cost and tool calls after the answer, one admit call per request (no lease), all keys in one slot', async () => {
      const prefix = `${PREFIX}one:`;
      const limiter = new RedisRateLimiter({ client: client(), prefix, commandTimeoutMs: 2_000, leases: true });
      const alice = userScope(endUserHash('account:p', 'alice'));
      const named = policyWindows(WITH_END_USERS, new Set(['search']));
      const unnamed = policyWindows(WITH_END_USERS, null);
      const charged = policyWindows(WITH_END_USERS, new Set(['search']));
      for (let i = 0; i < 4; i += 1) {
        expect((await limiter.consume('account:p', named, undefined, alice)).allowed).toBe(true);
        limiter.charge('account:p', charged, { tokens: 10, microUsd: 50, toolCalls: ['search'] }, alice);
      }
      await waitFor('the charges', async () => {
        const fields = await client().hgetall(`${prefix}rl:{account:p}:tool-search-minute`);
        return Object.entries(fields).reduce((sum, [field, value]) => (field === 'bw' ? sum : sum + Number(value)), 0) === 4;
      });
      // The quota is spent: naming the tool refuses, not naming it admits and reports it spent.
      const refused = await limiter.consume('account:p', named, undefined, alice);
      expect(refused.allowed).toBe(false);
      expect(refused.windows.find((w) => w.tool === 'search')).toMatchObject({ remaining: 0 });
      const admitted = await limiter.consume('account:p', unnamed, undefined, alice);
      expect(admitted.allowed).toBe(true);
      expect(admitted.windows.find((w) => w.tool === 'search')).toMatchObject({ remaining: 0, reportOnly: true });
      expect(admitted.windows.find((w) => w.kind === 'cost')).toMatchObject({ remaining: 400 - 200 });
      // One admit call per request: the plan's requests never ride a lease.
      expect(limiter.counters.requestCalls).toBe(6);
      expect(limiter.leaseOf('account:p')).toBeUndefined();
      const keys = await allKeys(client(), prefix);
      expect(keys.some((key) => key.endsWith(':cost-minute'))).toBe(true);
      for (const key of keys) expect(await client().pttl(key)).toBeGreaterThan(0);
      if (topology === 'cluster') expect(new Set(await Promise.all(keys.map((key) => topologies.cluster.cluster('KEYSLOT', key)))).size).toBe(1);
      await limiter.close();
    });
  });
}

describe('cost budgets and tool quotas in memory (embedded mode)', () => {
  it('an MCP call counts in its quota at admission: the quota refuses the call after its last unit, with nothing charged', () => {
    const memory = new MemoryRateLimiter({ clock: { now: () => T0 } });
    const search = callWindows(PLAN, new Set(['search']));
    // The quota counting the call in its admit form; the others only report (the same names, in the same order, as a chat request's list).
    expect(search.filter((w) => w.kind === 'tool_calls').map((w) => [w.kind === 'tool_calls' && w.tool, w.kind === 'tool_calls' && w.use])).toEqual([['search', 'admit'], ['browse', 'report']]);
    expect(search.map((w) => w.name)).toEqual(policyWindows(PLAN, null).map((w) => w.name));
    for (let i = 0; i < 4; i += 1) expect(memory.consumeAt('account:c', search, T0 + i).windows.find((w) => w.tool === 'search')).toMatchObject({ remaining: 3 - i });
    const refused = memory.consumeAt('account:c', search, T0 + 5);
    expect(refused.allowed).toBe(false);
    expect(kindOfRefusal(refused)).toBe('tool');
    // Another tool's call is not under that quota, and the chat form reads the same counter.
    expect(memory.consumeAt('account:c', callWindows(PLAN, new Set(['other'])), T0 + 6).allowed).toBe(true);
    expect(memory.consumeAt('account:c', policyWindows(PLAN, new Set(['search'])), T0 + 7).allowed).toBe(false);
  });

  it('refuses a spent cost budget and a named spent tool, reports an unnamed one', () => {
    const memory = new MemoryRateLimiter({ clock: { now: () => T0 } });
    const named = policyWindows(PLAN, new Set(['browse']));
    const unnamed = policyWindows(PLAN, null);
    expect(memory.consumeAt('account:m', named, T0).allowed).toBe(true);
    memory.chargeAt('account:m', CHARGED, { tokens: 1, toolCalls: ['browse', 'browse'] }, T0 + 1);
    expect(memory.consumeAt('account:m', named, T0 + 2).allowed).toBe(false);
    const reported = memory.consumeAt('account:m', unnamed, T0 + 3);
    expect(reported.allowed).toBe(true);
    expect(reported.windows.find((w) => w.tool === 'browse')).toMatchObject({ remaining: 0, reportOnly: true });
    memory.chargeAt('account:m', CHARGED, { tokens: 1, microUsd: 400 }, T0 + 4);
    const spent = memory.consumeAt('account:m', unnamed, T0 + 5);
    expect(spent.allowed).toBe(false);
    expect(kindOfRefusal(spent)).toBe('cost');
  });
});
