// Two gateway PROCESSES on one Redis share one token budget (docs/rate-limits.md "Token
// budgets"): under 200 concurrent requests split across both, every answered request is
// charged exactly once in the one shared count, at least the budget's worth of answers is
// admitted, every refusal is token_budget_exceeded, and afterwards both refuse.
import { describe, expect, it } from 'vitest';
import { answerChat } from '../helpers/fake-upstream.js';
import { countedInRedis } from '../helpers/rate-limit-counts.js';
import { useSharedRedisGateways } from '../helpers/shared-redis-gateways.js';

const PREFIX = 'gwtbproc:';
const TOKENS_PER_ANSWER = 10;
const BUDGET = 1_000;
const REQUESTS = 200;
const PLANS = { metered: { tokens: [{ tokens: BUDGET, per: '1h' }] } };

const shared = useSharedRedisGateways({
  prefix: PREFIX,
  plans: PLANS,
  upstream: answerChat('hi', TOKENS_PER_ANSWER),
  connections: 256,
});

describe('two gateway processes, one token budget (1000 tokens per hour, 10 per answer)', () => {
  it(`share it exactly under ${REQUESTS} concurrent requests`, async () => {
    const key = await shared.createKey('shared-proc', 'metered');
    const answers = await Promise.all(Array.from({ length: REQUESTS }, (_, i) => shared.postChat(shared.gateways[i % 2]!, key)));
    const admitted = answers.filter((a) => a.status === 200).length;
    // Admission while tokens are left: at least the budget's worth of answers gets through.
    expect(admitted).toBeGreaterThanOrEqual(BUDGET / TOKENS_PER_ANSWER);
    // Every refusal is the budget's.
    expect(new Set(answers.filter((a) => a.status !== 200).map((a) => `${a.status} ${a.type}`))).toEqual(admitted === REQUESTS ? new Set() : new Set(['429 token_budget_exceeded']));
    // Charged exactly once each, in the one shared count (charges are batched off the request path: wait for them).
    const expected = admitted * TOKENS_PER_ANSWER;
    let charged = 0;
    for (let i = 0; i < 100 && charged !== expected; i += 1) {
      charged = await countedInRedis(shared.inspect, PREFIX, 'account:shared-proc', 'tokens-hour');
      if (charged !== expected) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(charged).toBe(expected);
    // The overshoot is bounded by the answers in flight: at most all of them.
    expect(charged - BUDGET).toBeLessThanOrEqual(REQUESTS * TOKENS_PER_ANSWER);
    const after = await Promise.all([shared.postChat(shared.gateways[0]!, key), shared.postChat(shared.gateways[1]!, key)]);
    expect(after).toEqual([
      { status: 429, type: 'token_budget_exceeded' },
      { status: 429, type: 'token_budget_exceeded' },
    ]);
  });
});
