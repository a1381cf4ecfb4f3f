// Tool scope on keys end to end (docs/policy.md, "Tool scope on keys"; decision 0064), on the
// key file (embedded) and on Redis: the admin API sets and clears a key's scope, a request
// naming a tool outside it is refused before the runner is called, a request naming none is
// forwarded with the scope (within the agent's allow-list) as its `tools`, and hostile scopes
// are refused whole with nothing stored.
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collectKeys } from '../../src/keys/key-pages.js';
import { createRedisClient } from '../../src/redis/redis-client.js';
import { silentLogger } from '../../src/logger.js';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { postChat, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { waitFor } from '../helpers/wait.js';

const ADMIN_TOKEN = `adm-${randomUUID()}`;
const CHAT = '/agents/support/api/v1/chat';
const STREAM = '/agents/support/api/v1/chat/stream';
const ALLOW_LIST = ['search', 'calculator', 'web_search', 'files'];

let upstream: FakeUpstream;
let redis: TestRedis;

beforeAll(async () => {
  [upstream, redis] = await Promise.all([startFakeUpstream(), startRedis()]);
});

afterAll(async () => {
  await upstream?.close();
  await redis?.close();
});

async function startGateway(store: 'file' | 'redis'): Promise<TestGateway> {
  const prefix = `ts${randomUUID().slice(0, 8)}:`;
  return startTestGateway({
    agents: { support: { upstream: upstream.baseUrl, tools: ALLOW_LIST }, open: upstream.baseUrl },
    redisUrl: store === 'redis' ? redis.url : undefined,
    config: {
      admin: { host: '127.0.0.1', port: 0, tokens: [{ name: 'ops', token: ADMIN_TOKEN, role: 'admin' }] },
      plans: { pro: { windows: [{ requests: 10_000, per: '1m' }] } },
      keys: { store, cache_ttl: '10m' },
      ...(store === 'redis' ? { redis: { prefix, command_timeout: '2s' }, audit: { admin_redis_stream: `${prefix}admin-audit` } } : {}),
    },
  });
}

interface AdminAnswer {
  status: number;
  body: Record<string, unknown> & { key?: string; key_id?: string; tools?: string[] | null; error?: { type: string; param?: string; message: string } };
}

async function admin(gw: TestGateway, method: string, path: string, body?: unknown): Promise<AdminAnswer> {
  const response = await fetch(`${gw.adminUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as AdminAnswer['body'] };
}

async function createScoped(gw: TestGateway, tools: unknown, agents = ['support']): Promise<{ key: string; keyId: string }> {
  const answer = await admin(gw, 'POST', '/admin/v1/keys', { account: 'shop', plan: 'pro', agents, name: 'widget', ...(tools === undefined ? {} : { tools }) });
  expect(answer.status, JSON.stringify(answer.body)).toBe(201);
  return { key: answer.body.key!, keyId: answer.body.key_id! };
}

interface ChatAnswer {
  status: number;
  error: { type: string; param?: string; message: string } | undefined;
  /** The runner requests this chat request made (0 or 1), and the `tools` the runner was given. */
  runnerCalls: number;
  runnerTools: unknown;
}

async function chat(gw: TestGateway, key: string, body: Record<string, unknown>, path = CHAT): Promise<ChatAnswer> {
  const before = upstream.requests.length;
  const response = await postChat(gw.url, path, key, body);
  const text = await response.text();
  const seen = upstream.requests.slice(before);
  const forwarded = seen[0] === undefined ? undefined : (JSON.parse(seen[0].body.toString('utf8')) as Record<string, unknown>);
  return {
    status: response.status,
    error: response.status === 200 ? undefined : (JSON.parse(text) as { error: ChatAnswer['error'] }).error,
    runnerCalls: seen.length,
    runnerTools: forwarded === undefined ? 'not called' : 'tools' in forwarded ? forwarded.tools : 'absent',
  };
}

describe.each(['file', 'redis'] as const)('tool scope on keys (%s key store)', (store) => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway(store);
  });
  afterAll(async () => {
    await gw?.close();
  });

  it('shows the scope on the key, and a key without one reads tools: null', async () => {
    const { keyId } = await createScoped(gw, ['files', 'search']);
    expect((await admin(gw, 'GET', `/admin/v1/keys/${keyId}`)).body.tools).toEqual(['files', 'search']);
    const plain = await createScoped(gw, undefined);
    expect((await admin(gw, 'GET', `/admin/v1/keys/${plain.keyId}`)).body.tools).toBeNull();
  });

  it('refuses a request naming a tool outside the scope (400, param tools, naming it): the runner never sees it', async () => {
    const { key } = await createScoped(gw, ['search', 'calculator']);
    const refused = await chat(gw, key, { message: 'hi', tools: ['search', 'web_search'] });
    expect(refused.status).toBe(400);
    expect(refused.error).toMatchObject({ type: 'invalid_request', param: 'tools' });
    expect(refused.error!.message).toContain('"web_search"');
    expect(refused.runnerCalls).toBe(0);
    const streamed = await chat(gw, key, { message: 'hi', tools: ['files'] }, STREAM);
    expect([streamed.status, streamed.error?.param, streamed.runnerCalls]).toEqual([400, 'tools', 0]);
    // Within the scope: forwarded as sent.
    const allowed = await chat(gw, key, { message: 'hi', tools: ['calculator'] });
    expect([allowed.status, allowed.runnerCalls, allowed.runnerTools]).toEqual([200, 1, ['calculator']]);
  });

  it('forwards a request naming no tools with the scope within the allow-list, in the scope order', async () => {
    const { key } = await createScoped(gw, ['files', 'shell', 'search']);
    const json = await chat(gw, key, { message: 'hi', context: { user_id: 'u1' } });
    expect([json.status, json.runnerCalls, json.runnerTools]).toEqual([200, 1, ['files', 'search']]);
    const streamed = await chat(gw, key, { message: 'hi' }, STREAM);
    expect([streamed.status, streamed.runnerCalls, streamed.runnerTools]).toEqual([200, 1, ['files', 'search']]);
    // The rest of the body reached the runner as sent.
    const before = upstream.requests.length;
    expect((await postChat(gw.url, CHAT, key, '  {"message":"é \\u00e9","temperature":0.5}')).status).toBe(200);
    expect(upstream.requests[before]!.body.toString('utf8')).toBe('  {"tools":["files","search"],"message":"é \\u00e9","temperature":0.5}');
  });

  it('on an agent without an allow-list, forwards the whole scope; a key without a scope forwards the body unchanged', async () => {
    const scoped = await createScoped(gw, ['shell', 'search'], ['open']);
    expect((await chat(gw, scoped.key, { message: 'hi' }, '/agents/open/api/v1/chat')).runnerTools).toEqual(['shell', 'search']);
    const plain = await createScoped(gw, undefined, ['support', 'open']);
    expect((await chat(gw, plain.key, { message: 'hi' })).runnerTools).toBe('absent');
    expect((await chat(gw, plain.key, { message: 'hi', tools: ['web_search'] })).runnerTools).toEqual(['web_search']);
  });

  it('refuses hostile requests on a scoped key before the runner: many names, a huge name, on an agent without an allow-list', async () => {
    const { key } = await createScoped(gw, ['search'], ['open']);
    const many = await chat(gw, key, { message: 'hi', tools: ['search', ...Array.from({ length: 10_000 }, (_, i) => `t${i}`)] }, '/agents/open/api/v1/chat');
    expect([many.status, many.error?.param, many.runnerCalls]).toEqual([400, 'tools', 0]);
    expect(many.error!.message).toContain('"t0"');
    const huge = await chat(gw, key, { message: 'hi', tools: ['z'.repeat(100_000)] }, '/agents/open/api/v1/chat');
    expect([huge.status, huge.error?.param, huge.runnerCalls]).toEqual([400, 'tools', 0]);
    expect(huge.error!.message.length).toBeLessThan(200);
  });

  it('an empty scope allows no tool: requests naming one are refused, others get tools: []', async () => {
    const { key } = await createScoped(gw, []);
    expect((await chat(gw, key, { message: 'hi', tools: ['search'] })).status).toBe(400);
    expect((await chat(gw, key, { message: 'hi', tools: [] })).runnerTools).toEqual([]);
    expect((await chat(gw, key, { message: 'hi' })).runnerTools).toEqual([]);
  });

  it('PATCH: a list replaces the scope, null clears it, absent keeps it; the request path follows within 1 s; the admin trail names tools', async () => {
    const { key, keyId } = await createScoped(gw, ['search']);
    expect((await chat(gw, key, { message: 'hi' })).runnerTools).toEqual(['search']);
    const replaced = await admin(gw, 'PATCH', `/admin/v1/keys/${keyId}`, { tools: ['web_search', 'files'] });
    expect([replaced.status, replaced.body.tools]).toEqual([200, ['web_search', 'files']]);
    await waitFor('the new scope on the request path', async () => (await chat(gw, key, { message: 'hi', tools: ['search'] })).status === 400, 1_000, 20);
    expect((await chat(gw, key, { message: 'hi' })).runnerTools).toEqual(['web_search', 'files']);
    const renamed = await admin(gw, 'PATCH', `/admin/v1/keys/${keyId}`, { name: 'renamed' });
    expect(renamed.body.tools).toEqual(['web_search', 'files']);
    const cleared = await admin(gw, 'PATCH', `/admin/v1/keys/${keyId}`, { tools: null });
    expect([cleared.status, cleared.body.tools]).toEqual([200, null]);
    await waitFor('no scope on the request path', async () => (await chat(gw, key, { message: 'hi' })).runnerTools === 'absent', 1_000, 20);
    expect((await chat(gw, key, { message: 'hi', tools: ['search'] })).status).toBe(200);

    const text = store === 'file' ? await readFile(gw.config.audit.adminFile!, 'utf8') : await readStream(gw.config.audit.adminRedisStream!);
    const entries = text.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>).filter((e) => e.key_id === keyId);
    expect(entries.map((e) => [e.action, e.changed])).toEqual([
      ['key.create', ['account', 'agents', 'name', 'plan', 'tools']],
      ['key.update', ['tools']],
      ['key.update', ['name']],
      ['key.update', ['tools']],
    ]);
  });

  it.each([
    ['duplicates', ['search', 'files', 'search'], 'tools[2]'],
    ['a non-string', ['search', 7], 'tools[1]'],
    ['null inside', [null], 'tools[0]'],
    // Both within the admin API's 64 KiB body (a larger body is 413 payload_too_large, below).
    ['10,000 names', Array.from({ length: 10_000 }, (_, i) => i.toString(36).padStart(3, '0')), 'tools'],
    ['a huge name', ['x'.repeat(60_000)], 'tools[0]'],
    ['a 65-character name', ['y'.repeat(65)], 'tools[0]'],
    ['an empty name', [''], 'tools[0]'],
    ['a name with a space', ['web search'], 'tools[0]'],
    ['a string, not a list', 'search', 'tools'],
    ['an object', { search: true }, 'tools'],
  ])('refuses a scope with %s: 400 naming the field, nothing stored or changed', async (_what, tools, param) => {
    const before = (await collectKeys(gw.running.keyStore)).length;
    const created = await admin(gw, 'POST', '/admin/v1/keys', { account: 'shop', plan: 'pro', agents: ['support'], tools });
    expect(created.status).toBe(400);
    expect(created.body.error).toMatchObject({ type: 'invalid_request', param });
    expect(created.body.error!.message.length).toBeLessThan(300);
    expect((await collectKeys(gw.running.keyStore)).length).toBe(before);

    const { keyId } = await createScoped(gw, ['search']);
    const patched = await admin(gw, 'PATCH', `/admin/v1/keys/${keyId}`, { tools, name: 'changed' });
    expect([patched.status, patched.body.error?.param]).toEqual([400, param]);
    expect((await admin(gw, 'GET', `/admin/v1/keys/${keyId}`)).body).toMatchObject({ tools: ['search'], name: 'widget' });
  });

  it('refuses a scope past the admin body limit with 413, nothing stored', async () => {
    const before = (await collectKeys(gw.running.keyStore)).length;
    const created = await admin(gw, 'POST', '/admin/v1/keys', { account: 'shop', plan: 'pro', agents: ['support'], tools: Array.from({ length: 20_000 }, (_, i) => `tool-${i}`) });
    expect([created.status, created.body.error?.type]).toEqual([413, 'payload_too_large']);
    expect((await collectKeys(gw.running.keyStore)).length).toBe(before);
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
