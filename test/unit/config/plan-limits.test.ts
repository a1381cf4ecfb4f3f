// A plan's limits as one structure (src/config/plan-schema.ts): request windows, token
// budgets and the cap each in their own field, the limiter's list built once from them, and
// a key's own limits replacing the plan's field by field.
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config/load-config.js';
import { planWithKeyLimits } from '../../../src/config/schema.js';

const base = { agents: { support: { upstream: 'http://127.0.0.1:9/api/v1' } } };
const MINUTE = { name: 'minute', limit: 60, windowMs: 60_000, kind: 'requests' as const, scope: 'subject' as const };
const DAY_TOKENS = { name: 'tokens-day', limit: 500_000, windowMs: 86_400_000, kind: 'tokens' as const, scope: 'subject' as const };

function plan(input: Record<string, unknown>) {
  return parseConfig({ ...base, plans: { p: input } }, 'test', {}).plans.get('p')!;
}

describe('Limits', () => {
  it('reads requests, tokens and concurrency into their own fields; windows lists requests then tokens, whatever order the file gives', () => {
    const limits = plan({ tokens: [{ tokens: 500_000, per: '1d' }], concurrency: { streams: 2 }, windows: [{ requests: 60, per: '1m' }] });
    expect(limits.requests).toEqual([MINUTE]);
    expect(limits.tokens).toEqual([DAY_TOKENS]);
    expect(limits.windows).toEqual([MINUTE, DAY_TOKENS]);
    expect(limits.concurrency).toEqual({ streams: 2, leaseMs: 30_000 });
  });

  it('a plan without limits has empty fields, not missing ones', () => {
    expect(plan({})).toEqual({ requests: [], tokens: [], cost: [], windows: [], concurrency: undefined });
  });

  it("a key's own limits replace the plan's field by field, and the list follows", () => {
    const limits = plan({ windows: [{ requests: 60, per: '1m' }], tokens: [{ tokens: 500_000, per: '1d' }] });
    const fewerTokens = planWithKeyLimits(limits, { tokens: [{ tokens: 10, per: '1h' }] });
    const HOUR_TOKENS = { name: 'tokens-hour', limit: 10, windowMs: 3_600_000, kind: 'tokens' as const, scope: 'subject' as const };
    expect(fewerTokens).toEqual({ requests: [MINUTE], tokens: [HOUR_TOKENS], cost: [], windows: [MINUTE, HOUR_TOKENS], concurrency: undefined });
    const noWindows = planWithKeyLimits(limits, { windows: [] });
    expect(noWindows).toEqual({ requests: [], tokens: [DAY_TOKENS], cost: [], windows: [DAY_TOKENS], concurrency: undefined });
  });

  it('refuses a request window and a budget of one name, naming it', () => {
    expect(() => plan({ windows: [{ requests: 1, per: '1m', name: 'x' }], tokens: [{ tokens: 1, per: '1h', name: 'x' }] })).toThrow(/two windows are named "x"/);
  });

  it('reads cost budgets (micro-dollars) and tool quotas into their own fields: cost in the list, tool quotas apart', () => {
    const limits = plan({ windows: [{ requests: 60, per: '1m' }], cost: [{ usd: 50, per: '30d' }], tool_calls: { web_search: [{ calls: 100, per: '1d' }] } });
    const COST = { name: 'cost-30d', limit: 50_000_000, windowMs: 30 * 86_400_000, kind: 'cost' as const, scope: 'subject' as const };
    expect(limits.cost).toEqual([COST]);
    expect(limits.windows).toEqual([MINUTE, COST]);
    expect(limits.toolCalls).toEqual([
      {
        tool: 'web_search',
        windows: [{ name: 'tool-web_search-day', limit: 100, windowMs: 86_400_000, kind: 'tool_calls' as const, scope: 'subject' as const, tool: 'web_search', use: 'charge' as const }],
        reports: [{ name: 'tool-web_search-day', limit: 100, windowMs: 86_400_000, kind: 'tool_calls' as const, scope: 'subject' as const, tool: 'web_search', use: 'report' as const }],
        admits: [{ name: 'tool-web_search-day', limit: 100, windowMs: 86_400_000, kind: 'tool_calls' as const, scope: 'subject' as const, tool: 'web_search', use: 'admit' as const }],
      },
    ]);
    // A key's own: replaced field by field; an empty mapping removes the quotas.
    const own = planWithKeyLimits(limits, { cost: [{ usd: 1, per: '1d' }], tool_calls: {} });
    expect(own.cost).toEqual([{ name: 'cost-day', limit: 1_000_000, windowMs: 86_400_000, kind: 'cost' as const, scope: 'subject' as const }]);
    expect(own.toolCalls).toBeUndefined();
    expect(planWithKeyLimits(limits, {}).toolCalls).toBe(limits.toolCalls);
  });

  it('allows budget windows up to 90 days (buckets of 36 h), not longer', () => {
    expect(plan({ tokens: [{ tokens: 1, per: '90d' }], cost: [{ usd: 1, per: '90d' }] }).windows.map((w) => w.windowMs)).toEqual([90 * 86_400_000, 90 * 86_400_000]);
    for (const part of [{ tokens: [{ tokens: 1, per: '91d' }] }, { cost: [{ usd: 1, per: '91d' }] }, { tool_calls: { t: [{ calls: 1, per: '91d' }] } }]) {
      expect(() => plan(part)).toThrow(/at most 90d/);
    }
  });

  it('hostile: negative, zero, NaN, infinite or sub-micro-dollar costs, 10,000 tools, 17 windows, odd tool names are config errors', () => {
    for (const usd of [-1, 0, Number.NaN, Number.POSITIVE_INFINITY, 0.0000001, 2e9, '5']) expect(() => plan({ cost: [{ usd, per: '1d' }] }), String(usd)).toThrow();
    const many = Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`tool${i}`, [{ calls: 1, per: '1d' }]]));
    expect(() => plan({ tool_calls: many })).toThrow(/at most 64 tools may have quotas, got 10000/);
    expect(() => plan({ tool_calls: { t: Array.from({ length: 17 }, () => ({ calls: 1, per: '1d' })) } })).toThrow();
    expect(() => plan({ tool_calls: { t: [] } })).toThrow();
    expect(() => plan({ tool_calls: { 'a b': [{ calls: 1, per: '1d' }] } })).toThrow(/a tool name/);
    expect(() => plan({ tool_calls: { t: [{ calls: -1, per: '1d' }] } })).toThrow();
    expect(() => plan({ tool_calls: { a: [{ calls: 1, per: '1d', name: 'x' }], b: [{ calls: 1, per: '1h', name: 'x' }] } })).toThrow(/two windows are named "x"/);
  });
});
