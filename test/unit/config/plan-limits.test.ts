// A plan's limits as one structure (src/config/plan-schema.ts): request windows, token
// budgets and the cap each in their own field, the limiter's list built once from them, and
// a key's own limits replacing the plan's field by field.
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config/load-config.js';
import { planWithKeyLimits } from '../../../src/config/schema.js';

const base = { agents: { support: { upstream: 'http://127.0.0.1:9/api/v1' } } };
const MINUTE = { name: 'minute', limit: 60, windowMs: 60_000 };
const DAY_TOKENS = { name: 'tokens-day', limit: 500_000, windowMs: 86_400_000, tokens: true };

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
    expect(plan({})).toEqual({ requests: [], tokens: [], windows: [], concurrency: undefined });
  });

  it("a key's own limits replace the plan's field by field, and the list follows", () => {
    const limits = plan({ windows: [{ requests: 60, per: '1m' }], tokens: [{ tokens: 500_000, per: '1d' }] });
    const fewerTokens = planWithKeyLimits(limits, { tokens: [{ tokens: 10, per: '1h' }] });
    const HOUR_TOKENS = { name: 'tokens-hour', limit: 10, windowMs: 3_600_000, tokens: true };
    expect(fewerTokens).toEqual({ requests: [MINUTE], tokens: [HOUR_TOKENS], windows: [MINUTE, HOUR_TOKENS], concurrency: undefined });
    const noWindows = planWithKeyLimits(limits, { windows: [] });
    expect(noWindows).toEqual({ requests: [], tokens: [DAY_TOKENS], windows: [DAY_TOKENS], concurrency: undefined });
  });

  it('refuses a request window and a budget of one name, naming it', () => {
    expect(() => plan({ windows: [{ requests: 1, per: '1m', name: 'x' }], tokens: [{ tokens: 1, per: '1h', name: 'x' }] })).toThrow(/two windows are named "x"/);
  });
});
