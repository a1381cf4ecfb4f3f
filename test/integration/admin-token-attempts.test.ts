// Failed admin-token attempts (issue 33, worth-fixing list; docs/admin-api.md
// "Authentication"): logged without the token, counted, and throttled per address like wrong
// keys on the public listener — for bearer tokens and dashboard sign-ins alike.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { metricsText, parseMetrics, sumSamples } from '../helpers/metrics-text.js';

const ADMIN_TOKEN = `adm-${randomUUID()}`;
const MAX_ATTEMPTS = 3;

let upstream: FakeUpstream;
let gateway: TestGateway;

beforeAll(async () => {
  upstream = await startFakeUpstream();
  gateway = await startTestGateway({
    agents: { support: upstream.baseUrl },
    config: {
      admin: { host: '127.0.0.1', port: 0, tokens: [{ name: 'ops', token: ADMIN_TOKEN, role: 'admin' }] },
      keys: { failed_auth: { max_attempts: MAX_ATTEMPTS, per: '1m', block_for: '1m' } },
    },
  });
});

afterAll(async () => {
  await gateway?.close();
  await upstream?.close();
});

describe('refused admin tokens', () => {
  it('are answered 401 up to keys.failed_auth.max_attempts, then 429 with Retry-After, even for the right token; logged without the token and counted', async () => {
    const wrong = `wrong-${randomUUID()}`;
    // Counted as a difference: the test workers share one process's metrics registry across files (vitest.config.ts).
    const failures = async (): Promise<number> => sumSamples(parseMetrics(await metricsText(gateway.adminUrl)), 'agentgw_admin_auth_failures_total', { reason: 'invalid_admin_token' });
    const failuresBefore = await failures();
    const bearer = async (token: string): Promise<Response> => {
      const answer = await fetch(`${gateway.adminUrl}/admin/v1/keys`, { headers: { authorization: `Bearer ${token}` } });
      await answer.clone().arrayBuffer();
      return answer;
    };
    const statuses: number[] = [];
    for (let i = 0; i < MAX_ATTEMPTS - 1; i += 1) statuses.push((await bearer(wrong)).status);
    // The dashboard's sign-in counts against the same address.
    const signIn = await fetch(`${gateway.adminUrl}/dashboard/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: wrong }) });
    await signIn.arrayBuffer();
    statuses.push(signIn.status);
    const refused = await bearer(wrong);
    statuses.push(refused.status);
    expect(statuses).toEqual([401, 401, 401, 429]);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);

    // Blocked: the right token from this address waits too (no token is compared).
    const right = await fetch(`${gateway.adminUrl}/admin/v1/keys`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    const body = (await right.json()) as { error: { type: string } };
    expect(right.status).toBe(429);
    expect(body.error.type).toBe('rate_limit_exceeded');

    const logs = gateway.logs.join('');
    expect(logs.match(/"event":"admin_auth_failed"/g)).toHaveLength(MAX_ATTEMPTS);
    expect(logs).not.toContain(wrong);
    expect(logs).not.toContain(ADMIN_TOKEN);
    expect((await failures()) - failuresBefore).toBe(MAX_ATTEMPTS);
  });
});
