// The policy room's pure parts (src/policy/): the compiled window lists per named tools and per
// session (one list per variant, so coalescing and the memory limiter see stable lists), the
// phase and the free plan, the one refusal classifier (error, param, policy) across every scope,
// which tools are spent; and the headers leaving cost and tool windows out.
import { describe, expect, it } from 'vitest';
import { planSchema } from '../../../src/config/plan-schema.js';
import { compilePolicy } from '../../../src/policy/admission-policy.js';
import { countedId, exhaustedTools } from '../../../src/policy/admission.js';
import { admissionPolicyOf } from '../../../src/policy/policy-cache.js';
import { classifyRefusal } from '../../../src/policy/refusal.js';
import { appendRateLimitHeaders } from '../../../src/ratelimit/rate-limit-headers.js';
import type { RateLimitDecision, WindowStatus } from '../../../src/ratelimit/rate-limiter.js';

const PLAN = planSchema.parse({
  windows: [{ requests: 10, per: '1m' }],
  tokens: [{ tokens: 100, per: '1h' }],
  cost: [{ usd: 1, per: '1d' }],
  tool_calls: { search: [{ calls: 5, per: '1h' }], calculator: [{ calls: 2, per: '1h' }] },
});

const AGENT_RUNS = planSchema.parse({
  windows: [{ requests: 300, per: '1m' }],
  account: { cost: [{ usd: 500, per: '30d' }], windows: [{ requests: 2000, per: '1m' }] },
  end_user: { windows: [{ requests: 20, per: '1m' }] },
  session: { windows: [{ requests: 40, per: '1d' }], tokens: [{ tokens: 200_000, per: '1d' }], tool_calls: { '*': [{ calls: 60, per: '1d' }], web_search: [{ calls: 10, per: '1d' }] } },
});

function status(name: string, remaining: number, extra: Partial<WindowStatus> = {}): WindowStatus {
  return { name, limit: 10, windowMs: 60_000, remaining, resetMs: remaining > 0 ? 0 : 1_000, recoverMs: 1_000, ...extra };
}

function refused(windows: WindowStatus[]): RateLimitDecision {
  return { allowed: false, windows, retryAfterMs: 1_000 };
}

describe('compiled window lists', () => {
  it('lists the subject windows then each tool: refusing when named, report-only otherwise; one list per named set', () => {
    const policy = compilePolicy(PLAN, false);
    const none = policy.windowsFor(null, false);
    expect(none.map((w) => [w.name, w.kind === 'tool_calls' && w.use === 'report'])).toEqual([
      ['minute', false],
      ['tokens-hour', false],
      ['cost-day', false],
      ['tool-search-hour', true],
      ['tool-calculator-hour', true],
    ]);
    const search = policy.windowsFor(new Set(['search']), false);
    expect(search.map((w) => w.kind === 'tool_calls' && w.use === 'report')).toEqual([false, false, false, false, true]);
    expect(policy.windowsFor(new Set(['search', 'unknown']), false)).toBe(search);
    expect(policy.windowsFor(null, false)).toBe(none);
    // The charge list: every tool in its refusing form, the same for every request.
    expect(policy.chargeList(false)).toBe(policy.windowsFor(new Set(['search', 'calculator']), false));
    expect(policy.phase).toBe('after-body');
  });

  it('a plan with only request windows: decided before the body, nothing to charge, its own list', () => {
    const plain = planSchema.parse({ windows: [{ requests: 1, per: '1m' }] });
    const policy = compilePolicy(plain, true);
    expect(policy.phase).toBe('before-body');
    expect(policy.free).toBe(false);
    expect(policy.chargeList(false)).toBeNull();
    expect(policy.roomIsAccount).toBe(false);
    expect(policy.windowsFor(new Set(['search']), true)).toBe(policy.windowsFor(null, false));
    expect(policy.windowsFor(null, false)).toEqual(plain.windows);
    expect(compilePolicy(planSchema.parse({ windows: [] }), true).free).toBe(true);
  });

  it('every scope in one list: subject, account, end user, then the session and its quotas only with a session', () => {
    const policy = compilePolicy(AGENT_RUNS, true);
    expect(policy.roomIsAccount).toBe(true);
    expect(compilePolicy(AGENT_RUNS, false).roomIsAccount).toBe(false);
    expect(policy.windowsFor(null, false).map((w) => `${w.scope}:${w.name}`)).toEqual(['subject:minute', 'account:account-minute', 'account:account-cost-30d', 'user:user-minute']);
    const withRun = policy.windowsFor(new Set(['calculator']), true);
    expect(withRun.map((w) => [w.name, w.scope, w.kind === 'tool_calls' ? w.use === 'report' : null])).toEqual([
      ['minute', 'subject', null],
      ['account-minute', 'account', null],
      ['account-cost-30d', 'account', null],
      ['user-minute', 'user', null],
      ['session-day', 'session', null],
      ['session-tokens-day', 'session', null],
      // "*" refuses a request that names any tool; web_search is not named: it only reports.
      ['session-tool-all-day', 'session', false],
      ['session-tool-web_search-day', 'session', true],
    ]);
    // A request naming no tools: "*" only reports too.
    expect(policy.windowsFor(null, true).filter((w) => w.kind === 'tool_calls').every((w) => w.kind === 'tool_calls' && w.use === 'report')).toBe(true);
  });

  it('compiles once per plan object and per key limits object, again when either changes', () => {
    const limits = { session: { windows: [{ requests: 3, per: '1h' }] } };
    const once = admissionPolicyOf(PLAN, limits, false);
    expect(admissionPolicyOf(PLAN, limits, false)).toBe(once);
    expect(admissionPolicyOf(PLAN, null, false)).toBe(admissionPolicyOf(PLAN, undefined, false));
    expect(admissionPolicyOf(PLAN, { ...limits }, false)).not.toBe(once);
    expect(admissionPolicyOf(AGENT_RUNS, limits, false)).not.toBe(once);
    expect(once.scopes.session.windows.map((w) => w.name)).toEqual(['session-hour']);
  });
});

describe('classifyRefusal', () => {
  it('a full request window outranks every budget; then tokens, cost, a tool; report-only windows never refuse', () => {
    const tool = status('tool-calculator-hour', 0, { kind: 'tool_calls', tool: 'calculator' });
    const cost = status('cost-day', 0, { kind: 'cost' });
    const tokens = status('tokens-hour', 0, { kind: 'tokens' });
    expect(classifyRefusal(refused([status('minute', 0), tokens, cost, tool]))).toMatchObject({ error: 'rate_limit_exceeded', outcome: 'rate_limited', param: undefined, policy: 'minute' });
    expect(classifyRefusal(refused([status('minute', 3), tool, cost, tokens]))).toMatchObject({ error: 'token_budget_exceeded', policy: 'tokens-hour' });
    expect(classifyRefusal(refused([status('minute', 3), tool, cost]))).toMatchObject({ error: 'cost_budget_exceeded', param: undefined, policy: 'cost-day' });
    expect(classifyRefusal(refused([status('minute', 3), tool]))).toMatchObject({ error: 'tool_budget_exceeded', param: 'tools', tool: 'calculator' });
    expect(classifyRefusal(refused([status('minute', 3), { ...tool, reportOnly: true }, status('day', 0)]))).toMatchObject({ error: 'rate_limit_exceeded', policy: 'day' });
  });

  it('names the broadest scope that refused: account, then the subject, then an end user, then a session', () => {
    const session = status('session-day', 0, { scope: 'session' });
    const user = status('user-minute', 0, { scope: 'user' });
    const account = status('account-cost-30d', 0, { scope: 'account', kind: 'cost' });
    expect(classifyRefusal(refused([status('minute', 3), session]))).toMatchObject({ error: 'rate_limit_exceeded', param: 'context.session_id', scope: 'session', policy: 'session-day' });
    expect(classifyRefusal(refused([status('minute', 3), user, session]))).toMatchObject({ param: 'context.user_id', scope: 'user' });
    expect(classifyRefusal(refused([status('minute', 0), user, session]))).toMatchObject({ param: undefined, scope: 'subject' });
    expect(classifyRefusal(refused([status('minute', 3), account, session]))).toMatchObject({ error: 'rate_limit_exceeded', param: 'account', scope: 'account' });
    expect(classifyRefusal(refused([status('minute', 3), account]))).toMatchObject({ error: 'cost_budget_exceeded', param: 'account' });
    const sessionTool = status('session-tool-all-day', 0, { scope: 'session', kind: 'tool_calls', tool: '*' });
    expect(classifyRefusal(refused([status('minute', 3), sessionTool]))).toMatchObject({ error: 'tool_budget_exceeded', param: 'context.session_id', tool: '*' });
  });

  it('exhaustedTools names each spent tool once, report-only or not, in any scope', () => {
    const decision: RateLimitDecision = {
      allowed: true,
      retryAfterMs: 0,
      windows: [
        status('minute', 3),
        status('tool-search-hour', 0, { kind: 'tool_calls', tool: 'search', reportOnly: true }),
        status('tool-search-day', 0, { kind: 'tool_calls', tool: 'search', reportOnly: true }),
        status('tool-calculator-hour', 1, { kind: 'tool_calls', tool: 'calculator', reportOnly: true }),
        status('session-tool-all-day', 0, { kind: 'tool_calls', scope: 'session', tool: '*', reportOnly: true }),
      ],
    };
    expect([...exhaustedTools(decision)]).toEqual(['search', '*']);
  });

  it('blank and whitespace-only ids count as absent', () => {
    expect(countedId(null)).toBeNull();
    expect(countedId('')).toBeNull();
    expect(countedId(' \t\n ')).toBeNull();
    expect(countedId(' run-1 ')).toBe(' run-1 ');
  });
});

describe('rate-limit headers', () => {
  it('leave cost budgets and tool quotas out: policies, items and the X-RateLimit trio', () => {
    const out: Array<string | string[]> = [];
    const decision: RateLimitDecision = {
      allowed: true,
      retryAfterMs: 0,
      windows: [status('minute', 9), status('cost-day', 0, { kind: 'cost' }), status('tool-search-hour', 0, { kind: 'tool_calls', tool: 'search', reportOnly: true })],
    };
    expect(appendRateLimitHeaders(decision, out)).toBe(true);
    const headers = Object.fromEntries(Array.from({ length: out.length / 2 }, (_, i) => [out[2 * i], out[2 * i + 1]]));
    expect(headers['RateLimit-Policy']).toBe('"minute";q=10;w=60');
    expect(headers.RateLimit).toBe('"minute";r=9;t=1');
    expect(headers['X-RateLimit-Remaining']).toBe('9');
    // Only policy windows: no header at all.
    const none: Array<string | string[]> = [];
    expect(appendRateLimitHeaders({ allowed: true, retryAfterMs: 0, windows: [status('cost-day', 5, { kind: 'cost' })] }, none)).toBe(false);
    expect(none).toEqual([]);
  });
});
