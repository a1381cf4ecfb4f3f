// A key's tool scope changed on one gateway PROCESS reaches another on the same Redis within
// 1 s (docs/policy.md, "Tool scope on keys"; decision 0064): the change rides the key
// invalidation channel a revocation uses. Instance B has the key cached (10 minute TTL), so
// only the invalidation can make it see the new scope in time.
import { randomUUID } from 'node:crypto';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { useSharedRedisGateways } from '../helpers/shared-redis-gateways.js';
import { defaultHandler } from '../helpers/fake-upstream.js';
import { waitFor } from '../helpers/wait.js';

const ADMIN_TOKEN = `adm-${randomUUID()}`;
const fixture = useSharedRedisGateways({
  prefix: 'gwtsp:',
  plans: { pro: { windows: [{ requests: 100_000, per: '1m' }] } },
  upstream: defaultHandler,
  connections: 16,
  extraConfig: { admin: { tokens: [{ name: 'ops', token: ADMIN_TOKEN, role: 'admin' }] } },
});

async function admin(url: string, method: string, path: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await request(`${url}${path}`, {
    method: method as 'POST',
    dispatcher: fixture.dispatcher,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.statusCode, body: (await response.body.json()) as Record<string, unknown> };
}

async function chat(url: string, key: string, body: Record<string, unknown>): Promise<{ status: number; param: string | undefined; runnerCalls: number; runnerTools: unknown }> {
  const before = fixture.upstream.requests.length;
  const response = await request(`${url}/agents/support/api/v1/chat`, {
    method: 'POST',
    dispatcher: fixture.dispatcher,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await response.body.text();
  const seen = fixture.upstream.requests.slice(before);
  const forwarded = seen[0] === undefined ? undefined : (JSON.parse(seen[0].body.toString('utf8')) as Record<string, unknown>);
  return {
    status: response.statusCode,
    param: response.statusCode === 200 ? undefined : (JSON.parse(text) as { error: { param?: string } }).error.param,
    runnerCalls: seen.length,
    runnerTools: forwarded === undefined ? 'not called' : 'tools' in forwarded ? forwarded.tools : 'absent',
  };
}

describe('tool scope across two gateway processes on one Redis', () => {
  it("a scope PATCHed through instance A's admin API: instance B refuses the removed tool within 1 s", async () => {
    const [a, b] = fixture.gateways as [(typeof fixture.gateways)[0], (typeof fixture.gateways)[0]];
    const created = await admin(a.adminUrl, 'POST', '/admin/v1/keys', { account: 'shop', plan: 'pro', agents: ['support'], tools: ['search', 'web_search'] });
    expect(created.status).toBe(201);
    const key = created.body.key as string;
    const keyId = created.body.key_id as string;
    // B caches the key with its scope.
    expect(await chat(b.url, key, { message: 'hi', tools: ['web_search'] })).toMatchObject({ status: 200, runnerCalls: 1 });
    expect((await chat(b.url, key, { message: 'hi' })).runnerTools).toEqual(['search', 'web_search']);

    const patched = await admin(a.adminUrl, 'PATCH', `/admin/v1/keys/${keyId}`, { tools: ['search'] });
    expect([patched.status, patched.body.tools]).toEqual([200, ['search']]);
    await waitFor('instance B refusing the removed tool', async () => (await chat(b.url, key, { message: 'hi', tools: ['web_search'] })).status === 400, 1_000, 20);
    const refused = await chat(b.url, key, { message: 'hi', tools: ['web_search'] });
    expect([refused.status, refused.param, refused.runnerCalls]).toEqual([400, 'tools', 0]);
    expect((await chat(b.url, key, { message: 'hi' })).runnerTools).toEqual(['search']);

    // Clearing it reaches B the same way.
    expect((await admin(a.adminUrl, 'PATCH', `/admin/v1/keys/${keyId}`, { tools: null })).status).toBe(200);
    await waitFor('instance B without the scope', async () => (await chat(b.url, key, { message: 'hi' })).runnerTools === 'absent', 1_000, 20);
    expect(await chat(b.url, key, { message: 'hi', tools: ['web_search'] })).toMatchObject({ status: 200, runnerTools: ['web_search'] });
  });
});
