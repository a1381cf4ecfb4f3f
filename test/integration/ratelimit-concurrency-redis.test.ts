// The Redis limiter's concurrency slots on a real Redis (docs/rate-limits.md "Concurrency
// caps"): taken in the request windows' admit call (the slot set one more key, the slot's
// values in admit's fixed head, 0 without a cap), coalesced requests admitted in order up to the cap, released
// in one batched call, expired slots removed on read, and the same decisions as the memory
// limiter for the same sequence.
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { MemoryRateLimiter } from '../../src/ratelimit/memory-rate-limiter.js';
import type { RateWindow, StreamCap, StreamSlot } from '../../src/ratelimit/rate-limiter.js';
import { RedisRateLimiter } from '../../src/ratelimit/redis-rate-limiter.js';
import { streamSlotsKey } from '../../src/ratelimit/redis-stream-slots.js';
import { lcg } from '../helpers/lcg.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { sleep } from '../helpers/wait.js';
import { startMonitor } from '../helpers/redis-monitor.js';

const PREFIX = 'cc:';
const WINDOWS: RateWindow[] = [
  { name: 'minute', limit: 100, windowMs: 60_000, kind: 'requests' as const, scope: 'subject' as const },
  { name: 'day', limit: 1000, windowMs: 86_400_000, kind: 'requests' as const, scope: 'subject' as const },
];
const CAP: StreamCap = { streams: 3, leaseMs: 30_000 };

let redis: TestRedis;
let client: Redis;
let limiter: RedisRateLimiter;

beforeAll(async () => {
  redis = await startRedis();
  client = new Redis(redis.url, { maxRetriesPerRequest: 1 });
  limiter = new RedisRateLimiter({ client, prefix: PREFIX, commandTimeoutMs: 2_000, leases: true });
});

afterEach(async () => {
  await client.flushall();
});

afterAll(async () => {
  await limiter?.close();
  client?.disconnect();
  await redis?.close();
});

async function until(check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 200 && !(await check()); i += 1) await sleep(10);
}

describe('RedisRateLimiter with a concurrency cap', () => {
  it('sends admit one more key with a cap, and the cap in its fixed head (streams 0 without one)', async () => {
    const monitor = await startMonitor(redis.url);
    const calls: string[][] = [];
    monitor.on('monitor', (_time: string, args: string[]) => {
      // EVAL when the script was not loaded yet (ioredis then re-sends the source): same layout.
      if (args[0]?.toLowerCase() === 'evalsha' || args[0]?.toLowerCase() === 'eval') calls.push(args);
    });
    try {
      await limiter.consume('account:plain', WINDOWS);
      const capped = await limiter.consume('account:capped', WINDOWS, CAP);
      capped.slot!.release();
      await until(async () => calls.some((args) => args.includes('cc:rl:{account:plain}:minute')) && calls.some((args) => args.includes('cc:rl:{account:capped}:minute')));
    } finally {
      monitor.disconnect();
    }
    const plain = calls.find((args) => args.includes('cc:rl:{account:plain}:minute'))!;
    const capped = calls.find((args) => args.includes('cc:rl:{account:capped}:minute'))!;
    // evalsha sha|source numkeys KEYS... ARGV...: 2 window keys; admit's 11 head values, 5 per window.
    // The head's 9th and 10th values: the cap's streams and slot lease (0 without a cap).
    expect(plain[2]).toBe('2');
    expect(plain.slice(3, 5)).toEqual(['cc:rl:{account:plain}:minute', 'cc:rl:{account:plain}:day']);
    expect(plain.length).toBe(3 + 2 + 11 + 5 * 2);
    expect(plain.slice(3 + 2 + 8, 3 + 2 + 10)).toEqual(['0', '0']);
    expect(capped[2]).toBe('3');
    expect(capped[5]).toBe('cc:streams:{account:capped}');
    expect(capped.length).toBe(3 + 3 + 11 + 5 * 2);
    expect(capped.slice(3 + 3 + 8, 3 + 3 + 10)).toEqual(['3', '30000']);
  });

  it('admits coalesced stream requests in order up to the cap, counts only those in the windows, and releases in one call', async () => {
    const decisions = await Promise.all(Array.from({ length: 5 }, () => limiter.consume('account:burst', WINDOWS, CAP)));
    expect(decisions.map((d) => (d.allowed ? 'ok' : d.concurrencyLimited ? 'cap' : 'window'))).toEqual(['ok', 'ok', 'ok', 'cap', 'cap']);
    const key = streamSlotsKey(PREFIX, 'account:burst');
    expect(await client.zcard(key)).toBe(3);
    // Three requests counted, not five.
    const minute = await client.hgetall('cc:rl:{account:burst}:minute');
    expect(Object.entries(minute).filter(([f]) => f !== 'bw').reduce((sum, [, v]) => sum + Number(v), 0)).toBe(3);
    expect(limiter.slots.heldCount).toBe(3);
    for (const decision of decisions) decision.slot?.release();
    expect(limiter.slots.heldCount).toBe(0);
    await until(async () => (await client.zcard(key)) === 0);
    expect(await client.zcard(key)).toBe(0);
  });

  it('a slot whose lease ran out is removed on the next admission (a dead holder)', async () => {
    const t0 = Date.now();
    const held = await Promise.all(Array.from({ length: 3 }, () => limiter.consume('account:dead', [], CAP, undefined, { nowMs: t0 })));
    expect(held.every((d) => d.allowed)).toBe(true);
    // This instance "dies": its refresh timer stops, nothing is released.
    limiter.slots.close();
    expect((await limiter.consume('account:dead', [], CAP, undefined, { nowMs: t0 + 1_000 })).concurrencyLimited).toBe(true);
    const later = await limiter.consume('account:dead', [], CAP, undefined, { nowMs: t0 + CAP.leaseMs + 1 });
    expect(later.allowed).toBe(true);
    expect(await client.zcard(streamSlotsKey(PREFIX, 'account:dead'))).toBe(1);
    for (const decision of [...held, later]) decision.slot?.release();
  });

  it('takes the same decisions as the memory limiter over a random sequence of opens and closes', async () => {
    const memory = new MemoryRateLimiter();
    const random = lcg(7);
    const cap: StreamCap = { streams: 4, leaseMs: 30_000 };
    const windows: RateWindow[] = [{ name: 'minute', limit: 25, windowMs: 60_000, kind: 'requests' as const, scope: 'subject' as const }];
    const t0 = Date.now();
    const heldRedis: StreamSlot[] = [];
    const heldMemory: StreamSlot[] = [];
    let capped = 0;
    for (let step = 0; step < 120; step += 1) {
      const nowMs = t0 + step * 10;
      if (random() < 0.6) {
        const onRedis = await limiter.consume('account:model', windows, cap, undefined, { nowMs });
        const inMemory = memory.consumeAt('account:model', windows, nowMs, cap);
        expect([onRedis.allowed, onRedis.concurrencyLimited === true]).toEqual([inMemory.allowed, inMemory.concurrencyLimited === true]);
        expect(onRedis.windows.map((w) => w.remaining)).toEqual(inMemory.windows.map((w) => w.remaining));
        if (onRedis.concurrencyLimited) capped += 1;
        if (onRedis.slot) heldRedis.push(onRedis.slot);
        if (inMemory.slot) heldMemory.push(inMemory.slot);
      } else if (heldRedis.length > 0) {
        const at = Math.floor(random() * heldRedis.length);
        heldRedis.splice(at, 1)[0]!.release();
        heldMemory.splice(at, 1)[0]!.release();
        // The release is batched: the next admission must see it.
        await until(async () => (await client.zcard(streamSlotsKey(PREFIX, 'account:model'))) === heldRedis.length);
      }
    }
    // The sequence met the cap's refusal (and, with 25 a minute over 72 opens, the window's).
    expect(capped).toBeGreaterThan(0);
    for (const slot of [...heldRedis, ...heldMemory]) slot.release();
  });
});
