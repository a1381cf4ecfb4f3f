// End-user limits exact across two gateway PROCESSES on one Redis (docs/design.md, "Agent-aware policy"):
// 200 requests at once, spread over both gateways and several end users, admit exactly what
// the end users' windows and the subject's allow, and nothing more reaches the runner.
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { chatResponse } from '../helpers/fake-upstream.js';
import { useSharedRedisGateways } from '../helpers/shared-redis-gateways.js';

let runnerCalls = 0;
const fixture = useSharedRedisGateways({
  // Leases off: two leased instances admit at most the limit, not exactly it (a lease's unused units stay on its instance for up to a bucket).
  extraConfig: { rate_limits: { lease: false } },
  prefix: 'gweup:',
  plans: {
    peruser: { windows: [{ requests: 100_000, per: '1m' }], end_user: { windows: [{ requests: 50, per: '1m' }] } },
    tight: { windows: [{ requests: 60, per: '1m' }], end_user: { windows: [{ requests: 25, per: '1m' }] } },
  },
  upstream: (_req, res) => {
    runnerCalls += 1;
    const body = JSON.stringify(chatResponse('hi', 1));
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  },
  connections: 256,
});

/** 200 requests at once, alternately on gateway a and b, end user i % users; the admitted count per end user. */
async function burst(key: string, users: number): Promise<{ admitted: number[]; refusals: Set<string> }> {
  const admitted = new Array<number>(users).fill(0);
  const refusals = new Set<string>();
  await Promise.all(
    Array.from({ length: 200 }, async (_, i) => {
      const gateway = fixture.gateways[i % 2]!;
      const user = i % users;
      const response = await request(`${gateway.url}/agents/support/api/v1/chat`, {
        method: 'POST',
        dispatcher: fixture.dispatcher,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ message: 'hi', context: { user_id: `user-${user}` } }),
      });
      const text = await response.body.text();
      if (response.statusCode === 200) admitted[user]! += 1;
      else {
        const { error } = JSON.parse(text) as { error: { type: string; param?: string } };
        refusals.add(`${response.statusCode} ${error.type} ${error.param ?? '-'}`);
      }
    }),
  );
  return { admitted, refusals };
}

describe('end-user windows across two gateway processes', () => {
  it('200 concurrent requests of two end users: exactly 50 each (their windows), 100 at the runner', async () => {
    const key = await fixture.createKey('eu-peruser', 'peruser');
    const calls = runnerCalls;
    const { admitted, refusals } = await burst(key, 2);
    expect(admitted).toEqual([50, 50]);
    expect([...refusals]).toEqual(['429 rate_limit_exceeded context.user_id']);
    expect(runnerCalls - calls).toBe(100);
  });

  it("200 concurrent requests of four end users: exactly the subject's 60, none over 25", async () => {
    const key = await fixture.createKey('eu-tight', 'tight');
    const calls = runnerCalls;
    const { admitted } = await burst(key, 4);
    expect(admitted.reduce((a, b) => a + b, 0)).toBe(60);
    for (const count of admitted) expect(count).toBeLessThanOrEqual(25);
    expect(runnerCalls - calls).toBe(60);
  });
});
