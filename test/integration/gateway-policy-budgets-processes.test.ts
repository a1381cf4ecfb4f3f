// Two gateway PROCESSES on one Redis share one tool-call quota and one cost budget
// (docs/rate-limits.md "Tool-call quotas", "Cost budgets"): under 200 concurrent requests split
// across both, every answer is charged exactly once in the one shared count, at least the
// quota's (budget's) worth is admitted, the overshoot stays within the answers in flight, every
// refusal is the policy's own, and afterwards both refuse.
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import type { GatewayProcess } from '../helpers/gateway-process.js';
import { countedInRedis } from '../helpers/rate-limit-counts.js';
import { useSharedRedisGateways } from '../helpers/shared-redis-gateways.js';

const PREFIX = 'gwpbproc:';
const REQUESTS = 200;
const CALLS = 50;
// 5 tokens an answer at 0.002 USD per 1,000 tokens: 10 micro-dollars; 0.0005 USD is 50 answers.
const MICRO_PER_ANSWER = 10;
const BUDGET_MICRO = 500;
const PLANS = {
  quota: { tool_calls: { calculator: [{ calls: CALLS, per: '1h' }] } },
  cost: { cost: [{ usd: BUDGET_MICRO / 1e6, per: '1h' }] },
};

const shared = useSharedRedisGateways({
  prefix: PREFIX,
  plans: PLANS,
  // Every answer made one calculator call.
  upstream: (_req, res) => {
    const body = JSON.stringify({ response: 'ok', tool_calls: [{ tool: 'calculator', input: {}, output: {} }], metadata: { tokens_used: 5, latency_ms: 1 } });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  },
  connections: 256,
  extraConfig: { pricing: { default: 0.002 } },
});

async function post(gateway: GatewayProcess, key: string, body: unknown): Promise<{ status: number; type: string | undefined }> {
  const response = await request(`${gateway.url}/agents/support/api/v1/chat`, {
    method: 'POST',
    dispatcher: shared.dispatcher,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await response.body.text();
  return { status: response.statusCode, type: response.statusCode === 200 ? undefined : (JSON.parse(text) as { error: { type: string } }).error.type };
}

/** Charges are batched off the request path: reads until the count settles at `expected` (or gives the last read). */
async function settled(subject: string, window: string, expected: number): Promise<number> {
  let counted = 0;
  for (let i = 0; i < 100 && counted !== expected; i += 1) {
    counted = await countedInRedis(shared.inspect, PREFIX, subject, window);
    if (counted !== expected) await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return counted;
}

describe('two gateway processes, one tool quota and one cost budget', () => {
  it(`share a tool's quota (${CALLS} calls an hour) exactly under ${REQUESTS} concurrent requests naming it`, async () => {
    const key = await shared.createKey('quota-proc', 'quota');
    const named = { message: 'What is 1 + 1?', tools: ['calculator'] };
    const answers = await Promise.all(Array.from({ length: REQUESTS }, (_, i) => post(shared.gateways[i % 2]!, key, named)));
    const admitted = answers.filter((a) => a.status === 200).length;
    expect(admitted).toBeGreaterThanOrEqual(CALLS);
    expect(new Set(answers.filter((a) => a.status !== 200).map((a) => `${a.status} ${a.type}`))).toEqual(admitted === REQUESTS ? new Set() : new Set(['429 tool_budget_exceeded']));
    const charged = await settled('account:quota-proc', 'tool-calculator-hour', admitted);
    expect(charged).toBe(admitted);
    // The overshoot: at most the calls of the answers in flight when the quota ran out (all of them, at worst).
    expect(charged - CALLS).toBeLessThanOrEqual(REQUESTS);
    expect(await Promise.all(shared.gateways.map((gateway) => post(gateway, key, named)))).toEqual([
      { status: 429, type: 'tool_budget_exceeded' },
      { status: 429, type: 'tool_budget_exceeded' },
    ]);
  });

  it(`share a cost budget (${BUDGET_MICRO} micro-dollars an hour) exactly under ${REQUESTS} concurrent requests`, async () => {
    const key = await shared.createKey('cost-proc', 'cost');
    const answers = await Promise.all(Array.from({ length: REQUESTS }, (_, i) => post(shared.gateways[i % 2]!, key, { message: 'hi' })));
    const admitted = answers.filter((a) => a.status === 200).length;
    expect(admitted).toBeGreaterThanOrEqual(BUDGET_MICRO / MICRO_PER_ANSWER);
    expect(new Set(answers.filter((a) => a.status !== 200).map((a) => `${a.status} ${a.type}`))).toEqual(admitted === REQUESTS ? new Set() : new Set(['429 cost_budget_exceeded']));
    const charged = await settled('account:cost-proc', 'cost-hour', admitted * MICRO_PER_ANSWER);
    expect(charged).toBe(admitted * MICRO_PER_ANSWER);
    expect(charged - BUDGET_MICRO).toBeLessThanOrEqual(REQUESTS * MICRO_PER_ANSWER);
    expect(await Promise.all(shared.gateways.map((gateway) => post(gateway, key, { message: 'hi' })))).toEqual([
      { status: 429, type: 'cost_budget_exceeded' },
      { status: 429, type: 'cost_budget_exceeded' },
    ]);
  });
});
