import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { MemoryRateLimiter } from '../../src/ratelimit/memory-rate-limiter.js';
import type { RateLimitDecision, RateWindow } from '../../src/ratelimit/rate-limiter.js';
import { RateLimitStoreTimeoutError } from '../../src/ratelimit/rate-limit-store-error.js';
import { RedisRateLimiter, rateLimitKey } from '../../src/ratelimit/redis-rate-limiter.js';
import { OPERATION_SOURCES } from '../../src/ratelimit/protocol/operations.js';
import { bucketWidthMs } from '../../src/ratelimit/window-math.js';
import { lcg } from '../helpers/lcg.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';

const PREFIX = 'test:';
const T0 = 1_700_000_000_037;

let redis: TestRedis;
let clientA: Redis;
let clientB: Redis;
let limiterA: RedisRateLimiter;
let limiterB: RedisRateLimiter;

beforeAll(async () => {
  redis = await startRedis({ controllable: true });
  clientA = new Redis(redis.url, { maxRetriesPerRequest: 1 });
  clientB = new Redis(redis.url, { maxRetriesPerRequest: 1 });
  limiterA = new RedisRateLimiter({ client: clientA, prefix: PREFIX, commandTimeoutMs: 2_000 });
  limiterB = new RedisRateLimiter({ client: clientB, prefix: PREFIX, commandTimeoutMs: 2_000 });
});

afterEach(async () => {
  await clientA.flushall();
});

afterAll(async () => {
  clientA?.disconnect();
  clientB?.disconnect();
  await redis?.close();
});

/**
 * Scripts Redis has run so far (EVALSHA and EVAL), asked synchronously with redis-cli: the
 * answer comes after Redis wrote the replies of every command it ran before it.
 */
function scriptCalls(port: number): number {
  const stats = execFileSync('redis-cli', ['-p', String(port), 'INFO', 'commandstats'], { encoding: 'utf8' });
  let calls = 0;
  for (const match of stats.matchAll(/^cmdstat_(?:evalsha|eval):calls=(\d+)/gm)) calls += Number(match[1]);
  return calls;
}

describe('RedisRateLimiter', () => {
  it('takes the same decisions as the memory limiter for the same request sequence', async () => {
    const plans: RateWindow[][] = [
      [{ name: 'burst', limit: 5, windowMs: 2_000, kind: 'requests' as const, scope: 'subject' as const }, { name: 'minute', limit: 20, windowMs: 60_000, kind: 'requests' as const, scope: 'subject' as const }],
      [{ name: 'tiny', limit: 3, windowMs: 250, kind: 'requests' as const, scope: 'subject' as const }, { name: '7s', limit: 9, windowMs: 7_000, kind: 'requests' as const, scope: 'subject' as const }, { name: 'hour', limit: 40, windowMs: 3_600_000, kind: 'requests' as const, scope: 'subject' as const }],
    ];
    const memory = new MemoryRateLimiter();
    const random = lcg(42);
    let nowMs = T0;
    let rejections = 0;
    let recovering = 0;
    for (let i = 0; i < 600; i += 1) {
      nowMs += random() < 0.7 ? Math.floor(random() * 60) : Math.floor(random() * 4_000);
      const subject = `account:${i % 3}`;
      const windows = plans[i % 3 === 2 ? 1 : 0] as RateWindow[];
      const expected = memory.consumeAt(subject, windows, nowMs);
      const actual = await limiterA.consume(subject, windows, undefined, undefined, { nowMs });
      expect(actual, `request ${i} at +${nowMs - T0} ms`).toEqual(expected);
      if (!expected.allowed) rejections += 1;
      for (const status of expected.windows) if (status.remaining > 0 && status.recoverMs > 0) recovering += 1;
    }
    // ... and recoverMs while requests remain (the RateLimit header's t), not only resetMs.
    expect(recovering).toBeGreaterThan(100);
    // The sequence must exercise both outcomes to mean anything.
    expect(rejections).toBeGreaterThan(50);
    expect(rejections).toBeLessThan(550);
  });

  it('decides requests coalesced into one call exactly as one-by-one calls at that instant', async () => {
    const windows: RateWindow[] = [{ name: 'burst', limit: 7, windowMs: 2_000, kind: 'requests' as const, scope: 'subject' as const }, { name: 'minute', limit: 20, windowMs: 60_000, kind: 'requests' as const, scope: 'subject' as const }];
    const memory = new MemoryRateLimiter();
    let nowMs = T0;
    let refused = 0;
    // Groups of 1-12 requests of two subjects arrive in the same turn at the same instant;
    // the memory limiter takes the same requests one by one in arrival order.
    const random = lcg(7);
    for (let round = 0; round < 40; round += 1) {
      nowMs += Math.floor(random() * 1_500);
      const size = 1 + Math.floor(random() * 12);
      const subjects = Array.from({ length: size }, (_, i) => `account:c${(round + i) % 2}`);
      const actual = await Promise.all(subjects.map((subject) => limiterA.consume(subject, windows, undefined, undefined, { nowMs })));
      const expected = subjects.map((subject) => memory.consumeAt(subject, windows, nowMs));
      expect(actual, `round ${round} at +${nowMs - T0} ms`).toEqual(expected);
      refused += expected.filter((d) => !d.allowed).length;
    }
    expect(refused).toBeGreaterThan(20);
  });

  it('sends one script call per subject per event-loop turn, whatever the number of requests', async () => {
    const windows: RateWindow[] = [{ name: 'minute', limit: 1_000, windowMs: 60_000, kind: 'requests' as const, scope: 'subject' as const }];
    const calls = async (): Promise<number> => Number(/cmdstat_evalsha:calls=(\d+)/.exec(await clientB.info('commandstats'))?.[1] ?? 0);
    await limiterA.consume('account:warm', windows);
    const before = await calls();
    const decisions = await Promise.all(Array.from({ length: 60 }, (_, i) => limiterA.consume(`account:turn${i % 3}`, windows)));
    expect((await calls()) - before).toBe(3);
    for (let s = 0; s < 3; s += 1) {
      const remaining = decisions.filter((_, i) => i % 3 === s).map((d) => d.windows[0]!.remaining);
      expect(remaining).toEqual(Array.from({ length: 20 }, (_, i) => 999 - i));
    }
  });

  it("uses the Redis server's time when no nowMs is given", async () => {
    const windows: RateWindow[] = [{ name: 'minute', limit: 3, windowMs: 60_000, kind: 'requests' as const, scope: 'subject' as const }];
    const remaining: number[] = [];
    for (let i = 0; i < 4; i += 1) remaining.push((await limiterA.consume('account:time', windows)).windows[0]!.remaining);
    expect(remaining).toEqual([2, 1, 0, 0]);
    const [seconds] = await clientA.time();
    const bucket = Number(seconds); // minute buckets are 1 s wide: index = epoch seconds
    const fields = await clientA.hkeys(rateLimitKey(PREFIX, 'account:time', 'minute'));
    const indexes = fields.filter((f) => f !== 'bw').map(Number);
    expect(indexes.length).toBeGreaterThan(0);
    for (const index of indexes) expect(Math.abs(index - bucket)).toBeLessThanOrEqual(2);
  });

  it('admits exactly the limit from 500 concurrent calls over two connections', async () => {
    const windows: RateWindow[] = [{ name: 'minute', limit: 100, windowMs: 60_000, kind: 'requests' as const, scope: 'subject' as const }];
    const calls: Array<Promise<RateLimitDecision>> = [];
    for (let i = 0; i < 500; i += 1) calls.push((i % 2 === 0 ? limiterA : limiterB).consume('account:race', windows));
    const decisions = await Promise.all(calls);
    expect(decisions.filter((d) => d.allowed)).toHaveLength(100);
    expect(decisions.filter((d) => !d.allowed).every((d) => d.retryAfterMs > 0)).toBe(true);
  });

  it('lays keys out per subject and window with a TTL that outlives their newest bucket', async () => {
    const windows: RateWindow[] = [{ name: 'minute', limit: 60, windowMs: 60_000, kind: 'requests' as const, scope: 'subject' as const }, { name: 'day', limit: 10_000, windowMs: 86_400_000, kind: 'requests' as const, scope: 'subject' as const }];
    await limiterA.consume('account:acme', windows);
    const keys = (await clientA.keys(`${PREFIX}*`)).sort();
    expect(keys).toEqual([`${PREFIX}rl:{account:acme}:day`, `${PREFIX}rl:{account:acme}:minute`]);
    for (const window of windows) {
      const ttlMs = await clientA.pttl(rateLimitKey(PREFIX, 'account:acme', window.name));
      expect(ttlMs).toBeGreaterThan(window.windowMs);
      expect(ttlMs).toBeLessThanOrEqual(window.windowMs + bucketWidthMs(window.windowMs));
    }
    // A rejected request writes no counts, and adds no keys for windows that had none.
    const one: RateWindow[] = [{ name: 'one', limit: 1, windowMs: 60_000, kind: 'requests' as const, scope: 'subject' as const }];
    await limiterA.consume('account:solo', one);
    const rejected = await limiterA.consume('account:solo', [...one, { name: 'other', limit: 5, windowMs: 60_000, kind: 'requests' as const, scope: 'subject' as const }]);
    expect(await clientA.exists(rateLimitKey(PREFIX, 'account:solo', 'other'))).toBe(0);
    // A window that counts nothing has nothing to recover.
    expect(rejected.windows[1]).toMatchObject({ remaining: 5, resetMs: 0, recoverMs: 0 });
  });

  it('keeps at most 61 buckets per window however many requests it counted', async () => {
    const windows: RateWindow[] = [{ name: 'day', limit: 100_000, windowMs: 86_400_000, kind: 'requests' as const, scope: 'subject' as const }];
    const calls: Array<Promise<RateLimitDecision>> = [];
    // 3,000 requests over two days; one connection runs them in order.
    for (let i = 0; i < 3_000; i += 1) calls.push(limiterA.consume('account:busy', windows, undefined, undefined, { nowMs: T0 + i * 57_600 }));
    await Promise.all(calls);
    const key = rateLimitKey(PREFIX, 'account:busy', 'day');
    const fields = await clientA.hkeys(key);
    expect(fields).toContain('bw');
    expect(fields.length - 1).toBeLessThanOrEqual(61);
  });

  it('reloads the script by itself after SCRIPT FLUSH (NOSCRIPT)', async () => {
    const windows: RateWindow[] = [{ name: 'minute', limit: 10, windowMs: 60_000, kind: 'requests' as const, scope: 'subject' as const }];
    const sha = createHash('sha1').update(OPERATION_SOURCES.admit).digest('hex');
    expect((await limiterA.consume('account:flush', windows)).windows[0]!.remaining).toBe(9);
    expect((await limiterA.consume('account:flush', windows)).windows[0]!.remaining).toBe(8);
    expect(await clientB.script('EXISTS', sha)).toEqual([1]);
    await clientB.script('FLUSH');
    expect(await clientB.script('EXISTS', sha)).toEqual([0]);
    expect((await limiterA.consume('account:flush', windows)).windows[0]!.remaining).toBe(7);
    expect(await clientB.script('EXISTS', sha)).toEqual([1]);
  });

  it('rejects an unusable hash tag instead of splitting a subject across slots', async () => {
    const windows: RateWindow[] = [{ name: 'minute', limit: 10, windowMs: 60_000, kind: 'requests' as const, scope: 'subject' as const }];
    await expect(limiterA.consume('', windows)).rejects.toThrow(TypeError);
    await expect(limiterA.consume('}x', windows)).rejects.toThrow(TypeError);
  });

  it('does not call a reply a timeout when it came in time but the event loop was too busy to read it', async () => {
    const client = new Redis(redis.url, { maxRetriesPerRequest: 1 });
    const windows: RateWindow[] = [{ name: 'minute', limit: 10, windowMs: 60_000, kind: 'requests' as const, scope: 'subject' as const }];
    // Warmed up patiently (connection, script loaded), however loaded the machine is.
    await new RedisRateLimiter({ client, prefix: PREFIX, commandTimeoutMs: 30_000 }).consume('account:busy-loop', windows);
    const limiter = new RedisRateLimiter({ client, prefix: PREFIX, commandTimeoutMs: 50 });
    const callsBefore = scriptCalls(redis.port);
    const pending = limiter.consume('account:busy-loop', windows);
    // The call is sent from setImmediate, its 50 ms timer started then; one turn later it is on its way.
    await new Promise((resolve) => setImmediate(resolve));
    // This process now looks away, synchronously, until both have happened, however long each
    // takes: Redis ran the call and wrote its reply (a later command answered after it), and
    // the 50 ms timer has expired. Only then does the event loop see the reply and the timer.
    const timerExpiredAt = performance.now() + 100;
    while (scriptCalls(redis.port) === callsBefore);
    while (performance.now() < timerExpiredAt);
    const decision = await pending;
    expect(decision.allowed).toBe(true);
    expect(decision.windows[0]!.remaining).toBe(8);
    client.disconnect();
  });

  it('rejects with a typed timeout error when Redis does not answer within commandTimeoutMs', async () => {
    const client = new Redis(redis.url, { maxRetriesPerRequest: 1 });
    const limiter = new RedisRateLimiter({ client, prefix: PREFIX, commandTimeoutMs: 150 });
    const windows: RateWindow[] = [{ name: 'minute', limit: 10, windowMs: 60_000, kind: 'requests' as const, scope: 'subject' as const }];
    await limiter.consume('account:hung', windows);
    redis.pause();
    try {
      const startedMs = Date.now();
      const error = await limiter.consume('account:hung', windows).catch((e: unknown) => e);
      const elapsedMs = Date.now() - startedMs;
      // The limiter's own deadline, not ioredis' backstop (which would be a plain store error):
      // no upper bound on the time, which a loaded machine may stretch at will.
      expect(error).toBeInstanceOf(RateLimitStoreTimeoutError);
      expect(elapsedMs).toBeGreaterThanOrEqual(140);
    } finally {
      redis.resume();
    }
    expect((await limiter.consume('account:hung', windows)).allowed).toBe(true);
    client.disconnect();
  });
});
