// A2A agents behind the gateway (docs/a2a.md), against real A2A servers built with the
// official SDK (@a2a-js/sdk): both routes, A2A 1.0 and 0.3, the session mapping, a task that
// fails, one that asks for input, cancellation on the client's disconnect, limits, token
// budgets from the agent's usage metadata, and the audit record.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startA2aServer, type TestA2aServer } from '../helpers/a2a-servers.js';
import { readAuditFile } from '../helpers/audit-records.js';
import { postChat, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { openSse } from '../helpers/sse-client.js';
import { waitFor } from '../helpers/wait.js';
import { metricsText, parseMetrics, sumSamples } from '../helpers/metrics-text.js';
import { refusingPort } from '../helpers/free-port.js';

const TOKENS = 12;
const ADMIN_TOKEN = 'adm-a2a-test-token-0123456789';
const PLANS = {
  scale: { windows: [] },
  twice: { windows: [{ requests: 2, per: '1m' }] },
  budget: { tokens: [{ tokens: 20, per: '1h' }] },
  perUser: { windows: [{ requests: 100, per: '1m' }], end_user: { windows: [{ requests: 2, per: '1m' }] } },
};

let servers: Record<'streaming' | 'plain' | 'failing' | 'input' | 'endless' | 'legacy', TestA2aServer>;
let gateway: TestGateway;
let key: string;
let downPort: number;

const chat = (agent: string): string => `/agents/${agent}/api/v1/chat`;
const stream = (agent: string): string => `/agents/${agent}/api/v1/chat/stream`;

beforeAll(async () => {
  const metadata = { model: 'sdk-model', tokens_used: TOKENS };
  const [streaming, plain, failing, input, endless, legacy] = await Promise.all([
    startA2aServer({ kind: 'streaming', metadata }),
    startA2aServer({ kind: 'plain', metadata }),
    startA2aServer({ kind: 'failing' }),
    startA2aServer({ kind: 'input' }),
    startA2aServer({ kind: 'endless' }),
    startA2aServer({ kind: 'streaming', version: '0.3', metadata }),
  ]);
  servers = { streaming, plain, failing, input, endless, legacy };
  downPort = await refusingPort();
  const a2a = (url: string): Record<string, unknown> => ({ protocol: 'a2a', upstream: url });
  gateway = await startTestGateway({
    agents: {
      streaming: a2a(streaming.url),
      plain: a2a(plain.url),
      failing: a2a(failing.url),
      input: a2a(input.url),
      endless: a2a(endless.url),
      legacy: a2a(legacy.url),
      down: a2a(`http://127.0.0.1:${downPort}/a2a/jsonrpc`),
      // Two upstreams, one refusing connections: never-sent requests go to the other.
      pair: { protocol: 'a2a', upstreams: [{ url: plain.url }, { url: `http://127.0.0.1:${downPort}/a2a/jsonrpc` }] },
    },
    config: { plans: PLANS, admin: { host: '127.0.0.1', port: 0, tokens: [{ name: 'ops', token: ADMIN_TOKEN, role: 'viewer' }] } },
  });
  key = (await gateway.createKey()).rawKey;
});

afterAll(async () => {
  await gateway?.close();
  await Promise.all(Object.values(servers ?? {}).map((server) => server.close()));
});

interface ChatAnswer {
  response: string;
  metadata: { model: string | null; tokens_used: number | null };
  a2a: { task_id: string | null; context_id: string | null; state: string | null };
}

describe('/chat on an A2A agent', () => {
  it('answers a task with its artifacts joined, the model and tokens from its metadata', async () => {
    const res = await postChat(gateway.url, chat('streaming'), key, { message: 'hi there' });
    expect(res.status).toBe(200);
    const body = (await res.json()) as ChatAnswer;
    expect(body.response).toBe('Hello, hi there');
    expect(body.metadata).toMatchObject({ model: 'sdk-model', tokens_used: TOKENS });
    expect(body.a2a.state).toBe('completed');
  });

  it('answers a Message with its text, and speaks A2A 0.3 to an agent whose card declares it', async () => {
    const plain = (await (await postChat(gateway.url, chat('plain'), key, { message: 'ping' })).json()) as ChatAnswer;
    expect(plain.response).toBe('echo: ping');
    expect(plain.a2a.task_id).toBeNull();
    const legacy = await postChat(gateway.url, chat('legacy'), key, { message: 'old' });
    expect(legacy.status).toBe(200);
    expect(((await legacy.json()) as ChatAnswer).response).toBe('Hello, old');
  });

  it('maps session_id to the contextId, user_id and the sampling fields to message metadata', async () => {
    const server = servers.plain;
    const before = server.received.length;
    const body = { message: 'one', context: { session_id: 'sess-42', user_id: 'user-7' }, temperature: 0.5, max_tokens: 64, tools: ['search'] };
    await (await postChat(gateway.url, chat('plain'), key, body)).text();
    await (await postChat(gateway.url, chat('plain'), key, { ...body, message: 'two' })).text();
    const [first, second] = server.received.slice(before);
    expect([first?.contextId, second?.contextId]).toEqual(['sess-42', 'sess-42']);
    expect(first?.metadata).toEqual({ user_id: 'user-7', tools: ['search'], temperature: 0.5, max_tokens: 64 });
    expect(first?.messageId).not.toBe(second?.messageId);
  });

  it("forwards a scoped key's tool scope as the message's metadata.tools, and refuses a tool outside it before any call", async () => {
    const server = servers.plain;
    const scoped = (await gateway.createKey({ tools: ['search', 'files'] })).rawKey;
    const before = server.received.length;
    const refused = await postChat(gateway.url, chat('plain'), scoped, { message: 'x', tools: ['calculator'] });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: { param: string } }).error.param).toBe('tools');
    expect(server.received.length).toBe(before);
    await (await postChat(gateway.url, chat('plain'), scoped, { message: 'one', context: { user_id: 'user-7' } })).text();
    const [call] = server.received.slice(before);
    expect(call?.metadata).toEqual({ user_id: 'user-7', tools: ['search', 'files'] });
  });

  it('answers a failed task with 502 agent_task_failed', async () => {
    const res = await postChat(gateway.url, chat('failing'), key, { message: 'x' });
    expect(res.status).toBe(502);
    expect(((await res.json()) as { error: { type: string } }).error.type).toBe('agent_task_failed');
  });

  it('returns the task that asks for input, and continues it with context.task_id', async () => {
    const first = (await (await postChat(gateway.url, chat('input'), key, { message: 'weather?' })).json()) as ChatAnswer;
    expect(first.response).toBe('Which city?');
    expect(first.a2a.state).toBe('input-required');
    expect(first.a2a.task_id).toEqual(expect.any(String));
    const res = await postChat(gateway.url, chat('input'), key, { message: 'Paris', context: { task_id: first.a2a.task_id } });
    await res.text();
    expect(servers.input.received.at(-1)?.taskId).toBe(first.a2a.task_id);
    const bad = await postChat(gateway.url, chat('input'), key, { message: 'Paris', context: { task_id: 42 } });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { param: string } }).error.param).toBe('context.task_id');
  });

  it('answers 503 agent_unavailable for an agent whose card could not be read, with a log line', async () => {
    const res = await postChat(gateway.url, chat('down'), key, { message: 'x' });
    expect(res.status).toBe(503);
    expect(((await res.json()) as { error: { type: string } }).error.type).toBe('agent_unavailable');
    expect(gateway.logs.join('')).toContain('A2A agent card could not be read');
  });
});

describe('/chat/stream on an A2A agent', () => {
  it('relays artifact updates as token events, then done with the tokens', async () => {
    const sse = await openSse(`${gateway.url}${stream('streaming')}`, key, { message: 'you' });
    await sse.ended;
    expect(sse.status).toBe(200);
    expect(sse.events.filter((e) => e.name === 'token').map((e) => JSON.parse(e.data).content)).toEqual(['Hello', ', ', 'you']);
    const done = sse.events.at(-1)!;
    expect(done.name).toBe('done');
    expect(JSON.parse(done.data)).toMatchObject({ tokens_used: TOKENS, model: 'sdk-model', a2a: { state: 'completed' } });
  });

  it('streams from an A2A 0.3 agent', async () => {
    const sse = await openSse(`${gateway.url}${stream('legacy')}`, key, { message: 'v03' });
    await sse.ended;
    expect(sse.events.map((e) => e.name)).toEqual(['token', 'token', 'token', 'done']);
  });

  it('answers with one token and done for an agent that does not stream', async () => {
    const sse = await openSse(`${gateway.url}${stream('plain')}`, key, { message: 'once' });
    await sse.ended;
    expect(sse.events.map((e) => [e.name, e.data.includes('echo: once')])).toEqual([
      ['token', true],
      ['done', false],
    ]);
  });

  it('ends a failed task with event: error agent_task_failed', async () => {
    const sse = await openSse(`${gateway.url}${stream('failing')}`, key, { message: 'x' });
    await sse.ended;
    const last = sse.events.at(-1)!;
    expect(last.name).toBe('error');
    expect(JSON.parse(last.data).type).toBe('agent_task_failed');
  });

  it('ends an input-required task with done naming the task', async () => {
    const sse = await openSse(`${gateway.url}${stream('input')}`, key, { message: 'weather?' });
    await sse.ended;
    const done = JSON.parse(sse.events.at(-1)!.data);
    expect(done.a2a).toMatchObject({ state: 'input-required', task_id: expect.any(String) });
  });

  it("cancels the task (the protocol's cancel method) when the client disconnects", async () => {
    const sse = await openSse(`${gateway.url}${stream('endless')}`, key, { message: 'go' });
    await waitFor('the first token', () => sse.events.length > 0, 5_000);
    sse.abort();
    const canceled = await waitFor('the cancel', () => servers.endless.canceled[0], 5_000);
    expect(canceled).toEqual(expect.any(String));
    // The agent answered the cancel: counted once, for this agent.
    const answered = await waitFor(
      'the cancel counted',
      async () => sumSamples(parseMetrics(await metricsText(gateway.adminUrl)), 'agentgw_agent_task_cancels_total', { agent: 'endless', outcome: 'answered' }) || false,
      5_000,
    );
    expect(answered).toBe(1);
  });
});

describe('the admin view of A2A agents', () => {
  it("lists an A2A agent's card and skills, and null for one whose card was not read", async () => {
    const res = await fetch(`${gateway.adminUrl}/admin/v1/agents`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    const agents = ((await res.json()) as { data: { id: string; protocol: string; a2a: unknown }[] }).data;
    const byId = new Map(agents.map((agent) => [agent.id, agent]));
    expect(byId.get('streaming')).toMatchObject({ protocol: 'a2a', a2a: { version: '1.0', streaming: true, skills: [{ id: 'echo', name: 'Echo', tags: ['test'] }] } });
    expect(byId.get('legacy')?.a2a).toMatchObject({ version: '0.3' });
    expect(byId.get('plain')?.a2a).toMatchObject({ streaming: false });
    expect(byId.get('down')).toMatchObject({ protocol: 'a2a', a2a: null });
  });
});

describe('keys, limits, budgets and audit on an A2A agent', () => {
  it("keeps a key to its agents: one not scoped to an A2A agent is refused", async () => {
    const { rawKey } = await gateway.createKey({ agents: ['plain'] });
    const res = await postChat(gateway.url, chat('streaming'), rawKey, { message: 'x' });
    expect([res.status, ((await res.json()) as { error: { type: string } }).error.type]).toEqual([401, 'agent_not_allowed']);
  });

  it('sends a request never sent to a refusing upstream to the other one', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await postChat(gateway.url, chat('pair'), key, { message: `n${i}` });
      await res.text();
      statuses.push(res.status);
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200]);
  });

  it('counts requests against the plan window', async () => {
    const { rawKey } = await gateway.createKey({ plan: 'twice' });
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await postChat(gateway.url, chat('plain'), rawKey, { message: 'x' });
      await res.text();
      statuses.push(res.status);
    }
    expect(statuses).toEqual([200, 200, 429]);
  });

  it('counts each end user (context.user_id) in its own window, on both routes', async () => {
    const { rawKey } = await gateway.createKey({ plan: 'perUser' });
    const ask = async (user: string, route: string): Promise<[number, string | null]> => {
      const res = await postChat(gateway.url, route, rawKey, { message: 'x', context: { user_id: user } });
      await res.text();
      return [res.status, res.headers.get('ratelimit-policy')];
    };
    const alice = [await ask('alice', chat('plain')), await ask('alice', stream('streaming')), await ask('alice', chat('plain'))];
    expect(alice.map(([status]) => status)).toEqual([200, 200, 429]);
    expect(alice[2]?.[1]).toContain('user-');
    // Another end user of the same key has an allowance of its own.
    expect((await ask('bob', stream('streaming')))[0]).toBe(200);
    expect((await ask('bob', chat('plain')))[0]).toBe(200);
  });

  it('charges the token budget with the tokens from the A2A usage metadata', async () => {
    const { rawKey } = await gateway.createKey({ plan: 'budget' });
    const first = await postChat(gateway.url, chat('streaming'), rawKey, { message: 'x' });
    await first.text();
    const sse = await openSse(`${gateway.url}${stream('streaming')}`, rawKey, { message: 'y' });
    await sse.ended;
    // 24 of 20 spent: the budget refuses the next request.
    const third = await waitFor(
      'the budget to refuse',
      async () => {
        const res = await postChat(gateway.url, chat('streaming'), rawKey, { message: 'z' });
        const body = await res.text();
        return res.status === 429 ? body : false;
      },
      5_000,
    );
    expect(JSON.parse(third).error.type).toBe('token_budget_exceeded');
  });

  it('writes audit records with the agent, status and tokens', async () => {
    const { rawKey, keyId } = await gateway.createKey();
    await (await postChat(gateway.url, chat('streaming'), rawKey, { message: 'audit me', context: { session_id: 's-audit', user_id: 'u-audit' } })).text();
    await (await postChat(gateway.url, chat('failing'), rawKey, { message: 'x' })).text();
    const records = await waitFor(
      'two audit records',
      async () => {
        const mine = (await readAuditFile(join(gateway.dir, 'audit.jsonl'))).filter((r) => r.key_id === keyId);
        return mine.length >= 2 ? mine : false;
      },
      5_000,
    );
    expect(records[0]).toMatchObject({ agent: 'streaming', status: 200, tokens_used: TOKENS, session_id: 's-audit', user_id: 'u-audit' });
    expect(records[0]?.outcome).toBe('ok');
    expect(records[1]).toMatchObject({ agent: 'failing', status: 502, outcome: 'error', tokens_used: null });
  });
});
