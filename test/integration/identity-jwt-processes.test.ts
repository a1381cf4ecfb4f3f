// JWT callers across two gateway PROCESSES on one Redis (docs/identity.md): the plan, the
// token's own limits and the end user its claims name are counted exactly as for keys, 200
// requests at once spread over both; a revocation made through one instance's admin API is
// refused by both (within 1 s on a quiet machine: each polls every 200 ms; here the order is
// asserted — admitted until refused, refused from then on — and the times are printed, since
// a loaded machine may stretch any poll). The token lives far longer than the wait, so only
// the revocation can refuse it. The tokens come from a real OpenID provider (oidc-provider).
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatResponse } from '../helpers/fake-upstream.js';
import { startTestProvider, type TestProvider } from '../helpers/oidc-provider.js';
import { startSharedRedisGateways, type SharedRedisGateways } from '../helpers/shared-redis-gateways.js';
import { sleep } from '../helpers/wait.js';

const AUDIENCE = 'https://gateway.test';
const ADMIN_TOKEN = 'identity-processes-admin-token-0123';
/** A guard against a hang, not a speed bound (1 s is a quiet machine's); far inside a token's lifetime. */
const REFUSAL_BOUND_MS = 60_000;

let provider: TestProvider;
let fixture: SharedRedisGateways;
let runnerCalls = 0;

beforeAll(async () => {
  provider = await startTestProvider([
    { id: 'svc-plan', secret: 'svc-plan-secret-0123456789', claims: { org_id: 'acct-plan', plan: 'fifty', agents: ['support'] } },
    { id: 'svc-own', secret: 'svc-own-secret-01234567890', claims: { org_id: 'acct-own', plan: 'fifty', agents: ['support'], limits: { windows: [{ requests: 30, per: '1m' }] } } },
    { id: 'svc-person', secret: 'svc-person-secret-0123456', claims: { org_id: 'acct-person', plan: 'peruser', agents: ['support'], person: 'alice' } },
    { id: 'svc-revoked', secret: 'svc-revoked-secret-012345', claims: { org_id: 'acct-revoked', plan: 'open', agents: ['support'] } },
  ]);
  fixture = await startSharedRedisGateways({
    prefix: 'idjwt:',
    plans: {
      fifty: { windows: [{ requests: 50, per: '1m' }] },
      peruser: { windows: [{ requests: 100_000, per: '1m' }], end_user: { windows: [{ requests: 20, per: '1m' }] } },
      open: { windows: [] },
    },
    upstream: (_req, res) => {
      runnerCalls += 1;
      const body = JSON.stringify(chatResponse('hi', 1));
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    },
    connections: 256,
    extraConfig: {
      // Leases off: a lease's units unused when a burst ends stay on its instance for up to a
      // bucket (docs/rate-limits.md "Leases"), so two leased instances admit at most the limit,
      // not exactly it; these tests count exactly what the claims' limits allow.
      rate_limits: { lease: false },
      auth: { jwt: [{ issuer: provider.issuer, audiences: [AUDIENCE], claims: { end_user: 'person', limits: 'limits' } }] },
      admin: { tokens: [{ name: 'ops', token: ADMIN_TOKEN, role: 'admin' }] },
      keys: { store: 'redis', cache_ttl: '10m', failed_auth: { max_attempts: 100_000 } },
    },
  });
}, 90_000);

afterAll(async () => {
  await fixture?.close();
  await provider?.close();
});

/** 200 requests at once, alternately on gateway a and b, each naming end user i % 4 in its body: how many were admitted. */
async function burst(token: string): Promise<{ admitted: number; refusals: Set<string> }> {
  let admitted = 0;
  const refusals = new Set<string>();
  await Promise.all(
    Array.from({ length: 200 }, async (_, i) => {
      const response = await request(`${fixture.gateways[i % 2]!.url}/agents/support/api/v1/chat`, {
        method: 'POST',
        dispatcher: fixture.dispatcher,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ message: 'hi', context: { user_id: `body-user-${i % 4}` } }),
      });
      const text = await response.body.text();
      if (response.statusCode === 200) admitted += 1;
      else refusals.add(`${response.statusCode} ${(JSON.parse(text) as { error: { type: string } }).error.type}`);
    }),
  );
  return { admitted, refusals };
}

describe('limits from claims, exact across two instances', () => {
  it("the plan the token's claim names: exactly its 50", async () => {
    const calls = runnerCalls;
    const { admitted, refusals } = await burst(await provider.token('svc-plan', AUDIENCE));
    expect(admitted).toBe(50);
    expect([...refusals]).toEqual(['429 rate_limit_exceeded']);
    expect(runnerCalls - calls).toBe(50);
  });

  it("the token's own limits over its plan: exactly its 30", async () => {
    const { admitted } = await burst(await provider.token('svc-own', AUDIENCE));
    expect(admitted).toBe(30);
  });

  it("the end user the token names, whatever the body's context.user_id: exactly that user's 20", async () => {
    const { admitted, refusals } = await burst(await provider.token('svc-person', AUDIENCE));
    expect(admitted).toBe(20);
    expect([...refusals]).toEqual(['429 rate_limit_exceeded']);
  });
});

describe('revocation on every instance', () => {
  async function status(gateway: number, token: string): Promise<number> {
    const response = await fixture.postChat(fixture.gateways[gateway]!, token);
    return response.status;
  }

  for (const by of ['jti', 'sub'] as const) {
    it(`by ${by}: both instances refuse the token once the admin call has returned, and keep refusing it`, async () => {
      const token = await provider.token('svc-revoked', AUDIENCE);
      // Both instances have verified (and remembered) the token.
      expect([await status(0, token), await status(1, token)]).toEqual([200, 200]);
      const claims = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as { jti: string; sub: string };
      const answer = await fetch(`${fixture.gateways[0]!.adminUrl}/admin/v1/tokens/revocations`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify(by === 'jti' ? { jti: claims.jti } : { sub: claims.sub, until: new Date(Date.now() + 600_000).toISOString() }),
      });
      expect(answer.status).toBe(201);
      await answer.text();
      const returnedAt = Date.now();
      // Each instance is asked until it refuses (every answer before that a 200), then again:
      // still refused. The wait's bound guards against a hang only; it is far inside the
      // token's lifetime, so no expiry can stand in for the revocation.
      const refusedAfterMs: number[] = [];
      for (const gateway of [0, 1]) {
        for (;;) {
          const sentAt = Date.now();
          const code = await status(gateway, token);
          if (code === 401) {
            refusedAfterMs.push(sentAt - returnedAt);
            break;
          }
          expect(code).toBe(200);
          expect(sentAt - returnedAt, `instance ${gateway} still admitted the token ${sentAt - returnedAt} ms after the revocation`).toBeLessThan(REFUSAL_BOUND_MS);
          await sleep(20);
        }
      }
      expect([await status(0, token), await status(1, token)]).toEqual([401, 401]);
      process.stdout.write(`JWT revocation by ${by} refused by the two instances ${refusedAfterMs.join(' and ')} ms after the admin call returned\n`);
    }, 120_000);
  }
});
