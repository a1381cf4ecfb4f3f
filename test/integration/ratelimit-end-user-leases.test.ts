// Leases per (subject, end user) (decision 0074) against a real Redis: a busy end user is
// served with few round trips, each end user's lease admits only that end user's requests,
// several instances with many end users never admit more than the subject's limit or any end
// user's, and every unused unit (subject's and end user's alike) goes back to Redis.
import { describe, expect, it } from 'vitest';
import { planSchema } from '../../src/config/plan-schema.js';
import { endUserHash } from '../../src/ratelimit/end-user-hash.js';
import { compilePolicy } from '../../src/policy/admission-policy.js';
import { userScope } from '../../src/ratelimit/rate-limiter.js';
import { MAX_LEASE_MS } from '../../src/ratelimit/rate-limit-leases.js';
import { lcg } from '../helpers/lcg.js';
import { leasesOver, useLeaseLimiterRedis } from '../helpers/rate-limit-leases.js';

const PREFIX = 'eu-lease:';
const leases = useLeaseLimiterRedis({ prefix: PREFIX, commandTimeoutMs: 2_000 });
const { instance, scriptCalls, counted } = leases;

/** The Redis window name of an end user's window (codec.ts endUserKeyHead). */
const userWindow = (subject: string, user: string | null, name: string): string => `u:${endUserHash(subject, user)}:${name}`;

describe('RedisRateLimiter leases for end users', () => {
  it('serves a busy end user with far fewer script calls than requests, both windows counting down by one', async () => {
    const limiter = instance();
    const windows = compilePolicy(planSchema.parse({ windows: [{ requests: 100_000, per: '1m' }], end_user: { windows: [{ requests: 50_000, per: '1m' }] } }), false).windowsFor(null, false);
    const subject = 'account:busy';
    const user = userScope(endUserHash(subject, 'u-1'));
    const before = await scriptCalls();
    const subjectLeft: number[] = [];
    const userLeft: number[] = [];
    for (let i = 0; i < 2_000; i += 1) {
      const decision = limiter.consumeNow(subject, windows, undefined, user) ?? (await limiter.consume(subject, windows, undefined, user));
      expect(decision.allowed).toBe(true);
      subjectLeft.push(decision.windows[0]!.remaining);
      userLeft.push(decision.windows[1]!.remaining);
    }
    expect((await scriptCalls()) - before).toBeLessThan(200);
    expect(subjectLeft).toEqual(Array.from({ length: 2_000 }, (_, i) => 99_999 - i));
    expect(userLeft).toEqual(Array.from({ length: 2_000 }, (_, i) => 49_999 - i));
    expect(limiter.leaseOf(subject, user)).toBeDefined();
    // No lease of the subject alone: the end user's lease is its own.
    expect(limiter.leaseOf(subject)).toBeUndefined();
    await leasesOver();
    expect(await counted(subject, 'minute')).toBe(2_000);
    expect(await counted(subject, userWindow(subject, 'u-1', 'user-minute'))).toBe(2_000);
  });

  it("never admits one end user's request from another's lease", async () => {
    const limiter = instance();
    const windows = compilePolicy(planSchema.parse({ windows: [{ requests: 100_000, per: '1m' }], end_user: { windows: [{ requests: 30, per: '1m' }] } }), false).windowsFor(null, false);
    const subject = 'account:two';
    const busy = userScope(endUserHash(subject, 'busy'));
    const other = userScope(endUserHash(subject, 'other'));
    for (let i = 0; i < 30; i += 1) expect((await limiter.consume(subject, windows, undefined, busy)).allowed).toBe(true);
    expect((await limiter.consume(subject, windows, undefined, busy)).allowed).toBe(false);
    // The other end user has a whole window of its own, and nothing leased for "busy" serves it.
    expect(limiter.consumeNow(subject, windows, undefined, other)).toBeUndefined();
    const decisions = [];
    for (let i = 0; i < 31; i += 1) decisions.push(await limiter.consume(subject, windows, undefined, other));
    expect(decisions.filter((d) => d.allowed)).toHaveLength(30);
    await leasesOver();
    expect(await counted(subject, userWindow(subject, 'busy', 'user-minute'))).toBe(30);
    expect(await counted(subject, userWindow(subject, 'other', 'user-minute'))).toBe(30);
    expect(await counted(subject, 'minute')).toBe(60);
  });

  for (const seed of [7, 4242]) {
    it(`three instances, five end users in random bursts: no limit exceeded, every unused unit back (seed ${seed})`, async () => {
      const limiters = [instance(), instance(), instance()];
      const windows = compilePolicy(planSchema.parse({ windows: [{ requests: 2_500, per: '1m' }], end_user: { windows: [{ requests: 700, per: '1m' }] } }), false).windowsFor(null, false);
      const subject = `account:race${seed}`;
      const users = ['a', 'b', 'c', 'd', null];
      const random = lcg(seed);
      const admitted = new Map<string | null, number>(users.map((user) => [user, 0]));
      const bursts: Array<Promise<void>> = [];
      const startedMs = performance.now();
      for (let sent = 0; sent < 4_000; ) {
        const limiter = limiters[Math.floor(random() * limiters.length)]!;
        const user = users[Math.floor(random() * users.length)]!;
        const size = Math.min(4_000 - sent, 1 + Math.floor(random() * 40));
        sent += size;
        const hash = userScope(endUserHash(subject, user));
        bursts.push(
          Promise.all(Array.from({ length: size }, () => limiter.consumeNow(subject, windows, undefined, hash) ?? limiter.consume(subject, windows, undefined, hash))).then((decisions) => {
            for (const decision of decisions) if (decision.allowed) admitted.set(user, admitted.get(user)! + 1);
          }),
        );
        await new Promise((resolve) => setTimeout(resolve, Math.floor(random() * 12)));
      }
      await Promise.all(bursts);
      expect(performance.now() - startedMs).toBeGreaterThan(MAX_LEASE_MS);
      let total = 0;
      for (const count of admitted.values()) {
        expect(count).toBeLessThanOrEqual(700);
        total += count;
      }
      expect(total).toBeLessThanOrEqual(2_500);
      await leasesOver();
      expect(await counted(subject, 'minute')).toBe(total);
      for (const user of users) expect(await counted(subject, userWindow(subject, user, 'user-minute'))).toBe(admitted.get(user));
    });
  }
});
