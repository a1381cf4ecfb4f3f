// The aggregated endpoint `/mcp` across two gateway PROCESSES sharing one Redis (docs/mcp.md "The
// aggregated endpoint"): the official SDK client opens a session through instance A, then 1,000
// tools/call alternate between A and B and between two servers on that session with no error;
// sampling requests relayed by one instance are answered through the other and still reach the
// server that asked; DELETE through B ends the session (and its upstream sessions) for both.
import { randomUUID } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateMessageRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSharedRedisGateways, type SharedRedisGateways } from '../helpers/shared-redis-gateways.js';
import { defaultHandler } from '../helpers/fake-upstream.js';
import { startTestMcpServer, type TestMcpServer } from '../helpers/mcp-servers.js';
import { waitFor } from '../helpers/wait.js';

const ADMIN_TOKEN = `adm-${randomUUID()}`;
const CALLS = 1_000;
let files: TestMcpServer;
let git: TestMcpServer;
let fixture: SharedRedisGateways;

beforeAll(async () => {
  files = await startTestMcpServer('files');
  git = await startTestMcpServer('git');
  fixture = await startSharedRedisGateways({
    prefix: 'mcpagg:',
    plans: { pro: { windows: [{ requests: 100_000, per: '1m' }] } },
    upstream: defaultHandler,
    connections: 8,
    extraConfig: {
      admin: { tokens: [{ name: 'ops', token: ADMIN_TOKEN, role: 'admin' }] },
      mcp_servers: { files: { upstream: files.url, timeout: '30s' }, git: { upstream: git.url, timeout: '30s' } },
    },
  });
}, 90_000);

afterAll(async () => {
  await fixture?.close();
  await files?.close();
  await git?.close();
});

/** tools/call bodies a server received, by the upstream session they came on. */
function callSessions(server: TestMcpServer, from: number): string[] {
  return server.seen.slice(from).filter((r) => r.body.includes('"tools/call"')).map((r) => String(r.headers['mcp-session-id']));
}

describe('/mcp on two gateway processes sharing one Redis', () => {
  it(`a session started on A serves ${CALLS} calls alternating instances and servers with no error; sampling answers cross instances; DELETE on B ends it`, async () => {
    const [a, b] = fixture.gateways as [(typeof fixture.gateways)[0], (typeof fixture.gateways)[0]];
    const created = await fetch(`${a.adminUrl}/admin/v1/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ account: 'shop', plan: 'pro', agents: ['support'], mcp: { files: ['add', 'sample'], git: ['add', 'sample'] } }),
    });
    expect(created.status).toBe(201);
    const { key } = (await created.json()) as { key: string };

    // Every request of the SDK's transport goes to A or B in turn: the URL is A's, the fetch picks the origin.
    const served = { a: 0, b: 0 };
    let turn = 0;
    const alternating = (url: string | URL, init?: RequestInit): Promise<Response> => {
      const useB = turn++ % 2 === 1;
      served[useB ? 'b' : 'a'] += 1;
      return fetch(String(url).replace(a.url, useB ? b.url : a.url), init);
    };
    const client = new Client({ name: 'two-instances', version: '1.0.0' }, { capabilities: { sampling: {} } });
    client.setRequestHandler(CreateMessageRequestSchema, async (request) => ({ model: 'm', role: 'assistant', content: { type: 'text', text: `saw ${(request.params.messages[0]!.content as { text: string }).text}` } }));
    const transport = new StreamableHTTPClientTransport(new URL(`${a.url}/mcp`), { fetch: alternating, requestInit: { headers: { authorization: `Bearer ${key}` } } });
    await client.connect(transport);
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(['files__add', 'files__sample', 'git__add', 'git__sample']);

    const seen = { files: files.seen.length, git: git.seen.length };
    let errors = 0;
    for (let i = 0; i < CALLS; i++) {
      const name = i % 4 < 2 ? 'files__add' : 'git__add';
      const answer = await client.callTool({ name, arguments: { a: i, b: 1 } }).catch(() => undefined);
      const text = (answer?.content as { text?: string }[] | undefined)?.[0]?.text;
      if (text !== String(i + 1)) errors += 1;
    }
    expect(errors).toBe(0);
    expect(served.a).toBeGreaterThanOrEqual(CALLS / 2);
    expect(served.b).toBeGreaterThanOrEqual(CALLS / 2);
    expect(callSessions(files, seen.files)).toHaveLength(CALLS / 2);
    expect(callSessions(git, seen.git)).toHaveLength(CALLS / 2);
    // After the first calls, each server's calls come on one upstream session.
    expect(new Set(callSessions(files, seen.files).slice(-400)).size).toBe(1);
    expect(new Set(callSessions(git, seen.git).slice(-400)).size).toBe(1);

    // The sampling request comes on the call's stream from one instance; the client's answer goes to the next one.
    for (let i = 0; i < 6; i++) {
      const server = i % 2 === 0 ? 'files' : 'git';
      const answer = await client.callTool({ name: `${server}__sample`, arguments: { prompt: `p${i}` } });
      expect(answer.content).toEqual([{ type: 'text', text: `${server}: saw p${i}` }]);
    }

    const sessionId = transport.sessionId!;
    const upstream = { files: files.sessions(), git: git.sessions() };
    const ended = await fetch(`${b.url}/mcp`, { method: 'DELETE', headers: { authorization: `Bearer ${key}`, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-06-18' } });
    expect(ended.status).toBe(200);
    await waitFor('the upstream sessions ended', () => files.sessions() < upstream.files && git.sessions() < upstream.git, 10_000);
    const afterOnA = await fetch(`${a.url}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-06-18', 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    });
    expect(afterOnA.status).toBe(404);
    await client.close().catch(() => undefined);
  }, 300_000);
});
