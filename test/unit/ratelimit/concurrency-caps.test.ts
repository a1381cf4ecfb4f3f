// Concurrency caps below HTTP (docs/rate-limits.md "Concurrency caps"): the in-memory slots
// (embedded mode, and `allow` during a Redis outage) against a model, the failover routing of
// slots, the reply split of the Redis script, and the config that declares caps.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/clock.js';
import { parseConfig } from '../../../src/config/load-config.js';
import { planWithKeyLimits } from '../../../src/config/schema.js';
import { FailoverRateLimiter } from '../../../src/ratelimit/failover-rate-limiter.js';
import { MemoryRateLimiter } from '../../../src/ratelimit/memory-rate-limiter.js';
import type { RateLimitDecision, RateLimiter, RateWindow, StreamCap, StreamSlot } from '../../../src/ratelimit/rate-limiter.js';
import { RateLimitStoreTimeoutError } from '../../../src/ratelimit/rate-limit-store-error.js';
import { toDecisions } from '../../../src/ratelimit/redis-decisions.js';
import { decodeAdmit } from '../../../src/ratelimit/protocol/codec.js';
import { captureLogLines } from '../../helpers/log-capture.js';

const CAP: StreamCap = { streams: 2, leaseMs: 30_000 };
const MINUTE: RateWindow[] = [{ name: 'minute', limit: 3, windowMs: 60_000, kind: 'requests' as const, scope: 'subject' as const }];

describe('MemoryRateLimiter with a cap', () => {
  it('admits `streams` at once, refuses the next with concurrencyLimited and a 1 s retry, and admits again once one is released (twice is once)', () => {
    const limiter = new MemoryRateLimiter({ clock: new ManualClock() });
    const first = limiter.consumeNow('account:a', [], CAP);
    const second = limiter.consumeNow('account:a', [], CAP);
    expect([first.allowed, second.allowed]).toEqual([true, true]);
    expect(first.slot).toBeDefined();
    expect(limiter.consumeNow('account:a', [], CAP)).toEqual({ allowed: false, windows: [], retryAfterMs: 1_000, concurrencyLimited: true });
    // Another subject has its own slots.
    expect(limiter.consumeNow('account:b', [], CAP).allowed).toBe(true);
    first.slot!.release();
    first.slot!.release();
    expect(limiter.slotsHeld('account:a')).toBe(1);
    expect(limiter.consumeNow('account:a', [], CAP).allowed).toBe(true);
    expect(limiter.consumeNow('account:a', [], CAP).allowed).toBe(false);
  });

  it('a refusal by the cap counts nothing in the windows; a full window outranks the cap', () => {
    const limiter = new MemoryRateLimiter({ clock: new ManualClock() });
    limiter.consumeNow('s', MINUTE, CAP);
    limiter.consumeNow('s', MINUTE, CAP);
    const capped = limiter.consumeNow('s', MINUTE, CAP);
    expect(capped).toMatchObject({ allowed: false, concurrencyLimited: true, windows: [{ remaining: 1 }] });
    // The third request of the minute is still there for a JSON request (no cap).
    expect(limiter.consumeNow('s', MINUTE)).toMatchObject({ allowed: true, windows: [{ remaining: 0 }] });
    const windowFull = limiter.consumeNow('s', MINUTE, CAP);
    expect(windowFull.allowed).toBe(false);
    expect(windowFull.concurrencyLimited).toBeUndefined();
    expect(windowFull.retryAfterMs).toBeGreaterThan(1_000);
  });

  it('matches a model of held slots over any sequence of opens and closes', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 5 }), fc.array(fc.oneof(fc.constant('open' as const), fc.nat({ max: 9 })), { maxLength: 80 }), (streams, steps) => {
        const limiter = new MemoryRateLimiter({ clock: new ManualClock() });
        const cap = { streams, leaseMs: 30_000 };
        const held: StreamSlot[] = [];
        for (const step of steps) {
          if (step === 'open') {
            const decision = limiter.consumeNow('s', [], cap);
            // Admitted exactly while fewer than `streams` are held.
            expect(decision.allowed).toBe(held.length < streams);
            expect(decision.concurrencyLimited === true).toBe(held.length >= streams);
            if (decision.slot) held.push(decision.slot);
          } else if (held.length > 0) {
            held.splice(step % held.length, 1)[0]!.release();
          }
          expect(limiter.slotsHeld('s')).toBe(held.length);
        }
      }),
    );
  });
});

/** A Redis limiter stand-in that fails (as a timeout) while `down`. */
class DownPrimary implements RateLimiter {
  down = true;
  consumeNow(): undefined {
    return undefined;
  }
  async consume(): Promise<RateLimitDecision> {
    throw new RateLimitStoreTimeoutError(100);
  }
  charge(): void {}
  async close(): Promise<void> {}
}

describe('FailoverRateLimiter with a cap, Redis down', () => {
  it('allow: slots are counted in this instance’s memory, and released there', async () => {
    const clock = new ManualClock();
    const fallback = new MemoryRateLimiter({ clock });
    const limiter = new FailoverRateLimiter({ primary: new DownPrimary(), fallback, mode: 'allow', logger: captureLogLines().logger, clock });
    const first = await limiter.consume('s', [], CAP);
    const second = await limiter.consume('s', [], CAP);
    expect([first.allowed, second.allowed]).toEqual([true, true]);
    expect((await limiter.consume('s', [], CAP)).concurrencyLimited).toBe(true);
    first.slot!.release();
    expect(fallback.slotsHeld('s')).toBe(1);
    // While the breaker is open, consumeNow decides from memory too.
    expect(limiter.consumeNow('s', [], CAP)?.allowed).toBe(true);
  });

  it('deny: 503 store_unavailable, no slot anywhere', async () => {
    const fallback = new MemoryRateLimiter({ clock: new ManualClock() });
    const limiter = new FailoverRateLimiter({ primary: new DownPrimary(), fallback, mode: 'deny', logger: captureLogLines().logger });
    await expect(limiter.consume('s', [], CAP)).rejects.toMatchObject({ type: 'store_unavailable' });
    expect(fallback.slotsHeld('s')).toBe(0);
  });
});

describe("the admit operation's reply with a slot", () => {
  // tag, admitted, retryAfterMs, nowMs, lease, tokenLease, leaseValidMs, windowAdmitted, slotsFree, costLease | remaining, resetMs, oldestMs
  it('splits the refusals: past what the windows admit → the window; between → the cap', () => {
    const reply = ['agw_admit_v3', 1, 2_000, 1_700_000_000_000, 0, 0, 500, 2, 0, 0, 0, 2_000, 2_000];
    const decisions = toDecisions(decodeAdmit(reply, MINUTE.length), MINUTE, 3);
    expect(decisions.map((d) => [d.allowed, d.concurrencyLimited === true])).toEqual([
      [true, false],
      [false, true],
      [false, false],
    ]);
    expect(decisions[1]!.retryAfterMs).toBe(1_000);
    expect(decisions[2]!.retryAfterMs).toBe(2_000);
  });

  it('refuses a reply of the wrong length', () => {
    expect(() => decodeAdmit(['agw_admit_v2', 1, 0, 0, 0, 0, 1, 0, 0], MINUTE.length)).toThrow(/unexpected reply/);
  });
});

describe('config', () => {
  const base = { agents: { support: { upstream: 'http://127.0.0.1:9/api/v1' } } };

  it('reads a plan cap (lease 30 s by default), and leaves plans without one undefined', () => {
    const config = parseConfig({ ...base, plans: { capped: { concurrency: { streams: 4 } }, leased: { concurrency: { streams: 1, lease: '5s' } }, plain: { windows: [{ requests: 1, per: '1m' }] } } }, 'test', {});
    expect(config.plans.get('capped')!.concurrency).toEqual({ streams: 4, leaseMs: 30_000 });
    expect(config.plans.get('leased')!.concurrency).toEqual({ streams: 1, leaseMs: 5_000 });
    expect(config.plans.get('plain')!.concurrency).toBeUndefined();
  });

  it.each([
    [{ streams: 0 }, /streams/],
    [{ streams: 2, lease: '500ms' }, /at least 1s/],
    [{ streams: 2, burst: 3 }, /burst/],
  ])('refuses %j with the field named', (concurrency, message) => {
    expect(() => parseConfig({ ...base, plans: { p: { concurrency } } }, 'test', {})).toThrow(message);
  });

  it("a key's limits.concurrency replaces the plan's; without it the plan's stays", () => {
    const plan = parseConfig({ ...base, plans: { p: { concurrency: { streams: 4 } } } }, 'test', {}).plans.get('p')!;
    expect(planWithKeyLimits(plan, { concurrency: { streams: 1, lease: '10s' } }).concurrency).toEqual({ streams: 1, leaseMs: 10_000 });
    expect(planWithKeyLimits(plan, { windows: [] }).concurrency).toEqual({ streams: 4, leaseMs: 30_000 });
  });
});
