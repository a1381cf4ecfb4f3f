// MCP sessions across two gateway PROCESSES sharing one Redis (docs/mcp.md "Sessions across
// instances"): the official SDK client opens a session through instance A, then 1,000
// tools/call alternate between A and B on that session with no error; DELETE through B ends
// it for both. The key is made through A's admin API with its `mcp` scope. A tool-call quota
// holds exactly across both under concurrent calls: each call is counted by its own admission
// (decision 0117), so no two calls can both take its last unit.
import { randomUUID } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSharedRedisGateways, type SharedRedisGateways } from '../helpers/shared-redis-gateways.js';
import { defaultHandler } from '../helpers/fake-upstream.js';
import { startTestMcpServer, type TestMcpServer } from '../helpers/mcp-servers.js';

const ADMIN_TOKEN = `adm-${randomUUID()}`;
const CALLS = 1_000;
const QUOTA = 25;
let mcp: TestMcpServer;
let fixture: SharedRedisGateways;

beforeAll(async () => {
  mcp = await startTestMcpServer();
  fixture = await startSharedRedisGateways({
    prefix: 'mcpsp:',
    plans: {
      pro: { windows: [{ requests: 100_000, per: '1m' }] },
      quota: { windows: [{ requests: 100_000, per: '1m' }], tool_calls: { files__echo: [{ calls: QUOTA, per: '1h' }] } },
    },
    upstream: defaultHandler,
    connections: 8,
    extraConfig: {
      admin: { tokens: [{ name: 'ops', token: ADMIN_TOKEN, role: 'admin' }] },
      mcp_servers: { files: { upstream: mcp.url, timeout: '30s' } },
    },
  });
}, 90_000);

afterAll(async () => {
  await fixture?.close();
  await mcp?.close();
});

describe('MCP sessions on two gateway processes sharing one Redis', () => {
  it(`a session started on A serves ${CALLS} calls alternating between A and B with no error, and DELETE on B ends it`, async () => {
    const [a, b] = fixture.gateways as [(typeof fixture.gateways)[0], (typeof fixture.gateways)[0]];
    const created = await fetch(`${a.adminUrl}/admin/v1/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ account: 'shop', plan: 'pro', agents: ['support'], mcp: { files: ['add', 'echo'] } }),
    });
    expect(created.status).toBe(201);
    const body = (await created.json()) as { key: string; mcp: unknown };
    expect(body.mcp).toEqual({ files: ['add', 'echo'] });

    // Every request of the SDK's transport goes to A or B in turn: the URL is A's, the fetch picks the origin.
    const served = { a: 0, b: 0 };
    let turn = 0;
    const alternating = (url: string | URL, init?: RequestInit): Promise<Response> => {
      const useB = turn++ % 2 === 1;
      served[useB ? 'b' : 'a'] += 1;
      return fetch(String(url).replace(a.url, useB ? b.url : a.url), init);
    };
    const client = new Client({ name: 'two-instances', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(`${a.url}/mcp/files`), { fetch: alternating, requestInit: { headers: { authorization: `Bearer ${body.key}` } } });
    await client.connect(transport);
    let errors = 0;
    for (let i = 0; i < CALLS; i++) {
      const answer = await client.callTool({ name: 'add', arguments: { a: i, b: 1 } }).catch(() => undefined);
      const text = (answer?.content as { text?: string }[] | undefined)?.[0]?.text;
      if (text !== String(i + 1)) errors += 1;
    }
    expect(errors).toBe(0);
    expect(served.a).toBeGreaterThanOrEqual(CALLS / 2);
    expect(served.b).toBeGreaterThanOrEqual(CALLS / 2);
    // One upstream session served them all.
    const upstreamSessions = new Set(mcp.seen.filter((r) => r.body.includes('"tools/call"')).map((r) => r.headers['mcp-session-id']));
    expect(upstreamSessions.size).toBe(1);

    const sessionId = transport.sessionId!;
    const ended = await fetch(`${b.url}/mcp/files`, { method: 'DELETE', headers: { authorization: `Bearer ${body.key}`, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-06-18' } });
    expect(ended.status).toBe(200);
    const afterOnA = await fetch(`${a.url}/mcp/files`, {
      method: 'POST',
      headers: { authorization: `Bearer ${body.key}`, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-06-18', 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    });
    expect(afterOnA.status).toBe(404);
    await client.close().catch(() => undefined);
  }, 300_000);

  it(`${QUOTA * 3} concurrent calls on one session, through A and B at once, spend a quota of ${QUOTA} exactly: ${QUOTA} forwarded, the rest 429`, async () => {
    const [a, b] = fixture.gateways as [(typeof fixture.gateways)[0], (typeof fixture.gateways)[0]];
    const created = await fetch(`${a.adminUrl}/admin/v1/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ account: 'quota-shop', plan: 'quota', agents: ['support'], mcp: { files: ['echo'] } }),
    });
    expect(created.status).toBe(201);
    const { key } = (await created.json()) as { key: string };
    const client = new Client({ name: 'quota', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(`${a.url}/mcp/files`), { requestInit: { headers: { authorization: `Bearer ${key}` } } });
    await client.connect(transport);
    const headers = { authorization: `Bearer ${key}`, 'mcp-session-id': transport.sessionId!, 'mcp-protocol-version': '2025-06-18', 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const echoesBefore = mcp.called.filter((tool) => tool === 'echo').length;
    const answers = await Promise.all(
      Array.from({ length: QUOTA * 3 }, async (_, i) => {
        const res = await fetch(`${i % 2 === 0 ? a.url : b.url}/mcp/files`, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'echo', arguments: { text: `call-${i}` } } }) });
        const text = await res.text();
        return { status: res.status, text };
      }),
    );
    const forwarded = answers.filter((answer) => answer.status === 200);
    expect(forwarded.length).toBe(QUOTA);
    for (const answer of forwarded) expect(answer.text).toMatch(/call-\d+/);
    const refused = answers.filter((answer) => answer.status === 429);
    expect(refused.length).toBe(QUOTA * 2);
    for (const answer of refused) expect(answer.text).toContain('tool_budget_exceeded');
    expect(mcp.called.filter((tool) => tool === 'echo').length - echoesBefore).toBe(QUOTA);
    await client.close().catch(() => undefined);
  }, 120_000);
});
