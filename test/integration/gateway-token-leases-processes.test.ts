// Two gateway PROCESSES on one Redis, leases on, one busy key on a plan with a token budget
// (docs/rate-limits.md "Leases", decision 0026): the busy key is served from leases that
// reserve tokens, yet once the leases have ended Redis holds exactly the tokens of the
// admitted answers, the overshoot stays within the bound, and when the budget is spent both
// gateways refuse with token_budget_exceeded.
import { describe, expect, it } from 'vitest';
import { answerChat } from '../helpers/fake-upstream.js';
import type { GatewayProcess } from '../helpers/gateway-process.js';
import { countedInRedis, scriptCallsInRedis } from '../helpers/rate-limit-counts.js';
import { spendUntilBothRefuse } from '../helpers/rate-limit-leases.js';
import { useSharedRedisGateways } from '../helpers/shared-redis-gateways.js';

const PREFIX = 'gwtlproc:';
const TOKENS_PER_ANSWER = 10;
const BUDGET = 20_000;
const WORKERS_PER_GATEWAY = 8;
const PLANS = { metered: { windows: [{ requests: 1_000_000, per: '1m' }], tokens: [{ tokens: BUDGET, per: '1h' }] } };
const SUBJECT = 'account:busy-leased';

const shared = useSharedRedisGateways({
  prefix: PREFIX,
  plans: PLANS,
  upstream: answerChat('hi', TOKENS_PER_ANSWER),
  connections: 64,
  extraConfig: { rate_limits: { lease: true } },
});

/** Script calls Redis has run (the limiter's EVALSHA, and EVAL for a connection's first call). */
const scriptCalls = (): Promise<number> => scriptCallsInRedis(shared.inspect);

describe(`two gateway processes, leases on, one busy key on a budget of ${BUDGET} tokens per hour (${TOKENS_PER_ANSWER} per answer)`, () => {
  it('serve it from token leases, exact once they end, and both refuse when it is spent', async () => {
    const key = await shared.createKey('busy-leased', 'metered');
    let admitted = 0;
    const refusals = new Set<string>();
    /** One answer; false when refused. */
    const post = async (gateway: GatewayProcess): Promise<boolean> => {
      const { status, type } = await shared.postChat(gateway, key);
      if (status === 200) {
        admitted += 1;
        return true;
      }
      refusals.add(`${status} ${type}`);
      return false;
    };
    const before = await scriptCalls();
    // Each worker sends one request at a time until refused.
    await Promise.all(
      shared.gateways.flatMap((gateway) =>
        Array.from({ length: WORKERS_PER_GATEWAY }, async () => {
          while (await post(gateway));
        }),
      ),
    );
    const calls = (await scriptCalls()) - before;
    expect(admitted).toBeGreaterThan(BUDGET / TOKENS_PER_ANSWER / 2);
    // Served from leases: without token leases every answer costs an admission call
    // (coalesced at most with the gateway's other 7 workers) and a charge call.
    expect(calls).toBeLessThan(admitted / 4);
    // A refusal may have come while the other gateway held a reserve: once leases have
    // ended, Redis holds exactly the admitted answers' tokens, and the rest is admitted.
    await spendUntilBothRefuse(shared.gateways, post, async () => {
      expect(await countedInRedis(shared.inspect, PREFIX, SUBJECT, 'tokens-hour')).toBe(admitted * TOKENS_PER_ANSWER);
    });
    const charged = await countedInRedis(shared.inspect, PREFIX, SUBJECT, 'tokens-hour');
    expect(charged).toBe(admitted * TOKENS_PER_ANSWER);
    expect(charged).toBeGreaterThanOrEqual(BUDGET);
    // The overshoot bound (docs/rate-limits.md): limit − 1 + at most twice the answers in
    // flight at once; a worker has at most two (its last, charged as it closes, and its next).
    const inFlightAtOnce = shared.gateways.length * WORKERS_PER_GATEWAY * 2;
    expect(charged).toBeLessThanOrEqual(BUDGET - 1 + 2 * inFlightAtOnce * TOKENS_PER_ANSWER);
    expect(refusals).toEqual(new Set(['429 token_budget_exceeded']));
    // Spent: both refuse.
    expect(await Promise.all(shared.gateways.map((gateway) => post(gateway)))).toEqual([false, false]);
  });
});
