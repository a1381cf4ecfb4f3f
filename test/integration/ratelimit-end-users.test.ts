// End users' windows (docs/design.md, "Agent-aware policy") in the limiter itself, on a real Redis (single and
// a 3-master Cluster) and in memory: the same decisions everywhere, one admit call covering the
// subject's windows and its end user's (one hash tag, one slot), user ids never in key names,
// and idle end users cost nothing (every key has a TTL).
import { Cluster, Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { planSchema } from '../../src/config/plan-schema.js';
import { endUserHash } from '../../src/ratelimit/end-user-hash.js';
import { compilePolicy } from '../../src/policy/admission-policy.js';
import { MemoryRateLimiter } from '../../src/ratelimit/memory-rate-limiter.js';
import { refusedByEndUser, userScope, type RateLimiter } from '../../src/ratelimit/rate-limiter.js';
import { RedisRateLimiter } from '../../src/ratelimit/redis-rate-limiter.js';
import { lcg } from '../helpers/lcg.js';
import { waitFor } from '../helpers/redis-process.js';
import { TOPOLOGIES, useSingleAndClusterRedis } from '../helpers/single-and-cluster-redis.js';

const PREFIX = 'eu:';
const T0 = 1_700_000_000_037;
const PLAN = planSchema.parse({
  windows: [{ requests: 30, per: '1m' }],
  tokens: [{ tokens: 10_000, per: '1h' }],
  end_user: { windows: [{ requests: 5, per: '1m' }, { requests: 3, per: '2s', name: 'burst' }], tokens: [{ tokens: 400, per: '1h' }] },
});
const WINDOWS = compilePolicy(PLAN, false).windowsFor(null, false);
/** The same with a subject window that fills before its end users' do. */
const TIGHT = compilePolicy(planSchema.parse({ windows: [{ requests: 12, per: '1m' }], end_user: { windows: [{ requests: 5, per: '1m' }, { requests: 3, per: '2s', name: 'burst' }] } }), false).windowsFor(null, false);

const topologies = useSingleAndClusterRedis();
const allKeys = (client: Redis | Cluster): Promise<string[]> => topologies.allKeys(client, PREFIX);

/** Consumes on a limiter at a fixed time (Redis takes it as an option, memory as an argument). */
type Consume = (subject: string, user: string | null, nowMs: number) => ReturnType<RateLimiter['consume']>;

function onRedis(limiter: RedisRateLimiter, windows = WINDOWS): Consume {
  return (subject, user, nowMs) => limiter.consume(subject, windows, undefined, userScope(endUserHash(subject, user)), { nowMs });
}
function inMemory(limiter: MemoryRateLimiter, windows = WINDOWS): Consume {
  return async (subject, user, nowMs) => limiter.consumeAt(subject, windows, nowMs, undefined, userScope(endUserHash(subject, user)));
}

for (const topology of TOPOLOGIES) {
  describe(`end users on Redis (${topology})`, () => {
    const client = (): Redis | Cluster => topologies.client(topology);

    it('takes the same decisions as the memory limiter, over many subjects and end users', async () => {
      const limiter = new RedisRateLimiter({ client: client(), prefix: `${PREFIX}eq:`, commandTimeoutMs: 2_000 });
      const memory = new MemoryRateLimiter();
      const random = lcg(topology === 'single' ? 7 : 8);
      const users = ['alice', 'bob', 'carol', null];
      let nowMs = T0;
      let byEndUser = 0;
      let bySubject = 0;
      for (let i = 0; i < 500; i += 1) {
        nowMs += random() < 0.8 ? Math.floor(random() * 40) : Math.floor(random() * 5_000);
        const subject = `account:${i % 2}`;
        const user = users[Math.floor(random() * users.length)]!;
        const expected = await inMemory(memory, TIGHT)(subject, user, nowMs);
        expect(await onRedis(limiter, TIGHT)(subject, user, nowMs), `request ${i}`).toEqual(expected);
        if (!expected.allowed) {
          if (refusedByEndUser(expected)) byEndUser += 1;
          else bySubject += 1;
        }
      }
      // Both kinds of refusal must occur for the comparison to mean anything.
      expect(byEndUser).toBeGreaterThan(3);
      expect(bySubject).toBeGreaterThan(3);
      await limiter.close();
    });

    it('gives two end users of one subject their own allowance, the anonymous bucket its own, in one slot', async () => {
      const limiter = new RedisRateLimiter({ client: client(), prefix: `${PREFIX}two:`, commandTimeoutMs: 2_000 });
      const consume = onRedis(limiter);
      const admitted = async (user: string | null): Promise<number> => {
        let count = 0;
        for (let i = 0; i < 6; i += 1) if ((await consume('account:shop', user, T0 + i * 1_000)).allowed) count += 1;
        return count;
      };
      // 5 a minute each (the 2 s burst window of 3 never fills at one request a second).
      expect(await admitted('alice')).toBe(5);
      expect(await admitted('bob')).toBe(5);
      expect(await admitted(null)).toBe(5);
      const refused = await consume('account:shop', 'alice', T0 + 6_000);
      expect(refused.allowed).toBe(false);
      expect(refusedByEndUser(refused)).toBe(true);
      expect(refused.windows.find((w) => w.name === 'minute')!.remaining).toBe(15);

      const keys = (await allKeys(client())).filter((key) => key.startsWith(`${PREFIX}two:`));
      // The subject's window and budget, and per end user its two windows (the budgets are charged only).
      expect(keys.filter((key) => key.includes(':u:'))).toHaveLength(6);
      for (const key of keys) {
        expect(key).not.toMatch(/alice|bob/);
        expect(await client().pttl(key)).toBeGreaterThan(0);
      }
      if (topology === 'cluster') expect(new Set(await Promise.all(keys.map((key) => topologies.cluster.cluster('KEYSLOT', key)))).size).toBe(1);
      await limiter.close();
    });

    it("charges an answer's tokens to the subject's budget and the end user's, and refuses the spent end user only", async () => {
      const limiter = new RedisRateLimiter({ client: client(), prefix: `${PREFIX}tok:`, commandTimeoutMs: 2_000 });
      const alice = endUserHash('account:t', 'alice');
      expect((await limiter.consume('account:t', WINDOWS, undefined, userScope(alice))).allowed).toBe(true);
      limiter.charge('account:t', WINDOWS, { tokens: 400 }, userScope(alice));
      await waitFor('the charge', async () => Number(await client().hget(`${PREFIX}tok:rl:{account:t}:u:${alice}:user-tokens-hour`, 'bw')) > 0);
      const refused = await limiter.consume('account:t', WINDOWS, undefined, userScope(alice));
      expect(refused.allowed).toBe(false);
      expect(refusedByEndUser(refused)).toBe(true);
      expect(refused.windows.find((w) => w.name === 'tokens-hour')!.remaining).toBe(9_600);
      expect((await limiter.consume('account:t', WINDOWS, undefined, userScope(endUserHash('account:t', 'bob')))).allowed).toBe(true);
      await limiter.close();
    });
  });
}

describe('end users in memory (embedded mode)', () => {
  it('keeps each end user apart, and forgets idle ones', async () => {
    const memory = new MemoryRateLimiter({ sweepIntervalMs: 1_000, clock: { now: () => T0 } });
    const consume = inMemory(memory);
    for (let i = 0; i < 5; i += 1) expect((await consume('account:m', 'alice', T0 + i)).allowed).toBe(i < 3);
    expect((await consume('account:m', 'bob', T0 + 10)).allowed).toBe(true);
    expect((await consume('account:m', null, T0 + 10)).allowed).toBe(true);
    // The subject and three end users.
    expect(memory.subjectCount).toBe(4);
    // A minute and a bucket later everything they counted has expired: swept on the next call.
    await consume('account:other', 'x', T0 + 3_700_000);
    expect(memory.subjectCount).toBe(2);
  });
});
