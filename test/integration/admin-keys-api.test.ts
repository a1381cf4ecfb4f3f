// The admin keys API end to end (docs/admin-api.md), on the key file and on Redis: the
// gateway in process with admin tokens of both roles, a real upstream, every keys endpoint,
// changes reaching the request path, malformed requests (400 with param, nothing written),
// and the admin audit trail. Every admin answer is checked against openapi/admin.yaml and
// every chat answer against openapi/agent-chat.yaml.
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisClient } from '../../src/redis/redis-client.js';
import { silentLogger } from '../../src/logger.js';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { OpenApiCheck, type CheckedAnswer } from '../helpers/openapi-check.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { collectKeys } from '../../src/keys/key-pages.js';

const ADMIN_TOKEN = `adm-${randomUUID()}`;
const VIEWER_TOKEN = `view-${randomUUID()}`;
const ANY_KEY = /ha_[0-9A-Za-z]{38}/;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const admin = new OpenApiCheck('admin');
const chatDoc = new OpenApiCheck('agent-chat');

let upstream: FakeUpstream;
let redis: TestRedis;

beforeAll(async () => {
  [upstream, redis] = await Promise.all([startFakeUpstream(), startRedis()]);
});

afterAll(async () => {
  await upstream?.close();
  await redis?.close();
  // Every endpoint and both success kinds were seen (over both stores).
  for (const seen of [
    'GET /admin/v1/keys 200', 'POST /admin/v1/keys 201', 'GET /admin/v1/keys/{key_id} 200', 'PATCH /admin/v1/keys/{key_id} 200',
    'POST /admin/v1/keys/{key_id}/revoke 200', 'POST /admin/v1/keys/{key_id}/rotate 201', 'GET /admin/v1/plans 200', 'GET /admin/v1/agents 200',
    'POST /admin/v1/keys 400', 'POST /admin/v1/keys 401', 'POST /admin/v1/keys 403', 'GET /admin/v1/keys/{key_id} 404', 'POST /admin/v1/keys 415', 'POST /admin/v1/keys 413',
  ]) {
    expect(admin.seen, seen).toContain(seen);
  }
});

function adminConfig(tokens = true): Record<string, unknown> {
  return {
    admin: {
      host: '127.0.0.1',
      port: 0,
      tokens: tokens
        ? [
            { name: 'ops', token: ADMIN_TOKEN, role: 'admin' },
            { name: 'dash', token: VIEWER_TOKEN, role: 'viewer' },
          ]
        : [],
    },
  };
}

async function startGateway(store: 'file' | 'redis', tokens = true): Promise<TestGateway> {
  const prefix = `adm${randomUUID().slice(0, 8)}:`;
  return startTestGateway({
    agents: { support: upstream.baseUrl, sales: upstream.baseUrl },
    redisUrl: store === 'redis' ? redis.url : undefined,
    config: {
      ...adminConfig(tokens),
      plans: { starter: { windows: [{ requests: 1000, per: '1m' }] }, pro: { windows: [{ requests: 5000, per: '1m' }] }, scale: { windows: [] } },
      keys: { store, cache_ttl: '10m' },
      ...(store === 'redis' ? { redis: { prefix, command_timeout: '1s' }, audit: { admin_redis_stream: `${prefix}admin-audit` } } : {}),
    },
  });
}

function call(gw: TestGateway, method: string, path: string, options: { token?: string | null; body?: unknown; rawBody?: string; contentType?: string } = {}): Promise<CheckedAnswer> {
  const token = options.token === undefined ? ADMIN_TOKEN : options.token;
  const headers: Record<string, string> = {};
  if (token !== null) headers.authorization = `Bearer ${token}`;
  let body: string | undefined;
  if (options.rawBody !== undefined || options.body !== undefined) {
    body = options.rawBody ?? JSON.stringify(options.body);
    headers['content-type'] = options.contentType ?? 'application/json';
  }
  return admin.fetch(`${gw.adminUrl}${path}`, { method, headers, body });
}

function chat(gw: TestGateway, key: string, agent = 'support'): Promise<CheckedAnswer> {
  return chatDoc.fetch(`${gw.url}/agents/${agent}/api/v1/chat`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ message: 'hi' }),
  });
}

type KeyBody = Record<string, unknown> & { key_id: string; key?: string; status: string };

async function create(gw: TestGateway, extra: Record<string, unknown> = {}): Promise<KeyBody> {
  const answer = await call(gw, 'POST', '/admin/v1/keys', { body: { account: 'acme', plan: 'starter', agents: ['support'], ...extra } });
  expect(answer.status, answer.text).toBe(201);
  return answer.body as KeyBody;
}

/** Polls until `check` passes or 1 s has gone by; returns the time it took. */
async function within1s(check: () => Promise<boolean>): Promise<number> {
  const started = performance.now();
  while (!(await check())) {
    if (performance.now() - started > 1_000) throw new Error('the change did not reach the request path within 1 s');
    await sleep(25);
  }
  return performance.now() - started;
}

async function keyCount(gw: TestGateway): Promise<number> {
  return (await collectKeys(gw.running.keyStore)).length;
}

describe('admin API with no admin token configured', () => {
  it('answers 404 on /admin/v1 and /dashboard, keeps /metrics, /healthz, /readyz and the documents open', async () => {
    const gw = await startGateway('file', false);
    try {
      for (const path of ['/admin/v1/keys', '/admin/v1/usage', '/dashboard/']) {
        const answer = await fetch(`${gw.adminUrl}${path}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
        expect(answer.status).toBe(404);
        expect(((await answer.json()) as { error: { type: string } }).error.type).toBe('not_found');
      }
      const notFound = await call(gw, 'POST', '/admin/v1/keys', { body: { account: 'a', plan: 'starter', agents: ['support'] } });
      expect(notFound.status).toBe(404);
      for (const path of ['/metrics', '/healthz', '/readyz']) expect((await fetch(`${gw.adminUrl}${path}`)).status).toBe(200);
      for (const name of ['admin', 'agent-chat']) {
        const answer = await fetch(`${gw.adminUrl}/openapi/${name}.json`);
        expect(answer.status).toBe(200);
        expect(answer.headers.get('content-type')).toMatch(/^application\/json/);
        expect(((await answer.json()) as { openapi: string }).openapi).toBe('3.1.0');
      }
      expect(await keyCount(gw)).toBe(0);
    } finally {
      await gw.close();
    }
  });
});

describe.each(['file', 'redis'] as const)('admin keys API (%s store)', (store) => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway(store);
  });
  afterAll(async () => {
    await gw?.close();
  });

  it('authenticates: 401 without or with a wrong token (WWW-Authenticate), 403 for a viewer writing; viewers read', async () => {
    const missing = await call(gw, 'POST', '/admin/v1/keys', { token: null, body: { account: 'acme', plan: 'starter', agents: ['support'] } });
    expect([missing.status, (missing.body as { error: { type: string } }).error.type, missing.headers.get('www-authenticate')]).toEqual([401, 'missing_admin_token', 'Bearer']);
    const wrong = await call(gw, 'POST', '/admin/v1/keys', { token: `${ADMIN_TOKEN}x`, body: { account: 'acme', plan: 'starter', agents: ['support'] } });
    expect([wrong.status, (wrong.body as { error: { type: string } }).error.type]).toEqual([401, 'invalid_admin_token']);
    const viewerWrite = await call(gw, 'POST', '/admin/v1/keys', { token: VIEWER_TOKEN, body: { account: 'acme', plan: 'starter', agents: ['support'] } });
    expect([viewerWrite.status, (viewerWrite.body as { error: { type: string } }).error.type]).toEqual([403, 'insufficient_role']);
    expect(await keyCount(gw)).toBe(0);
    const created = await create(gw);
    for (const path of ['/admin/v1/keys', `/admin/v1/keys/${created.key_id}`, '/admin/v1/plans', '/admin/v1/agents']) {
      expect((await call(gw, 'GET', path, { token: VIEWER_TOKEN })).status).toBe(200);
    }
    for (const [method, path] of [['PATCH', `/admin/v1/keys/${created.key_id}`], ['POST', `/admin/v1/keys/${created.key_id}/revoke`], ['POST', `/admin/v1/keys/${created.key_id}/rotate`]] as const) {
      const answer = await call(gw, method, path, { token: VIEWER_TOKEN, body: {} });
      expect(answer.status).toBe(403);
    }
    expect((await call(gw, 'GET', `/admin/v1/keys/${created.key_id}`)).body).toMatchObject({ status: 'active', revoked_at: null, replaced_by: null });
  });

  it('creates a key (raw key only in the 201), shows and lists it without the key or its hash, and the key works', async () => {
    const created = await create(gw, { name: 'ci', metadata: { team: 'search' }, expires_in: '30d', limits: { windows: [{ requests: 5, per: '1m' }] } });
    expect(created.key).toMatch(ANY_KEY);
    expect(created).toMatchObject({ account: 'acme', plan: 'starter', agents: ['support'], name: 'ci', metadata: { team: 'search' }, status: 'active', limits: { windows: [{ requests: 5, per: '1m' }] } });
    expect(Date.parse(created.expires_at as string) - Date.parse(created.created_at as string)).toBe(30 * 86_400_000);
    expect((await chat(gw, created.key!)).status).toBe(200);
    const shown = await call(gw, 'GET', `/admin/v1/keys/${created.key_id}`);
    expect(shown.text).not.toMatch(ANY_KEY);
    expect(shown.text).not.toMatch(/[0-9a-f]{64}/);
    expect(shown.body).toMatchObject({ key_id: created.key_id, name: 'ci' });
    const missing = await call(gw, 'GET', '/admin/v1/keys/key_0000000000000000');
    expect([missing.status, (missing.body as { error: { type: string } }).error.type]).toEqual([404, 'key_not_found']);
  });

  it('creates a key with its own end-user limits and PATCHes them (docs/policy.md)', async () => {
    const endUser = { windows: [{ requests: 20, per: '1m' }], require: true };
    const created = await create(gw, { limits: { end_user: endUser } });
    expect(created.limits).toEqual({ end_user: endUser });
    const patched = await call(gw, 'PATCH', `/admin/v1/keys/${created.key_id}`, { body: { limits: { end_user: { windows: [{ requests: 5, per: '1m' }] } } } });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body).toMatchObject({ limits: { end_user: { windows: [{ requests: 5, per: '1m' }] } } });
  });

  it('creates a key with its own cost budget and tool quota (docs/policy.md)', async () => {
    const limits = { cost: [{ usd: 50, per: '30d' }], tool_calls: { search: [{ calls: 100, per: '1d' }] } };
    const created = await create(gw, { limits });
    expect(created.limits).toEqual(limits);
  });

  it('lists with account, agent and status filters and a cursor that walks every page once', async () => {
    const account = `list-${randomUUID().slice(0, 8)}`;
    const made: string[] = [];
    for (let i = 0; i < 5; i++) made.push((await create(gw, { account, agents: i % 2 === 0 ? ['support'] : ['sales'] })).key_id);
    await call(gw, 'POST', `/admin/v1/keys/${made[4]}/revoke`);
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const answer = await call(gw, 'GET', `/admin/v1/keys?account=${account}&limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      const page = answer.body as { data: KeyBody[]; next_cursor: string | null };
      expect(page.data.length).toBeLessThanOrEqual(2);
      seen.push(...page.data.map((k) => k.key_id));
      cursor = page.next_cursor;
      pages++;
    } while (cursor !== null);
    expect(seen).toEqual(made);
    expect(pages).toBe(3);
    const sales = (await call(gw, 'GET', `/admin/v1/keys?account=${account}&agent=sales`)).body as { data: KeyBody[] };
    expect(sales.data.map((k) => k.key_id)).toEqual([made[1], made[3]]);
    const revoked = (await call(gw, 'GET', `/admin/v1/keys?account=${account}&status=revoked`)).body as { data: KeyBody[] };
    expect(revoked.data.map((k) => k.key_id)).toEqual([made[4]]);
    const active = (await call(gw, 'GET', `/admin/v1/keys?account=${account}&status=active`)).body as { data: KeyBody[] };
    expect(active.data).toHaveLength(4);
  });

  it('updates settings; a scope change reaches the request path within 1 s; revoke is idempotent and takes effect within 1 s', async () => {
    const created = await create(gw, { agents: ['support', 'sales'] });
    const key = created.key!;
    expect((await chat(gw, key, 'sales')).status).toBe(200);
    expect((await chat(gw, key, 'sales')).status).toBe(200); // cached now
    const patched = await call(gw, 'PATCH', `/admin/v1/keys/${created.key_id}`, { body: { agents: ['support'], plan: 'pro', name: 'renamed', metadata: { env: 'prod' }, limits: null } });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body).toMatchObject({ agents: ['support'], plan: 'pro', name: 'renamed', metadata: { env: 'prod' }, limits: null });
    await within1s(async () => (await chat(gw, key, 'sales')).status === 401);
    const refused = await chat(gw, key, 'sales');
    expect((refused.body as { error: { type: string } }).error.type).toBe('agent_not_allowed');
    expect((await chat(gw, key, 'support')).status).toBe(200);
    // Expiry set in the past through PATCH: the key stops working.
    const expired = await call(gw, 'PATCH', `/admin/v1/keys/${created.key_id}`, { body: { expires_at: new Date(Date.now() - 1000).toISOString() } });
    expect((expired.body as KeyBody).status).toBe('expired');
    await within1s(async () => (await chat(gw, key, 'support')).status === 401);
    expect(((await chat(gw, key, 'support')).body as { error: { type: string } }).error.type).toBe('expired_api_key');
    await call(gw, 'PATCH', `/admin/v1/keys/${created.key_id}`, { body: { expires_at: null } });
    await within1s(async () => (await chat(gw, key, 'support')).status === 200);

    const first = await call(gw, 'POST', `/admin/v1/keys/${created.key_id}/revoke`);
    expect((first.body as KeyBody).status).toBe('revoked');
    await within1s(async () => (await chat(gw, key, 'support')).status === 401);
    const second = await call(gw, 'POST', `/admin/v1/keys/${created.key_id}/revoke`);
    expect((second.body as KeyBody).revoked_at).toBe((first.body as KeyBody).revoked_at);
  });

  it('rotates with a grace period: both keys work, then only the new one; a revoked key cannot be rotated', async () => {
    const created = await create(gw, { name: 'rotating', metadata: { a: 'b' } });
    expect((await chat(gw, created.key!)).status).toBe(200);
    const rotated = await call(gw, 'POST', `/admin/v1/keys/${created.key_id}/rotate`, { body: { grace: '1s' } });
    expect(rotated.status, rotated.text).toBe(201);
    const body = rotated.body as KeyBody & { previous: KeyBody };
    expect(body.key).toMatch(ANY_KEY);
    expect(body.key).not.toBe(created.key);
    expect(body).toMatchObject({ name: 'rotating', metadata: { a: 'b' }, replaces: created.key_id, replaced_by: null, status: 'active' });
    expect(body.previous).toMatchObject({ key_id: created.key_id, replaced_by: body.key_id, status: 'active' });
    expect((await chat(gw, body.key!)).status).toBe(200);
    expect((await chat(gw, created.key!)).status).toBe(200);
    await sleep(Math.max(0, Date.parse(body.previous.expires_at as string) - Date.now()) + 50);
    const old = await chat(gw, created.key!);
    expect([old.status, (old.body as { error: { type: string } }).error.type]).toEqual([401, 'expired_api_key']);
    expect((await chat(gw, body.key!)).status).toBe(200);
    const again = await call(gw, 'POST', `/admin/v1/keys/${created.key_id}/rotate`, { body: {} });
    expect([again.status, (again.body as { error: { param: string } }).error.param]).toEqual([400, 'key_id']);

    const revoked = await create(gw);
    await call(gw, 'POST', `/admin/v1/keys/${revoked.key_id}/revoke`);
    const before = await keyCount(gw);
    const refused = await call(gw, 'POST', `/admin/v1/keys/${revoked.key_id}/rotate`);
    expect([refused.status, (refused.body as { error: { param: string } }).error.param]).toEqual([400, 'key_id']);
    expect(await keyCount(gw)).toBe(before);
  });

  it('answers every malformed request with 400 and the field in param, and writes nothing', async () => {
    const victim = await create(gw, { name: 'unchanged' });
    const before = await keyCount(gw);
    const valid = { account: 'acme', plan: 'starter', agents: ['support'] };
    const cases: [string, string, Record<string, unknown> | string, string][] = [
      ['POST', '/admin/v1/keys', { ...valid, plan: 'gold' }, 'plan'],
      ['POST', '/admin/v1/keys', { ...valid, agents: ['nope'] }, 'agents'],
      ['POST', '/admin/v1/keys', { ...valid, agents: [] }, 'agents'],
      ['POST', '/admin/v1/keys', { ...valid, account: 'a b' }, 'account'],
      ['POST', '/admin/v1/keys', { plan: 'starter', agents: ['support'] }, 'account'],
      ['POST', '/admin/v1/keys', { ...valid, colour: 'red' }, 'colour'],
      ['POST', '/admin/v1/keys', { ...valid, expires_in: 'soon' }, 'expires_in'],
      // Issue 33: a date past what a Date holds answered 500.
      ['POST', '/admin/v1/keys', { ...valid, expires_in: '999999999d' }, 'expires_in'],
      ['POST', '/admin/v1/keys', { ...valid, expires_at: 'tomorrow' }, 'expires_at'],
      ['POST', '/admin/v1/keys', { ...valid, expires_at: '2001-01-01T00:00:00Z' }, 'expires_at'],
      ['POST', '/admin/v1/keys', { ...valid, expires_in: '1d', expires_at: '2099-01-01T00:00:00Z' }, 'expires_at'],
      ['POST', '/admin/v1/keys', { ...valid, metadata: { ok: 1 } }, 'metadata.ok'],
      ['POST', '/admin/v1/keys', { ...valid, metadata: { 'bad key': 'x' } }, 'metadata.bad key'],
      ['POST', '/admin/v1/keys', { ...valid, limits: { windows: [{ requests: 5, per: 'often' }] } }, 'limits.windows[0].per'],
      ['POST', '/admin/v1/keys', { ...valid, limits: { budget: 5 } }, 'limits.budget'],
      ['POST', '/admin/v1/keys', { ...valid, limits: { end_user: { require: 'yes' } } }, 'limits.end_user.require'],
      ['POST', '/admin/v1/keys', { ...valid, limits: { end_user: { windows: [{ requests: 0, per: '1m' }] } } }, 'limits.end_user.windows[0].requests'],
      ['POST', '/admin/v1/keys', { ...valid, limits: { cost: [{ usd: -1, per: '1d' }] } }, 'limits.cost[0].usd'],
      ['POST', '/admin/v1/keys', { ...valid, limits: { cost: [{ usd: 1, per: '91d' }] } }, 'limits.cost[0].per'],
      ['POST', '/admin/v1/keys', { ...valid, limits: { tool_calls: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`t${i}`, [{ calls: 1, per: "1d" }]])) } }, 'limits.tool_calls'],
      ['POST', '/admin/v1/keys', { ...valid, name: 'a\nb' }, 'name'],
      ['POST', '/admin/v1/keys', { ...valid, agents: 'support' }, 'agents'],
      ['PATCH', `/admin/v1/keys/${victim.key_id}`, { plan: 'gold', name: 'changed' }, 'plan'],
      ['PATCH', `/admin/v1/keys/${victim.key_id}`, { agents: ['support', 'nope'], name: 'changed' }, 'agents'],
      ['PATCH', `/admin/v1/keys/${victim.key_id}`, { account: 'other' }, 'account'],
      ['PATCH', `/admin/v1/keys/${victim.key_id}`, { expires_at: 'never' }, 'expires_at'],
      ['PATCH', '/admin/v1/keys/not-a-key', { name: 'x' }, 'key_id'],
      ['POST', `/admin/v1/keys/${victim.key_id}/rotate`, { grace: 'long' }, 'grace'],
      ['POST', `/admin/v1/keys/${victim.key_id}/rotate`, { grace: '999999999d' }, 'grace'],
      ['POST', `/admin/v1/keys/${victim.key_id}/rotate`, { grace: '1h', extra: true }, 'extra'],
      ['POST', `/admin/v1/keys/${victim.key_id}/revoke`, { reason: 'x' }, 'reason'],
    ];
    for (const [method, path, body, param] of cases) {
      const answer = await call(gw, method, path, { body });
      expect([answer.status, (answer.body as { error: { type: string; param?: string } }).error], `${method} ${path} ${JSON.stringify(body)}`).toEqual([
        400,
        expect.objectContaining({ type: 'invalid_request', param }),
      ]);
    }
    for (const [path, param] of [
      ['/admin/v1/keys?status=dormant', 'status'],
      ['/admin/v1/keys?limit=0', 'limit'],
      ['/admin/v1/keys?limit=ten', 'limit'],
      ['/admin/v1/keys?cursor=zzz', 'cursor'],
      ['/admin/v1/keys?acount=acme', 'acount'],
      ['/admin/v1/keys?account=a&account=b', 'account'],
    ] as const) {
      const answer = await call(gw, 'GET', path);
      expect([answer.status, (answer.body as { error: { param?: string } }).error.param], path).toEqual([400, param]);
    }
    const badJson = await call(gw, 'POST', '/admin/v1/keys', { rawBody: '{"account": ' });
    expect([badJson.status, (badJson.body as { error: { type: string } }).error.type]).toEqual([400, 'invalid_json']);
    const notObject = await call(gw, 'POST', '/admin/v1/keys', { rawBody: '[1,2]' });
    expect([notObject.status, (notObject.body as { error: { type: string } }).error.type]).toEqual([400, 'invalid_request']);
    const wrongType = await call(gw, 'POST', '/admin/v1/keys', { rawBody: JSON.stringify(valid), contentType: 'text/plain' });
    expect([wrongType.status, (wrongType.body as { error: { type: string } }).error.type]).toEqual([415, 'unsupported_media_type']);
    const huge = await call(gw, 'POST', '/admin/v1/keys', { body: { ...valid, name: 'x'.repeat(70_000) } });
    expect([huge.status, (huge.body as { error: { type: string } }).error.type]).toEqual([413, 'payload_too_large']);
    const wrongMethod = await fetch(`${gw.adminUrl}/admin/v1/keys/${victim.key_id}`, { method: 'DELETE', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect([wrongMethod.status, wrongMethod.headers.get('allow')]).toEqual([405, 'GET, PATCH']);

    expect(await keyCount(gw)).toBe(before);
    expect((await call(gw, 'GET', `/admin/v1/keys/${victim.key_id}`)).body).toMatchObject({ name: 'unchanged', plan: 'starter', agents: ['support'], replaced_by: null, revoked_at: null });
  });

  it('lists plans and agents from the config', async () => {
    const plans = (await call(gw, 'GET', '/admin/v1/plans')).body as { data: { name: string; windows: unknown[] }[] };
    expect(plans.data).toContainEqual({ name: 'starter', windows: [{ name: 'minute', requests: 1000, per: '1m' }], tokens: [] });
    const agents = (await call(gw, 'GET', '/admin/v1/agents')).body as { data: { id: string }[] };
    expect(agents.data.map((a) => a.id).sort()).toEqual(['sales', 'support']);
  });

  it('records every admin write in the admin audit trail with the actor and changed fields, never a key or token', async () => {
    const created = await create(gw, { name: 'audited' });
    await call(gw, 'PATCH', `/admin/v1/keys/${created.key_id}`, { body: { name: 'audited-2', plan: 'starter' } });
    await call(gw, 'POST', `/admin/v1/keys/${created.key_id}/rotate`, { body: { grace: '1h' } });
    const text = store === 'file' ? await readFile(gw.config.audit.adminFile!, 'utf8') : await readStream(gw.config.audit.adminRedisStream!);
    expect(text).not.toMatch(ANY_KEY);
    expect(text).not.toContain(ADMIN_TOKEN);
    expect(text).not.toContain(VIEWER_TOKEN);
    const entries = text.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>).filter((e) => e.key_id === created.key_id);
    expect(entries.map((e) => [e.action, e.actor, e.changed])).toEqual([
      ['key.create', 'ops', ['account', 'agents', 'name', 'plan']],
      ['key.update', 'ops', ['name']],
      ['key.rotate', 'ops', ['expires_at', 'replaced_by']],
    ]);
    for (const entry of entries) {
      expect(entry.request_id).toEqual(expect.any(String));
      expect(Number.isNaN(Date.parse(entry.ts as string))).toBe(false);
    }
    expect(entries[2]!.new_key_id).toMatch(/^key_/);
  });

  async function readStream(streamKey: string): Promise<string> {
    const client = createRedisClient({ url: redis.url, prefix: '', commandTimeoutMs: 1000 }, silentLogger, 'test-reader');
    try {
      await new Promise((resolve) => client.once('ready', resolve));
      const entries = (await client.xrange(streamKey, '-', '+')) as [string, string[]][];
      return entries.map(([, fields]) => fields[1]).join('\n');
    } finally {
      client.disconnect();
    }
  }
});
