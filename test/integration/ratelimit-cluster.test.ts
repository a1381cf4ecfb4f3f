// The limiter on a real 3-master Redis Cluster: each operation's keys share the hash tag
// {subject}, so every call lands on one slot and works wherever that slot lives.
import { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryRateLimiter } from '../../src/ratelimit/memory-rate-limiter.js';
import type { RateWindow } from '../../src/ratelimit/rate-limiter.js';
import { RedisRateLimiter, rateLimitKey } from '../../src/ratelimit/redis-rate-limiter.js';
import { streamSlotsKey } from '../../src/ratelimit/redis-stream-slots.js';
import { startRedisCluster, type TestRedisCluster } from '../helpers/redis-cluster.js';
import { waitFor } from '../helpers/redis-process.js';

const PREFIX = 'agentgw:';
const WINDOWS: RateWindow[] = [
  { name: 'minute', limit: 3, windowMs: 60_000, kind: 'requests' as const, scope: 'subject' as const },
  { name: 'day', limit: 10, windowMs: 86_400_000, kind: 'requests' as const, scope: 'subject' as const },
];

let redisCluster: TestRedisCluster;
let cluster: Cluster;

beforeAll(async () => {
  redisCluster = await startRedisCluster({ masters: 3 });
  cluster = new Cluster([redisCluster.seeds[0]!], { redisOptions: { maxRetriesPerRequest: 1 } });
  await waitFor('the ioredis cluster client', async () => (await cluster.ping()) === 'PONG');
});

afterAll(async () => {
  cluster?.disconnect();
  await redisCluster?.close();
});

describe('RedisRateLimiter on Redis Cluster', () => {
  it('takes the same decisions as the memory limiter, for subjects spread over every master', async () => {
    const limiter = new RedisRateLimiter({ client: cluster, prefix: PREFIX, commandTimeoutMs: 2_000 });
    const memory = new MemoryRateLimiter();
    const subjects = Array.from({ length: 24 }, (_, i) => `account:tenant-${i}`);
    let nowMs = 1_700_000_000_000;
    let allowed = 0;
    let rejected = 0;
    for (let round = 0; round < 14; round += 1) {
      nowMs += round % 4 === 3 ? 61_000 : 700;
      for (const subject of subjects) {
        const expected = memory.consumeAt(subject, WINDOWS, nowMs);
        expect(await limiter.consume(subject, WINDOWS, undefined, undefined, { nowMs })).toEqual(expected);
        if (expected.allowed) allowed += 1;
        else rejected += 1;
      }
    }
    // Each subject hits the minute limit inside a minute and the day limit later on.
    expect(allowed).toBe(24 * 10);
    expect(rejected).toBeGreaterThan(0);

    const slots = await Promise.all(WINDOWS.map((w) => cluster.cluster('KEYSLOT', rateLimitKey(PREFIX, subjects[0] as string, w.name))));
    expect(new Set(slots).size).toBe(1);
    const masters = cluster.nodes('master');
    expect(masters).toHaveLength(3);
    const sizes = await Promise.all(masters.map((node) => node.dbsize()));
    expect(sizes.every((size) => size > 0)).toBe(true);
  });

  it('takes, refreshes and releases stream slots in the subject\'s slot, for subjects on every master', async () => {
    const limiter = new RedisRateLimiter({ client: cluster, prefix: PREFIX, commandTimeoutMs: 2_000 });
    const cap = { streams: 2, leaseMs: 30_000 };
    const subjects = Array.from({ length: 12 }, (_, i) => `account:streams-${i}`);
    const decisions = await Promise.all(subjects.flatMap((subject) => [0, 1, 2].map(() => limiter.consume(subject, WINDOWS, cap))));
    expect(decisions.filter((d) => d.allowed)).toHaveLength(24);
    expect(decisions.filter((d) => d.concurrencyLimited)).toHaveLength(12);
    const key = streamSlotsKey(PREFIX, subjects[0]!);
    expect(await cluster.cluster('KEYSLOT', key)).toBe(await cluster.cluster('KEYSLOT', rateLimitKey(PREFIX, subjects[0]!, 'minute')));
    // One refresh call per subject, each on its own master: every subject's expiries move on.
    const newestExpiry = async (subject: string) => Math.max(...(await cluster.zrange(streamSlotsKey(PREFIX, subject), 0, -1, 'WITHSCORES')).filter((_, i) => i % 2 === 1).map(Number));
    const before = await Promise.all(subjects.map(newestExpiry));
    await new Promise((resolve) => setTimeout(resolve, 5));
    limiter.slots.refresh();
    await waitFor('every subject refreshed', async () => (await Promise.all(subjects.map(newestExpiry))).every((expiry, i) => expiry > before[i]!));
    for (const decision of decisions) decision.slot?.release();
    await waitFor('every slot released', async () => (await Promise.all(subjects.map((s) => cluster.zcard(streamSlotsKey(PREFIX, s))))).every((n) => n === 0));
    await limiter.close();
  });

  it('leases, token reserves, charges and give-backs (admit, charge, refund) on every master leave Redis holding exactly what was admitted and charged', async () => {
    const limiter = new RedisRateLimiter({ client: cluster, prefix: PREFIX, commandTimeoutMs: 2_000, leases: true });
    const budgeted: RateWindow[] = [
      { name: 'minute', limit: 100_000, windowMs: 60_000, kind: 'requests' as const, scope: 'subject' as const },
      { name: 'tokens-hour', limit: 10_000_000, windowMs: 3_600_000, kind: 'tokens' as const, scope: 'subject' as const },
    ];
    const subjects = Array.from({ length: 9 }, (_, i) => `account:leased-${i}`);
    for (let i = 0; i < 60; i += 1) {
      for (const subject of subjects) {
        const decision = limiter.consumeNow(subject, budgeted) ?? (await limiter.consume(subject, budgeted));
        expect(decision.allowed).toBe(true);
        limiter.charge(subject, budgeted, { tokens: 3 });
      }
    }
    // Some subjects were served from leases; closing gives every unused unit and token back.
    expect(limiter.counters.requestCalls).toBeLessThan(60 * subjects.length);
    await new Promise((resolve) => setTimeout(resolve, 20));
    await limiter.close();
    const total = async (subject: string, window: string): Promise<number> => {
      const fields = await cluster.hgetall(rateLimitKey(PREFIX, subject, window));
      return Object.entries(fields).reduce((sum, [field, count]) => (field === 'bw' ? sum : sum + Number(count)), 0);
    };
    await waitFor('every charge and give-back landed', async () => (await Promise.all(subjects.map((s) => total(s, 'tokens-hour')))).every((t) => t === 60 * 3));
    expect(await Promise.all(subjects.map((s) => total(s, 'minute')))).toEqual(subjects.map(() => 60));
    // The subjects' keys are spread over the masters: the operations ran on several nodes.
    const holding = await Promise.all(cluster.nodes('master').map(async (node) => (await node.keys(`${PREFIX}rl:{account:leased-*`)).length > 0));
    expect(holding.filter(Boolean).length).toBeGreaterThan(1);
  });

  it("uses the cluster node's own time when no nowMs is given", async () => {
    const limiter = new RedisRateLimiter({ client: cluster, prefix: PREFIX, commandTimeoutMs: 2_000 });
    const decisions = await Promise.all(Array.from({ length: 6 }, () => limiter.consume('key:k_live', WINDOWS)));
    expect(decisions.map((d) => d.allowed).sort()).toEqual([false, false, false, true, true, true]);
    expect(decisions.filter((d) => !d.allowed).every((d) => d.retryAfterMs > 0 && d.retryAfterMs <= 61_000)).toBe(true);
  });
});
