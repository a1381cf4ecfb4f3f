// The MCP front door on one gateway (docs/mcp.md), with the official SDK on both sides: an SDK
// client through /mcp/{server} to an SDK server. Scopes (tools/list filtered, calls outside
// answered as unknown tools and never forwarded), the server's credentials never the client's,
// streams (progress as it is sent, a server-to-client request answered), sessions (DELETE, a
// lost upstream session is 404), limits (429 with a JSON-RPC body), audit, and bad input.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startTestMcpServer, type TestMcpServer } from '../helpers/mcp-servers.js';
import { waitFor } from '../helpers/wait.js';

const UPSTREAM_TOKEN = 'upstream-secret-token-7f3a';
let mcp: TestMcpServer;
let gateway: TestGateway;
let key: string;

beforeAll(async () => {
  mcp = await startTestMcpServer();
  gateway = await startTestGateway({
    agents: { support: 'http://127.0.0.1:9/api/v1' },
    config: {
      plans: {
        scale: { windows: [{ requests: 100_000, per: '1m' }] },
        quota: { windows: [{ requests: 100_000, per: '1m' }], tool_calls: { files__echo: [{ calls: 2, per: '1h' }] } },
      },
      mcp_servers: {
        files: { upstream: mcp.url, timeout: '20s', headers: { Authorization: `Bearer ${UPSTREAM_TOKEN}` }, tools: ['echo', 'secret', 'fails', 'progress', 'ask', 'wait'], prompts: ['greeting', 'hidden'] },
      },
      mcp: { allowed_origins: ['https://app.example.com'], max_body: 4096 },
    },
  });
  key = (await gateway.createKey({ mcp: { files: ['echo', 'add', 'fails', 'progress', 'ask', 'wait', 'greeting'] } })).rawKey;
}, 60_000);

afterAll(async () => {
  await gateway?.close();
  await mcp?.close();
});

async function connect(rawKey = key, capabilities: Record<string, unknown> = {}): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const client = new Client({ name: 'test-client', version: '1.0.0' }, { capabilities });
  const transport = new StreamableHTTPClientTransport(new URL(`${gateway.url}/mcp/files`), { requestInit: { headers: { authorization: `Bearer ${rawKey}` } } });
  await client.connect(transport);
  return { client, transport };
}

/** A raw POST to the front door. */
function post(body: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${gateway.url}/mcp/files`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body,
  });
}

describe('MCP front door: scopes', () => {
  it('tools/list shows only the tools inside both the key scope and the allow-list', async () => {
    const { client } = await connect();
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(['ask', 'echo', 'fails', 'progress', 'wait']);
    const { prompts } = await client.listPrompts();
    expect(prompts.map((prompt) => prompt.name)).toEqual(['greeting']);
    await client.close();
  });

  it('a call outside the scope is -32602 as for an unknown tool and never reaches the server', async () => {
    const { client } = await connect();
    const before = mcp.called.length;
    await expect(client.callTool({ name: 'secret', arguments: {} })).rejects.toMatchObject({ code: -32602 });
    // In the key's scope but not the server's allow-list: the same answer.
    await expect(client.callTool({ name: 'add', arguments: { a: 1, b: 2 } })).rejects.toMatchObject({ code: -32602 });
    await expect(client.getPrompt({ name: 'hidden' })).rejects.toMatchObject({ code: -32602 });
    expect(mcp.called.slice(before)).toEqual([]);
    const answer = await client.callTool({ name: 'echo', arguments: { text: 'hi' } });
    expect(answer.content).toEqual([{ type: 'text', text: 'hi' }]);
    expect(mcp.called.slice(before)).toEqual(['echo']);
    await client.close();
  });

  it('the server gets its configured credentials, never the client key', async () => {
    const { client } = await connect();
    await client.callTool({ name: 'echo', arguments: { text: 'x' } });
    const last = mcp.seen.at(-1)!;
    expect(last.headers.authorization).toBe(`Bearer ${UPSTREAM_TOKEN}`);
    expect(mcp.seen.some((request) => request.headers.authorization?.includes(key))).toBe(false);
    await client.close();
  });

  it('a key without the server in its scope is 403 key_not_allowed; a bad key 401', async () => {
    const other = (await gateway.createKey({ mcp: { git: ['*'] } })).rawKey;
    const forbidden = await post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }), { authorization: `Bearer ${other}` });
    expect(forbidden.status).toBe(403);
    expect(((await forbidden.json()) as { error: { type: string } }).error.type).toBe('key_not_allowed');
    const noScope = (await gateway.createKey({})).rawKey;
    expect((await post('{}', { authorization: `Bearer ${noScope}` })).status).toBe(403);
    const bad = await post('{}', { authorization: 'Bearer ha_nonsense' });
    expect(bad.status).toBe(401);
  });

  it('a browser Origin not in mcp.allowed_origins is 403; a listed one passes', async () => {
    const refused = await post('{}', { origin: 'https://evil.example' });
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { error: { type: string } }).error.type).toBe('origin_not_allowed');
    const init = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
    const allowed = await post(init, { origin: 'https://app.example.com' });
    expect(allowed.status).toBe(200);
    await allowed.text();
  });
});

describe('MCP front door: streams and sessions', () => {
  it('relays progress notifications and answers a server-to-client request (elicitation) through the same session', async () => {
    const { client } = await connect(key, { elicitation: {} });
    client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { name: 'Ada' } }));
    const progress: number[] = [];
    const done = await client.callTool({ name: 'progress', arguments: { steps: 3 } }, undefined, { onprogress: (p) => progress.push(p.progress) });
    expect(done.content).toEqual([{ type: 'text', text: 'done 3' }]);
    expect(progress).toEqual([1, 2, 3]);
    const asked = await client.callTool({ name: 'ask', arguments: {} });
    expect(asked.content).toEqual([{ type: 'text', text: 'hello Ada' }]);
    await client.close();
  });

  it('issues its own session id, not the server one; DELETE ends both sides', async () => {
    const { client, transport } = await connect();
    const id = transport.sessionId!;
    expect(id).toMatch(/^[A-Za-z0-9_-]{32}$/);
    const upstreamIds = new Set(mcp.seen.map((request) => request.headers['mcp-session-id']).filter(Boolean));
    expect(upstreamIds.has(id)).toBe(false);
    const sessionsBefore = mcp.sessions();
    await transport.terminateSession();
    await waitFor('the upstream session ended', () => mcp.sessions() < sessionsBefore, 10_000);
    const after = await post(JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'ping' }), { 'mcp-session-id': id, 'mcp-protocol-version': '2025-06-18' });
    expect(after.status).toBe(404);
    await client.close();
  });

  it('a session lost upstream is 404, and the client can initialize again', async () => {
    const { client, transport } = await connect();
    const id = transport.sessionId!;
    mcp.forgetSessions();
    const lost = await post(JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'ping' }), { 'mcp-session-id': id, 'mcp-protocol-version': '2025-06-18' });
    expect(lost.status).toBe(404);
    // The gateway's session went with it.
    const again = await post(JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'ping' }), { 'mcp-session-id': id, 'mcp-protocol-version': '2025-06-18' });
    expect(again.status).toBe(404);
    await client.close().catch(() => undefined);
    const fresh = await connect();
    expect((await fresh.client.callTool({ name: 'echo', arguments: { text: 'back' } })).content).toEqual([{ type: 'text', text: 'back' }]);
    await fresh.client.close();
  });

  it('a session answers only the key that opened it', async () => {
    const { client, transport } = await connect();
    const other = (await gateway.createKey({ mcp: { files: ['*'] } })).rawKey;
    const stolen = await post(JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'ping' }), { authorization: `Bearer ${other}`, 'mcp-session-id': transport.sessionId!, 'mcp-protocol-version': '2025-06-18' });
    expect(stolen.status).toBe(404);
    await client.close();
  });

  it('the GET stream is relayed as an event stream, with Last-Event-ID passed to the server', async () => {
    // A raw session: the SDK client would hold the session's one GET stream itself.
    const init = await post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }));
    await init.text();
    const sessionId = init.headers.get('mcp-session-id')!;
    await (await post(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), { 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-06-18' })).text();
    const abort = new AbortController();
    const stream = await fetch(`${gateway.url}/mcp/files`, {
      method: 'GET',
      headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream', 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-06-18', 'last-event-id': 'evt-41' },
      signal: abort.signal,
    });
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toContain('text/event-stream');
    const seen = mcp.seen.filter((request) => request.method === 'GET' && request.headers['last-event-id'] === 'evt-41');
    expect(seen).toHaveLength(1);
    expect(seen[0]!.headers.authorization).toBe(`Bearer ${UPSTREAM_TOKEN}`);
    abort.abort();
    await stream.body?.cancel().catch(() => undefined);
  });

  it('on 2025-03-26 a batch is forwarded, but a tools/call inside one is 400 and never reaches the server', async () => {
    const { client, transport } = await connect();
    const headers = { 'mcp-session-id': transport.sessionId!, 'mcp-protocol-version': '2025-03-26' };
    const before = mcp.called.length;
    const smuggled = await post(JSON.stringify([{ jsonrpc: '2.0', id: 1, method: 'ping' }, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'secret', arguments: {} } }]), headers);
    expect(smuggled.status).toBe(400);
    expect(((await smuggled.json()) as { error: { code: number } }).error.code).toBe(-32600);
    expect(mcp.called.length).toBe(before);
    const seenBefore = mcp.seen.length;
    const batch = await post(JSON.stringify([{ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 1, progress: 1 } }]), headers);
    await batch.text();
    expect(mcp.seen.slice(seenBefore).some((request) => request.body.startsWith('[{'))).toBe(true);
    await client.close();
  });

  it('a client that leaves a tools/call cancels it upstream', async () => {
    const { client, transport } = await connect();
    const before = mcp.cancelled;
    // The answer's headers come as the stream starts; its body never ends until the call does.
    const response = await post(JSON.stringify({ jsonrpc: '2.0', id: 77, method: 'tools/call', params: { name: 'wait', arguments: {} } }), { 'mcp-session-id': transport.sessionId!, 'mcp-protocol-version': '2025-06-18' });
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    await waitFor('the server runs the tool', () => mcp.called.includes('wait'), 10_000);
    await response.body!.cancel();
    await waitFor('the server saw the cancellation', () => mcp.cancelled > before, 10_000);
    await client.close();
  });
});

describe('MCP front door: limits and audit', () => {
  it('a spent tool_calls quota is 429 with Retry-After, RateLimit headers and a JSON-RPC error carrying the id', async () => {
    const quotaKey = (await gateway.createKey({ plan: 'quota', mcp: { files: ['*'] } })).rawKey;
    const { client, transport } = await connect(quotaKey);
    await client.callTool({ name: 'echo', arguments: { text: '1' } });
    await client.callTool({ name: 'echo', arguments: { text: '2' } });
    const before = mcp.called.length;
    const refused = await post(JSON.stringify({ jsonrpc: '2.0', id: 'call-3', method: 'tools/call', params: { name: 'echo', arguments: { text: '3' } } }), {
      authorization: `Bearer ${quotaKey}`,
      'mcp-session-id': transport.sessionId!,
      'mcp-protocol-version': '2025-06-18',
    });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(refused.headers.get('ratelimit')).toContain('r=');
    const body = (await refused.json()) as { id: unknown; error: { code: number; data: { type: string; retry_after_ms: number } } };
    expect(body.id).toBe('call-3');
    expect(body.error.code).toBe(-32000);
    expect(body.error.data.type).toBe('tool_budget_exceeded');
    expect(body.error.data.retry_after_ms).toBeGreaterThan(0);
    expect(mcp.called.length).toBe(before);
    // Another tool of the server is not under that quota.
    expect((await client.callTool({ name: 'fails', arguments: {} })).isError).toBe(true);
    await client.close();
  });

  it('writes one audit record per tools/call, never arguments or results', async () => {
    const auditKey = await gateway.createKey({ account: 'audited', mcp: { files: ['echo', 'fails'] } });
    const { client, transport } = await connect(auditKey.rawKey);
    await client.callTool({ name: 'echo', arguments: { text: 'ARGUMENT-MARKER' } });
    await client.callTool({ name: 'fails', arguments: {} });
    await expect(client.callTool({ name: 'secret', arguments: {} })).rejects.toMatchObject({ code: -32602 });
    const path = join(gateway.dir, 'audit.jsonl');
    const records = await waitFor(
      'three audit records',
      async () => {
        const text = await readFile(path, 'utf8').catch(() => '');
        const mine = text.split('\n').filter((line) => line.includes(auditKey.keyId));
        return mine.length >= 3 ? mine : undefined;
      },
      15_000,
    );
    expect(records.join('\n')).not.toContain('ARGUMENT-MARKER');
    const parsed = records.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(parsed.map((r) => [r.route, r.mcp_server, r.tool, r.outcome, r.is_error])).toEqual([
      ['mcp', 'files', 'echo', 'ok', false],
      ['mcp', 'files', 'fails', 'ok', true],
      ['mcp', 'files', 'secret', 'tool_not_allowed', null],
    ]);
    expect(parsed[0]).toMatchObject({ account: 'audited', session_id: transport.sessionId, status: 200 });
    expect(parsed[0]!.bytes_out as number).toBeGreaterThan(0);
    await client.close();
  });
});

describe('MCP front door: bad input', () => {
  it('malformed JSON is 400 -32700; an invalid request 400 -32600; a batch on 2025-06-18 is 400; a body over max_body 413', async () => {
    const parse = await post('{"jsonrpc": "2.0", ');
    expect(parse.status).toBe(400);
    expect(((await parse.json()) as { error: { code: number } }).error.code).toBe(-32700);
    const invalid = await post(JSON.stringify({ jsonrpc: '1.0', id: 7, method: 'ping' }));
    expect(invalid.status).toBe(400);
    expect(await invalid.json()).toMatchObject({ id: 7, error: { code: -32600 } });
    const batch = await post(JSON.stringify([{ jsonrpc: '2.0', id: 1, method: 'ping' }]), { 'mcp-protocol-version': '2025-06-18' });
    expect(batch.status).toBe(400);
    expect(((await batch.json()) as { error: { code: number } }).error.code).toBe(-32600);
    const huge = await post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping', params: { pad: 'x'.repeat(10_000) } }));
    expect(huge.status).toBe(413);
    const version = await post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }), { 'mcp-protocol-version': '1999-01-01' });
    expect(version.status).toBe(400);
    const unknownServer = await fetch(`${gateway.url}/mcp/nope`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: '{}' });
    expect(unknownServer.status).toBe(404);
    const noSession = await post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }), { 'mcp-protocol-version': '2025-06-18' });
    expect(noSession.status).toBe(400);
  });
});
