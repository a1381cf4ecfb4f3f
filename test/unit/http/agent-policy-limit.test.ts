// The after-body limit's pure parts (src/http/agent-policy-limit.ts): the window list per plan and
// named tools (one list per set, so coalescing and the memory limiter see stable lists), which
// budget a refusal names, which tools are spent; and the headers leaving cost and tool windows out.
import { describe, expect, it } from 'vitest';
import { planSchema } from '../../../src/config/plan-schema.js';
import { chargeWindows, exhaustedTools, policyWindows, refusingBudget } from '../../../src/http/agent-policy-limit.js';
import { appendRateLimitHeaders } from '../../../src/ratelimit/rate-limit-headers.js';
import type { RateLimitDecision, WindowStatus } from '../../../src/ratelimit/rate-limiter.js';

const PLAN = planSchema.parse({
  windows: [{ requests: 10, per: '1m' }],
  tokens: [{ tokens: 100, per: '1h' }],
  cost: [{ usd: 1, per: '1d' }],
  tool_calls: { search: [{ calls: 5, per: '1h' }], calculator: [{ calls: 2, per: '1h' }] },
});

function status(name: string, remaining: number, extra: Partial<WindowStatus> = {}): WindowStatus {
  return { name, limit: 10, windowMs: 60_000, remaining, resetMs: remaining > 0 ? 0 : 1_000, recoverMs: 1_000, ...extra };
}

function refused(windows: WindowStatus[]): RateLimitDecision {
  return { allowed: false, windows, retryAfterMs: 1_000 };
}

describe('policyWindows', () => {
  it('lists the subject windows then each tool: refusing when named, report-only otherwise; one list per named set', () => {
    const none = policyWindows(PLAN, null);
    expect(none.map((w) => [w.name, w.reportOnly === true])).toEqual([
      ['minute', false],
      ['tokens-hour', false],
      ['cost-day', false],
      ['tool-search-hour', true],
      ['tool-calculator-hour', true],
    ]);
    const search = policyWindows(PLAN, new Set(['search']));
    expect(search.map((w) => w.reportOnly === true)).toEqual([false, false, false, false, true]);
    expect(policyWindows(PLAN, new Set(['search', 'unknown']))).toBe(search);
    expect(policyWindows(PLAN, null)).toBe(none);
    // The charge list: every tool in its refusing form, the same for every request.
    expect(chargeWindows(PLAN)).toBe(policyWindows(PLAN, new Set(['search', 'calculator'])));
    // A plan without tool quotas: its own list.
    const plain = planSchema.parse({ windows: [{ requests: 1, per: '1m' }] });
    expect(policyWindows(plain, new Set(['search']))).toBe(plain.windows);
  });
});

describe('refusingBudget', () => {
  it('a full request window outranks every budget; then tokens, cost, a tool; report-only windows never refuse', () => {
    const tool = status('tool-calculator-hour', 0, { tool: 'calculator' });
    const cost = status('cost-day', 0, { cost: true });
    const tokens = status('tokens-hour', 0, { tokens: true });
    expect(refusingBudget(refused([status('minute', 0), tokens, cost, tool]))).toBeUndefined();
    expect(refusingBudget(refused([status('minute', 3), tool, cost, tokens]))).toBe(tokens);
    expect(refusingBudget(refused([status('minute', 3), tool, cost]))).toBe(cost);
    expect(refusingBudget(refused([status('minute', 3), tool]))).toBe(tool);
    expect(refusingBudget(refused([status('minute', 3), { ...tool, reportOnly: true }]))).toBeUndefined();
  });

  it('exhaustedTools names each spent tool once, in the plan order, report-only or not', () => {
    const decision: RateLimitDecision = {
      allowed: true,
      retryAfterMs: 0,
      windows: [
        status('minute', 3),
        status('tool-search-hour', 0, { tool: 'search', reportOnly: true }),
        status('tool-search-day', 0, { tool: 'search', reportOnly: true }),
        status('tool-calculator-hour', 1, { tool: 'calculator', reportOnly: true }),
      ],
    };
    expect(exhaustedTools(decision)).toEqual(['search']);
  });
});

describe('rate-limit headers', () => {
  it('leave cost budgets and tool quotas out: policies, items and the X-RateLimit trio', () => {
    const out: Array<string | string[]> = [];
    const decision: RateLimitDecision = {
      allowed: true,
      retryAfterMs: 0,
      windows: [status('minute', 9), status('cost-day', 0, { cost: true }), status('tool-search-hour', 0, { tool: 'search', reportOnly: true })],
    };
    expect(appendRateLimitHeaders(decision, out)).toBe(true);
    const headers = Object.fromEntries(Array.from({ length: out.length / 2 }, (_, i) => [out[2 * i], out[2 * i + 1]]));
    expect(headers['RateLimit-Policy']).toBe('"minute";q=10;w=60');
    expect(headers.RateLimit).toBe('"minute";r=9;t=1');
    expect(headers['X-RateLimit-Remaining']).toBe('9');
    // Only policy windows: no header at all.
    const none: Array<string | string[]> = [];
    expect(appendRateLimitHeaders({ allowed: true, retryAfterMs: 0, windows: [status('cost-day', 5, { cost: true })] }, none)).toBe(false);
    expect(none).toEqual([]);
  });
});
