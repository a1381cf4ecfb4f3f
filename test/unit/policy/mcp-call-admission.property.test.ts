// MCP calls and chat requests on the same compiled policy against a brute-force model
// (decision 0117): an MCP `tools/call` (mcp-limits.ts admitToolCall, the front door's own call)
// is admitted exactly when every refusing window of every scope has room, and an admitted call
// counts one unit in each request window and in each quota that counts it (`{server}__{tool}`,
// `{server}__*`, `"*"`), at once; a chat request's answer charges its tool calls after it into
// the same counters. The model keeps every count per (scope instance, window) and sums what
// still counts; the memory limiter behind the policy must agree with it at every step.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { GatewayConfig } from '../../../src/config/schema.js';
import { planSchema } from '../../../src/config/plan-schema.js';
import type { RateWindow } from '../../../src/config/limit-window.js';
import type { AuthenticatedKey } from '../../../src/keys/key-record.js';
import { admitToolCall } from '../../../src/mcp/mcp-limits.js';
import { Admission } from '../../../src/policy/admission.js';
import { compilePolicy } from '../../../src/policy/admission-policy.js';
import { RequestState } from '../../../src/request/request-state.js';
import { MemoryRateLimiter } from '../../../src/ratelimit/memory-rate-limiter.js';
import { chargeUnits } from '../../../src/ratelimit/window-math.js';
import { modelTotal, scopedModel } from '../../helpers/budget-model.js';

const T0 = 1_700_000_000_777;
const KEYS = ['k1', 'k2'] as const;
const SESSIONS = [null, 'run-1', 'run-2'] as const;
const TOOLS = ['search', 'browse'] as const;
const CONFIG = { rateLimits: { scope: 'key' } } as unknown as GatewayConfig;

const limitsArb = fc.record({
  subject: fc.integer({ min: 2, max: 12 }),
  account: fc.integer({ min: 2, max: 16 }),
  session: fc.integer({ min: 1, max: 6 }),
  search: fc.integer({ min: 1, max: 4 }),
  server: fc.integer({ min: 1, max: 6 }),
  every: fc.integer({ min: 1, max: 8 }),
  windowMs: fc.constantFrom(1_000, 5_000, 60_000),
});

const stepArb = fc.record({
  gapMs: fc.oneof(fc.integer({ min: 0, max: 30 }), fc.integer({ min: 0, max: 3_000 })),
  key: fc.constantFrom(...KEYS),
  session: fc.constantFrom(...SESSIONS),
  mcp: fc.boolean(),
  tool: fc.constantFrom(...TOOLS),
  /** A chat answer's tool calls, charged after it. */
  calls: fc.array(fc.constantFrom(...TOOLS.map((tool) => `files__${tool}`)), { maxLength: 3 }),
});

type PlanShape = typeof limitsArb extends fc.Arbitrary<infer T> ? T : never;

function planOf(l: PlanShape) {
  const per = `${l.windowMs}ms`;
  return planSchema.parse({
    windows: [{ requests: l.subject, per }],
    tool_calls: { files__search: [{ calls: l.search, per }], 'files__*': [{ calls: l.server, per }] },
    account: { windows: [{ requests: l.account, per }] },
    session: { windows: [{ requests: l.session, per }], tool_calls: { '*': [{ calls: l.every, per }] } },
  });
}

function instanceOf(window: RateWindow, key: string, session: string | null): string {
  return window.scope === 'account' ? 'account' : window.scope === 'session' ? `session:${key}:${session}` : `key:${key}`;
}

describe('MCP calls and chat requests on one compiled policy against a brute-force model', () => {
  // Across all runs: what the comparison must have met for it to mean anything.
  let callsAdmitted = 0;
  let callsRefusedByQuota = 0;
  let chatAdmitted = 0;

  it('admits a call exactly when every refusing window has room, and counts it at once in the quotas that name it', async () => {
    await fc.assert(
      fc.asyncProperty(limitsArb, fc.array(stepArb, { minLength: 1, maxLength: 60 }), async (limits, steps) => {
        const policy = compilePolicy(planOf(limits), true);
        let nowMs = T0;
        const limiter = new MemoryRateLimiter({ clock: { now: () => nowMs } });
        const events = scopedModel();
        for (const step of steps) {
          nowMs += step.gapMs;
          const key: AuthenticatedKey = { keyId: step.key, account: 'acme', plan: 'p' } as AuthenticatedKey;
          if (step.mcp) {
            const windows = policy.callWindowsFor(new Set([`files__${step.tool}`, 'files__*']), step.session !== null);
            const totals = windows.map((w) => modelTotal(events(w, instanceOf(w, step.key, step.session)), w, nowMs));
            // What the call must count in, from the quotas' names (not from the list's own fields):
            // every request window, and each quota of `files__<tool>`, `files__*` or "*".
            const counts = (w: RateWindow): boolean => w.kind === 'requests' || (w.kind === 'tool_calls' && (w.tool === `files__${step.tool}` || w.tool === 'files__*' || w.tool === '*'));
            const refusing = windows.map((w, i) => counts(w) && totals[i]! >= w.limit);
            const { decision } = await admitToolCall(limiter, CONFIG, key, policy, 'files', step.tool, { userId: null, sessionId: step.session });
            expect(decision!.allowed).toBe(!refusing.includes(true));
            decision!.windows.forEach((status, i) => expect(status.remaining).toBe(Math.max(0, windows[i]!.limit - totals[i]! - (decision!.allowed && counts(windows[i]!) ? 1 : 0))));
            if (!decision!.allowed) {
              if (windows.some((w, i) => w.kind === 'tool_calls' && refusing[i])) callsRefusedByQuota += 1;
              continue;
            }
            callsAdmitted += 1;
            for (const window of windows) if (counts(window)) events(window, instanceOf(window, step.key, step.session)).push({ atMs: nowMs, units: 1 });
            continue;
          }
          // A chat request naming no tools, through its own Admission: its answer's calls are charged after it.
          const state = new RequestState(undefined, '127.0.0.1', nowMs, 0);
          state.key = key;
          state.sessionId = step.session;
          const admission = new Admission(policy, key, false, false);
          admission.bodyRead(state);
          const windows = admission.windows;
          const totals = windows.map((w) => modelTotal(events(w, instanceOf(w, step.key, step.session)), w, nowMs));
          const decision = admission.decideNow(limiter)!;
          expect(decision.allowed).toBe(!windows.some((w, i) => !(w.kind === 'tool_calls' && w.use === 'report') && totals[i]! >= w.limit));
          if (!decision.allowed) continue;
          chatAdmitted += 1;
          for (const window of windows) if (window.kind === 'requests') events(window, instanceOf(window, step.key, step.session)).push({ atMs: nowMs, units: 1 });
          const usage = { tokens: 0, toolCalls: step.calls };
          state.upstreamStatus = 200;
          state.tokensUsed = 0;
          state.toolCalls = step.calls;
          admission.charge(limiter, state, null);
          for (const window of policy.chargeList(step.session !== null) ?? []) {
            const units = chargeUnits(window, usage);
            if (units > 0) events(window, instanceOf(window, step.key, step.session)).push({ atMs: nowMs, units });
          }
        }
      }),
      { numRuns: 200 },
    );
    expect(callsAdmitted).toBeGreaterThan(100);
    expect(callsRefusedByQuota).toBeGreaterThan(20);
    expect(chatAdmitted).toBeGreaterThan(100);
  });
});
