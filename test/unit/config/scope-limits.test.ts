// The session and account scopes in plans and a key's own limits (src/config/plan-schema.ts;
// docs/configuration.md): named with their scope's prefix, "*" taken as a tool, checked against
// every other window name, and hostile shapes refused as config errors (the admin API and
// `keys create --limits` validate with the same schema).
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config/load-config.js';
import { keyLimitsSchema, planWithKeyLimits } from '../../../src/config/schema.js';

const base = { agents: { support: { upstream: 'http://127.0.0.1:9/api/v1' } } };

function plan(input: Record<string, unknown>) {
  return parseConfig({ ...base, plans: { p: input } }, 'test', {}).plans.get('p')!;
}

describe('session and account scopes', () => {
  it('reads session and account limits into their scopes, named session-… and account-…', () => {
    const limits = plan({
      windows: [{ requests: 300, per: '1m' }],
      account: { cost: [{ usd: 500, per: '30d' }], windows: [{ requests: 2000, per: '1m' }] },
      session: { windows: [{ requests: 40, per: '1d' }], tokens: [{ tokens: 200000, per: '1d' }], cost: [{ usd: 2, per: '1d' }], tool_calls: { '*': [{ calls: 60, per: '1d' }], web_search: [{ calls: 10, per: '1d' }] }, require: true },
    });
    expect(limits.account!.windows.map((w) => [w.name, w.kind, w.scope, w.limit])).toEqual([
      ['account-minute', 'requests', 'account', 2000],
      ['account-cost-30d', 'cost', 'account', 500_000_000],
    ]);
    expect(limits.session!.windows.map((w) => [w.name, w.kind, w.scope])).toEqual([
      ['session-day', 'requests', 'session'],
      ['session-tokens-day', 'tokens', 'session'],
      ['session-cost-day', 'cost', 'session'],
    ]);
    expect(limits.session!.toolCalls!.map((q) => [q.tool, q.windows.map((w) => w.name)])).toEqual([
      ['*', ['session-tool-all-day']],
      ['web_search', ['session-tool-web_search-day']],
    ]);
    expect(limits.session!.require).toBe(true);
    expect(limits.account!.require).toBe(false);
    // The subject's own windows stay its own.
    expect(limits.windows.map((w) => w.name)).toEqual(['minute']);
  });

  it("a key's own session and account replace the plan's; absent, the plan's stand", () => {
    const p = plan({ windows: [{ requests: 300, per: '1m' }], session: { windows: [{ requests: 40, per: '1d' }] } });
    const own = planWithKeyLimits(p, { account: { windows: [{ requests: 5, per: '1h' }] } });
    expect(own.session).toBe(p.session);
    expect(own.account!.windows.map((w) => w.name)).toEqual(['account-hour']);
    expect(planWithKeyLimits(p, { session: { windows: [{ requests: 2, per: '1h' }] } }).session!.windows.map((w) => w.limit)).toEqual([2]);
  });

  it('hostile: a name clash across scopes, unknown fields, require on the account, odd tool names, 17 windows are refused', () => {
    const refused = (input: Record<string, unknown>): string => {
      try {
        plan(input);
      } catch (error) {
        return String(error);
      }
      throw new Error(`accepted ${JSON.stringify(input)}`);
    };
    expect(refused({ windows: [{ requests: 1, per: '1m', name: 'session-x' }], session: { windows: [{ requests: 1, per: '1m', name: 'x' }] } })).toContain('two windows are named "session-x"');
    expect(refused({ session: { turns: [] } })).toContain('session');
    expect(refused({ account: { require: true } })).toContain('account');
    expect(refused({ session: { tool_calls: { '**': [{ calls: 1, per: '1d' }] } } })).toContain('tool name');
    expect(refused({ session: { windows: Array.from({ length: 17 }, () => ({ requests: 1, per: '1m' })) } })).toContain('session');
    expect(keyLimitsSchema.safeParse({ session: { windows: [{ requests: 1, per: '1m', name: 'x' }] }, account: { windows: [{ requests: 1, per: '1m', name: 'x' }] } }).success).toBe(true);
    expect(keyLimitsSchema.safeParse({ windows: [{ requests: 1, per: '1m', name: 'account-x' }], account: { windows: [{ requests: 1, per: '1m', name: 'x' }] } }).success).toBe(false);
    expect(keyLimitsSchema.safeParse({ session: { require: 'yes' } }).success).toBe(false);
  });
});
