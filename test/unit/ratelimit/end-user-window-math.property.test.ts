// End users' windows (docs/design.md, "Agent-aware policy") against a brute-force model: the memory limiter
// decides a request with its subject's windows and its end user's at once, and no span of any
// window's length ever holds more than its limit — the subject's over all its end users, each
// end user's over its own requests. Budgets: the stated overshoot (one answer at a time here).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { planSchema } from '../../../src/config/plan-schema.js';
import { endUserHash } from '../../../src/ratelimit/end-user-hash.js';
import { MemoryRateLimiter } from '../../../src/ratelimit/memory-rate-limiter.js';
import { refusedByEndUser, userScope } from '../../../src/ratelimit/rate-limiter.js';
import { compilePolicy } from '../../../src/policy/admission-policy.js';
import { bucketWidthMs } from '../../../src/ratelimit/window-math.js';

const T0 = 1_700_000_000_123;
const USERS = ['alice', 'bob', null] as const;

const planArb = fc.record({
  subjectLimit: fc.integer({ min: 1, max: 12 }),
  subjectMs: fc.integer({ min: 100, max: 5_000 }),
  userLimit: fc.integer({ min: 1, max: 6 }),
  userMs: fc.integer({ min: 100, max: 5_000 }),
});
const stepsArb = fc.array(
  fc.record({ gap: fc.oneof(fc.integer({ min: 0, max: 40 }), fc.integer({ min: 0, max: 3_000 })), user: fc.constantFrom(...USERS), tokens: fc.integer({ min: 1, max: 50 }) }),
  { minLength: 1, maxLength: 150 },
);

function admittedIn(times: readonly number[], fromExclusiveMs: number, toInclusiveMs: number): number {
  let count = 0;
  for (const t of times) if (t > fromExclusiveMs && t <= toInclusiveMs) count += 1;
  return count;
}

function planOf(p: { subjectLimit: number; subjectMs: number; userLimit: number; userMs: number }) {
  return planSchema.parse({
    windows: [{ requests: p.subjectLimit, per: `${p.subjectMs}ms`, name: 'subject' }],
    end_user: { windows: [{ requests: p.userLimit, per: `${p.userMs}ms`, name: 'w' }] },
  });
}

describe('end-user windows against a brute-force model', () => {
  it('no span of a window holds more than its limit: the subject over all end users, each end user over its own', () => {
    fc.assert(
      fc.property(planArb, stepsArb, (p, steps) => {
        const plan = planOf(p);
        const windows = compilePolicy(plan, false).windowsFor(null, false);
        const limiter = new MemoryRateLimiter();
        const all: number[] = [];
        const byUser = new Map<string | null, number[]>(USERS.map((u) => [u, []]));
        let nowMs = T0;
        for (const step of steps) {
          nowMs += step.gap;
          const decision = limiter.consumeAt('account:a', windows, nowMs, undefined, userScope(endUserHash('account:a', step.user)));
          if (!decision.allowed) continue;
          all.push(nowMs);
          byUser.get(step.user)!.push(nowMs);
        }
        for (const t of all) expect(admittedIn(all, t - p.subjectMs, t)).toBeLessThanOrEqual(p.subjectLimit);
        for (const times of byUser.values()) for (const t of times) expect(admittedIn(times, t - p.userMs, t)).toBeLessThanOrEqual(p.userLimit);
      }),
      { numRuns: 300 },
    );
  });

  it('refuses only when an exact sliding log over windowMs + bucketMs - 1 would, and names the end user only for its own window', () => {
    fc.assert(
      fc.property(planArb, stepsArb, (p, steps) => {
        const windows = compilePolicy(planOf(p), false).windowsFor(null, false);
        const limiter = new MemoryRateLimiter();
        const all: number[] = [];
        const byUser = new Map<string | null, number[]>(USERS.map((u) => [u, []]));
        const subjectSpan = p.subjectMs + bucketWidthMs(p.subjectMs) - 1;
        const userSpan = p.userMs + bucketWidthMs(p.userMs) - 1;
        let nowMs = T0;
        for (const step of steps) {
          nowMs += step.gap;
          const decision = limiter.consumeAt('account:a', windows, nowMs, undefined, userScope(endUserHash('account:a', step.user)));
          const own = byUser.get(step.user)!;
          if (decision.allowed) {
            all.push(nowMs);
            own.push(nowMs);
            continue;
          }
          const subjectFull = admittedIn(all, nowMs - subjectSpan, nowMs) >= p.subjectLimit;
          const userFull = admittedIn(own, nowMs - userSpan, nowMs) >= p.userLimit;
          expect(subjectFull || userFull).toBe(true);
          if (refusedByEndUser(decision)) expect(userFull).toBe(true);
        }
      }),
      { numRuns: 300 },
    );
  });

  it("an end user's token budget admits past its limit by at most the answer in flight (one at a time: one answer)", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 200 }), fc.integer({ min: 100, max: 5_000 }), stepsArb, (limit, windowMs, steps) => {
        const windows = compilePolicy(planSchema.parse({ end_user: { tokens: [{ tokens: limit, per: `${windowMs}ms` }] } }), false).windowsFor(null, false);
        const limiter = new MemoryRateLimiter();
        const charges = new Map<string | null, Array<{ at: number; tokens: number }>>(USERS.map((u) => [u, []]));
        let nowMs = T0;
        for (const step of steps) {
          nowMs += step.gap;
          const endUser = userScope(endUserHash('account:a', step.user));
          if (!limiter.consumeAt('account:a', windows, nowMs, undefined, endUser).allowed) continue;
          limiter.chargeAt('account:a', windows, { tokens: step.tokens }, nowMs, endUser);
          charges.get(step.user)!.push({ at: nowMs, tokens: step.tokens });
        }
        for (const list of charges.values()) {
          for (const { at } of list) {
            const inSpan = list.filter((c) => c.at > at - windowMs && c.at <= at).reduce((sum, c) => sum + c.tokens, 0);
            expect(inSpan).toBeLessThanOrEqual(limit - 1 + 50);
          }
        }
      }),
      { numRuns: 200 },
    );
  });
});

describe('end_user in plans and key limits', () => {
  it('reads end_user into user- windows after the subject windows, and require', () => {
    const plan = planSchema.parse({ windows: [{ requests: 300, per: '1m' }], end_user: { windows: [{ requests: 20, per: '1m' }], tokens: [{ tokens: 50_000, per: '1d' }], require: true } });
    expect(plan.windows.map((w) => w.name)).toEqual(['minute']);
    expect(compilePolicy(plan, false).windowsFor(null, false).map((w) => [w.name, w.scope === 'user', w.kind === 'tokens'])).toEqual([
      ['minute', false, false],
      ['user-minute', true, false],
      ['user-tokens-day', true, true],
    ]);
    expect(plan.endUser?.require).toBe(true);
    expect(planSchema.parse({ windows: [] }).endUser).toBeUndefined();
  });

  it('refuses unknown end_user fields and a non-boolean require', () => {
    expect(planSchema.safeParse({ end_user: { windows: [], extra: 1 } }).success).toBe(false);
    expect(planSchema.safeParse({ end_user: { require: 'yes' } }).success).toBe(false);
    expect(planSchema.safeParse({ end_user: { windows: [{ requests: 0, per: '1m' }] } }).success).toBe(false);
  });

  it('hashes user ids per subject: never the id in clear, distinct across subjects and ids, the anonymous bucket for none', () => {
    const hash = endUserHash('account:a', 'alice@example.com');
    expect(hash).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(hash).not.toContain('alice');
    expect(endUserHash('account:b', 'alice@example.com')).not.toBe(hash);
    expect(endUserHash('account:a', 'bob')).not.toBe(hash);
    expect(endUserHash('account:a', null)).toBe(endUserHash('account:a', ''));
  });
});
