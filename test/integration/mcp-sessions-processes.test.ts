// MCP sessions across two gateway PROCESSES sharing one Redis (docs/mcp.md "Sessions across
// instances"): the official SDK client opens a session through instance A, then 1,000
// tools/call alternate between A and B on that session with no error; DELETE through B ends
// it for both. The key is made through A's admin API with its `mcp` scope.
import { randomUUID } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSharedRedisGateways, type SharedRedisGateways } from '../helpers/shared-redis-gateways.js';
import { defaultHandler } from '../helpers/fake-upstream.js';
import { startTestMcpServer, type TestMcpServer } from '../helpers/mcp-servers.js';

const ADMIN_TOKEN = `adm-${randomUUID()}`;
const CALLS = 1_000;
let mcp: TestMcpServer;
let fixture: SharedRedisGateways;

beforeAll(async () => {
  mcp = await startTestMcpServer();
  fixture = await startSharedRedisGateways({
    prefix: 'mcpsp:',
    plans: { pro: { windows: [{ requests: 100_000, per: '1m' }] } },
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
});
