// Two gateway PROCESSES on one Redis, leases on, one busy key whose plan has an end-user window
// and a cost budget (decision 0076): the key's end user is served from leases that reserve
// micro-dollars beside their units, so few script calls reach Redis; yet once the leases have
// ended Redis holds exactly the cost of the admitted answers, the overshoot stays within the
// answers in flight, every refusal is cost_budget_exceeded, and once it is spent both refuse.
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import type { GatewayProcess } from '../helpers/gateway-process.js';
import { answerChat } from '../helpers/fake-upstream.js';
import { countedInRedis, scriptCallsInRedis } from '../helpers/rate-limit-counts.js';
import { spendUntilBothRefuse } from '../helpers/rate-limit-leases.js';
import { useSharedRedisGateways } from '../helpers/shared-redis-gateways.js';

const PREFIX = 'gwclproc:';
// 10 tokens an answer at 0.002 USD per 1,000 tokens: 20 micro-dollars an answer.
const MICRO_PER_ANSWER = 20;
const BUDGET_MICRO = 40_000;
const WORKERS_PER_GATEWAY = 8;
const PLANS = {
  metered: {
    windows: [{ requests: 1_000_000, per: '1m' }],
    cost: [{ usd: BUDGET_MICRO / 1e6, per: '1h' }],
    end_user: { windows: [{ requests: 1_000_000, per: '1m' }] },
  },
};
const SUBJECT = 'account:cost-leased';

const shared = useSharedRedisGateways({
  prefix: PREFIX,
  plans: PLANS,
  upstream: answerChat('hi', 10),
  connections: 64,
  extraConfig: { rate_limits: { lease: true }, pricing: { default: 0.002 } },
});

describe(`two gateway processes, leases on, one busy end user on a cost budget of ${BUDGET_MICRO} micro-dollars an hour`, () => {
  it('serve it from cost leases, exact once they end, and both refuse when it is spent', async () => {
    const key = await shared.createKey('cost-leased', 'metered');
    let admitted = 0;
    const refusals = new Set<string>();
    const post = async (gateway: GatewayProcess): Promise<boolean> => {
      const response = await request(`${gateway.url}/agents/support/api/v1/chat`, {
        method: 'POST',
        dispatcher: shared.dispatcher,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ message: 'hi', context: { user_id: 'alice' } }),
      });
      const text = await response.body.text();
      if (response.statusCode === 200) {
        admitted += 1;
        return true;
      }
      refusals.add(`${response.statusCode} ${(JSON.parse(text) as { error: { type: string } }).error.type}`);
      return false;
    };
    const before = await scriptCallsInRedis(shared.inspect);
    await Promise.all(
      shared.gateways.flatMap((gateway) =>
        Array.from({ length: WORKERS_PER_GATEWAY }, async () => {
          while (await post(gateway));
        }),
      ),
    );
    const calls = (await scriptCallsInRedis(shared.inspect)) - before;
    expect(admitted).toBeGreaterThan(BUDGET_MICRO / MICRO_PER_ANSWER / 2);
    // Served from leases: without them every answer costs an admit call (coalesced at most with
    // the gateway's other 7 workers) and a charge call.
    expect(calls).toBeLessThan(admitted / 4);
    // A refusal may come while the other gateway holds a reserve: once leases have ended, Redis
    // holds exactly the admitted answers' cost, and the rest is admitted.
    await spendUntilBothRefuse(shared.gateways, post, async () => {
      expect(await countedInRedis(shared.inspect, PREFIX, SUBJECT, 'cost-hour')).toBe(admitted * MICRO_PER_ANSWER);
    });
    const charged = await countedInRedis(shared.inspect, PREFIX, SUBJECT, 'cost-hour');
    expect(charged).toBe(admitted * MICRO_PER_ANSWER);
    expect(charged).toBeGreaterThanOrEqual(BUDGET_MICRO);
    // The overshoot bound (docs/rate-limits.md "Cost budgets"): limit − 1 + at most twice the
    // answers in flight at once (a worker's last, charged as it closes, and its next).
    const inFlightAtOnce = shared.gateways.length * WORKERS_PER_GATEWAY * 2;
    expect(charged).toBeLessThanOrEqual(BUDGET_MICRO - 1 + 2 * inFlightAtOnce * MICRO_PER_ANSWER);
    expect(refusals).toEqual(new Set(['429 cost_budget_exceeded']));
    expect(await Promise.all(shared.gateways.map((gateway) => post(gateway)))).toEqual([false, false]);
  });
});
