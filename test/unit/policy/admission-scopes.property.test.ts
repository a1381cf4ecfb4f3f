// The compiled policy's decisions against a brute-force model across all four scopes
// (docs/policy.md "The policy room"): random requests of two keys of one account, with or
// without an end user and a session (blank ids among them), naming tools or not, each admitted
// answer charged random tokens, dollars and tool calls. The model keeps every admitted request
// and every charge per scope instance (the key, the account, the key's end user, the key's run)
// and sums what still counts; the policy (compiled once, an Admission per request over the
// memory limiter) must admit exactly when every refusing window of every scope has room, report
// each window's remaining as the model does, and name a window the model holds full.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { planSchema } from '../../../src/config/plan-schema.js';
import type { RateWindow } from '../../../src/config/limit-window.js';
import { Admission } from '../../../src/policy/admission.js';
import { compilePolicy } from '../../../src/policy/admission-policy.js';
import { classifyRefusal } from '../../../src/policy/refusal.js';
import { MemoryRateLimiter } from '../../../src/ratelimit/memory-rate-limiter.js';
import { chargeUnits, microUsdOf } from '../../../src/ratelimit/window-math.js';
import { RequestState } from '../../../src/request/request-state.js';
import { modelTotal, scopedModel } from '../../helpers/budget-model.js';

const T0 = 1_700_000_000_321;
const KEYS = ['k1', 'k2'] as const;
const USERS = [null, 'alice', 'bob'] as const;
const SESSIONS = [null, '', '   ', 'run-1', 'run-2'] as const;
const TOOLS = ['search', 'browse'] as const;

const limitsArb = fc.record({
  subject: fc.integer({ min: 1, max: 6 }),
  account: fc.integer({ min: 1, max: 9 }),
  accountUsd: fc.integer({ min: 1, max: 40 }),
  user: fc.integer({ min: 1, max: 4 }),
  session: fc.integer({ min: 1, max: 4 }),
  sessionTokens: fc.integer({ min: 1, max: 200 }),
  allTools: fc.integer({ min: 1, max: 5 }),
  search: fc.integer({ min: 1, max: 3 }),
  windowMs: fc.constantFrom(1_000, 5_000, 60_000),
});

const stepArb = fc.record({
  gapMs: fc.oneof(fc.integer({ min: 0, max: 30 }), fc.integer({ min: 0, max: 3_000 })),
  key: fc.constantFrom(...KEYS),
  user: fc.constantFrom(...USERS),
  session: fc.constantFrom(...SESSIONS),
  named: fc.subarray([...TOOLS]),
  tokens: fc.integer({ min: 0, max: 80 }),
  usd: fc.constantFrom(0, 0.000_001, 0.000_004, 0.000_01),
  calls: fc.array(fc.constantFrom(...TOOLS), { maxLength: 3 }),
});

type PlanShape = typeof limitsArb extends fc.Arbitrary<infer T> ? T : never;

function planOf(l: PlanShape) {
  const per = `${l.windowMs}ms`;
  return planSchema.parse({
    windows: [{ requests: l.subject, per }],
    account: { windows: [{ requests: l.account, per }], cost: [{ usd: l.accountUsd / 1_000_000, per }] },
    end_user: { windows: [{ requests: l.user, per }] },
    session: { windows: [{ requests: l.session, per }], tokens: [{ tokens: l.sessionTokens, per }], tool_calls: { '*': [{ calls: l.allTools, per }], search: [{ calls: l.search, per }] } },
  });
}

/** The scope instance a window counts in, for a request of `key` for `user` in `session`. */
function instanceOf(window: RateWindow, key: string, user: string | null, session: string | null): string {
  switch (window.scope) {
    case 'account':
      return 'account';
    case 'subject':
      return `key:${key}`;
    case 'user':
      return `user:${key}:${user ?? ''}`;
    case 'session':
      return `session:${key}:${session}`;
  }
}

describe('the compiled policy against a brute-force model of all four scopes', () => {
  it('admits exactly when every scope has room, reports what the model counts, and names a full window', () => {
    fc.assert(
      fc.property(limitsArb, fc.array(stepArb, { minLength: 1, maxLength: 80 }), (limits, steps) => {
        const policy = compilePolicy(planOf(limits), true);
        let nowMs = T0;
        const limiter = new MemoryRateLimiter({ clock: { now: () => nowMs } });
        // Per (scope instance, window name): what the model has counted.
        const events = scopedModel();
        for (const step of steps) {
          nowMs += step.gapMs;
          const state = new RequestState(undefined, '127.0.0.1', nowMs, 0);
          state.key = { keyId: step.key, account: 'acme', plan: 'p' };
          state.userId = step.user;
          state.sessionId = step.session;
          state.toolsGiven = step.named.length > 0 ? step.named : null;
          const admission = new Admission(policy, state.key, false, false);
          admission.bodyRead(state);
          const counted = step.session !== null && step.session.trim() !== '' ? step.session : null;
          const windows = admission.windows;
          // Without a counted session no session window is in the list; with one, all are.
          expect(windows.some((w) => w.scope === 'session')).toBe(counted !== null);
          const totals = windows.map((w) => modelTotal(events(w, instanceOf(w, step.key, step.user, counted)), w, nowMs));
          const refusing = windows.map((w, i) => !(w.kind === 'tool_calls' && w.use === 'report') && totals[i]! >= w.limit);
          const decision = admission.decideNow(limiter)!;
          expect(decision.allowed).toBe(!refusing.includes(true));
          // Figures after this decision: an admitted request counts in every request window.
          const counts = (i: number): number => (decision.allowed && windows[i]!.kind === 'requests' ? 1 : 0);
          decision.windows.forEach((status, i) => expect(status.remaining).toBe(Math.max(0, windows[i]!.limit - totals[i]! - counts(i))));
          if (!decision.allowed) {
            const refusal = classifyRefusal(decision);
            const named = windows.findIndex((w) => w.name === refusal.policy);
            expect(refusing[named]).toBe(true);
            continue;
          }
          for (const window of windows) if (window.kind === 'requests') events(window, instanceOf(window, step.key, step.user, counted)).push({ atMs: nowMs, units: 1 });
          const usage = { tokens: step.tokens, microUsd: microUsdOf(step.usd), toolCalls: step.calls };
          state.upstreamStatus = 200;
          state.tokensUsed = step.tokens;
          state.costUsd = step.usd;
          state.toolCalls = step.calls;
          admission.charge(limiter, state, null);
          for (const window of policy.chargeList(counted !== null) ?? []) {
            const units = chargeUnits(window, usage);
            if (units > 0) events(window, instanceOf(window, step.key, step.user, counted)).push({ atMs: nowMs, units });
          }
        }
      }),
      { numRuns: 250 },
    );
  });
});
