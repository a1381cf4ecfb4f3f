// The aggregated endpoint `/mcp` on one gateway (docs/mcp.md "The aggregated endpoint"), with the
// official SDK on both sides: an SDK client on /mcp, three servers behind it (two SDK servers and
// one that cannot be reached). The gateway's own initialize, the merged lists filtered by scope
// with the failing server left out, calls routed by their prefix and counted as the same call on
// /mcp/{server} (one quota, one audit record), hostile names answered as unknown tools and never
// forwarded, sampling from two servers at once reaching each its own upstream, sessions (DELETE
// ends every upstream session, a server that loses its session is reopened), and bad input.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateMessageRequestSchema, ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metrics } from '../../src/metrics/metrics.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startTestMcpServer, type TestMcpServer } from '../helpers/mcp-servers.js';
import { waitFor } from '../helpers/wait.js';

const VIEWER_TOKEN = 'viewer-token-aggregated-5e1c';
let files: TestMcpServer;
let git: TestMcpServer;
let gateway: TestGateway;
let key: string;

beforeAll(async () => {
  files = await startTestMcpServer('files');
  git = await startTestMcpServer('git');
  gateway = await startTestGateway({
    agents: { support: 'http://127.0.0.1:9/api/v1' },
    config: {
      admin: { host: '127.0.0.1', port: 0, tokens: [{ name: 'watcher', token: VIEWER_TOKEN, role: 'viewer' }] },
      plans: {
        scale: { windows: [{ requests: 100_000, per: '1m' }] },
        quota: { windows: [{ requests: 100_000, per: '1m' }], tool_calls: { files__echo: [{ calls: 2, per: '1h' }] } },
      },
      mcp_servers: {
        files: { upstream: files.url, timeout: '20s', prompts: ['greeting'] },
        git: { upstream: git.url, timeout: '20s', tools: ['echo', 'sample', 'add', 'roots_later'] },
        // Nothing listens on port 9: the server that fails.
        broken: { upstream: 'http://127.0.0.1:9/mcp', timeout: '5s' },
      },
    },
  });
  key = (await gateway.createKey({ mcp: { files: ['echo', 'add', 'sample', 'progress', 'wait', 'roots_later', 'greeting', 'hidden'], git: ['echo', 'sample', 'roots_later', 'secret'], broken: ['*'] } })).rawKey;
}, 60_000);

afterAll(async () => {
  await gateway?.close();
  await files?.close();
  await git?.close();
});

async function connect(rawKey = key, capabilities: Record<string, unknown> = {}): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const client = new Client({ name: 'aggregate-client', version: '1.0.0' }, { capabilities });
  const transport = new StreamableHTTPClientTransport(new URL(`${gateway.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${rawKey}` } } });
  await client.connect(transport);
  return { client, transport };
}

/** A raw POST to /mcp. */
function post(body: unknown, headers: Record<string, string> = {}, path = '/mcp'): Promise<Response> {
  return fetch(`${gateway.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/** A raw session on /mcp (no GET stream: the SDK client would open one). */
async function rawSession(rawKey = key): Promise<string> {
  const init = await post({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }, { authorization: `Bearer ${rawKey}` });
  expect(init.status).toBe(200);
  await init.text();
  const id = init.headers.get('mcp-session-id')!;
  const initialized = await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, { authorization: `Bearer ${rawKey}`, 'mcp-session-id': id });
  expect(initialized.status).toBe(202);
  return id;
}

function toolCalls(server: TestMcpServer): number {
  return server.seen.filter((request) => request.body.includes('"tools/call"')).length;
}

async function leftOutCount(server: string, method: string): Promise<number> {
  const { values } = await metrics.mcpRequests.get();
  return values.find((v) => v.labels.server === server && v.labels.method === method && v.labels.outcome === 'left_out')?.value ?? 0;
}

describe('/mcp: the gateway answers initialize and lists every server of the key', () => {
  it('initialize is the gateway\'s own (serverInfo, revision, tools and prompts) and opens no upstream session', async () => {
    const seen = files.seen.length + git.seen.length;
    const init = await post({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
    const body = (await init.json()) as { result: { protocolVersion: string; serverInfo: { name: string }; capabilities: Record<string, unknown> } };
    expect(body.result.protocolVersion).toBe('2025-06-18');
    expect(body.result.serverInfo.name).toBe('agent-gateway');
    expect(body.result.capabilities).toEqual({ tools: { listChanged: true }, prompts: { listChanged: true } });
    expect(init.headers.get('mcp-session-id')).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(files.seen.length + git.seen.length).toBe(seen);
    // A revision the gateway does not speak is answered with its latest.
    const other = await post({ jsonrpc: '2.0', id: 2, method: 'initialize', params: { protocolVersion: '2099-01-01', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
    expect(((await other.json()) as { result: { protocolVersion: string } }).result.protocolVersion).toBe('2025-11-25');
  });

  it('tools/list is every server\'s tools inside the scope and allow-list, prefixed; the failing server is left out and counted', async () => {
    const leftOut = await leftOutCount('broken', 'tools/list');
    const { client } = await connect();
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(['files__add', 'files__echo', 'files__progress', 'files__roots_later', 'files__sample', 'files__wait', 'git__echo', 'git__roots_later', 'git__sample']);
    expect(tools.find((tool) => tool.name === 'files__echo')?.description).toBe('Echoes its text');
    expect(await leftOutCount('broken', 'tools/list')).toBeGreaterThan(leftOut);
    expect(gateway.logs.join('')).toContain('MCP server left out of the aggregated list');
    // The MCP page's "tools it last listed" is the server's whole list, as through /mcp/{server}.
    const page = await fetch(`${gateway.adminUrl}/admin/v1/mcp/servers`, { headers: { authorization: `Bearer ${VIEWER_TOKEN}` } });
    const git = ((await page.json()) as { data: { name: string; listed_tools: { names: string[] } | null }[] }).data.find((server) => server.name === 'git')!;
    expect([...git.listed_tools!.names].sort()).toEqual(['add', 'ask', 'echo', 'fails', 'progress', 'roots_later', 'sample', 'secret', 'wait']);
    const { prompts } = await client.listPrompts();
    // files' allow-list holds greeting only: hidden is in the key's scope but not the server's.
    expect(prompts.map((prompt) => prompt.name)).toEqual(['files__greeting']);
    expect((await client.getPrompt({ name: 'files__greeting' })).messages[0]!.content).toEqual({ type: 'text', text: 'hello' });
    await client.close();
  });

  it('a cursor is -32602 (one page); ping is answered; resources are on /mcp/{server} (-32601)', async () => {
    const session = await rawSession();
    const cursor = await post({ jsonrpc: '2.0', id: 3, method: 'tools/list', params: { cursor: 'abc' } }, { 'mcp-session-id': session });
    expect(await cursor.json()).toMatchObject({ id: 3, error: { code: -32602 } });
    const ping = await post({ jsonrpc: '2.0', id: 4, method: 'ping' }, { 'mcp-session-id': session });
    expect(await ping.json()).toEqual({ jsonrpc: '2.0', id: 4, result: {} });
    const resources = await post({ jsonrpc: '2.0', id: 5, method: 'resources/list' }, { 'mcp-session-id': session });
    expect(await resources.json()).toMatchObject({ id: 5, error: { code: -32601 } });
  });
});

describe('/mcp: calls', () => {
  it('routes {server}__{tool} to that server with the prefix stripped, relaying progress as it is sent', async () => {
    const { client } = await connect();
    const filesBefore = files.called.length;
    const gitBefore = git.called.length;
    expect((await client.callTool({ name: 'files__echo', arguments: { text: 'to files' } })).content).toEqual([{ type: 'text', text: 'to files' }]);
    expect((await client.callTool({ name: 'git__echo', arguments: { text: 'to git' } })).content).toEqual([{ type: 'text', text: 'to git' }]);
    expect(files.called.slice(filesBefore)).toEqual(['echo']);
    expect(git.called.slice(gitBefore)).toEqual(['echo']);
    expect(files.seen.at(-1)!.body).toContain('"name":"echo"');
    const progress: number[] = [];
    const done = await client.callTool({ name: 'files__progress', arguments: { steps: 3 } }, undefined, { onprogress: (p) => progress.push(p.progress) });
    expect(done.content).toEqual([{ type: 'text', text: 'done 3' }]);
    expect(progress).toEqual([1, 2, 3]);
    await client.close();
  });

  it('hostile and out-of-scope names are -32602 "Unknown tool" and never reach a server', async () => {
    const { client } = await connect();
    const before = toolCalls(files) + toolCalls(git);
    const names = ['__x', 'x__', '__', 'echo', 'nope__echo', 'files__secret', 'git__add', 'git__secret', 'files__b__c', 'a__b__c', 'broken', 'FILES__echo', 'files___echo', `files__${'x'.repeat(300)}`];
    for (const name of names) {
      await expect(client.callTool({ name, arguments: {} }), name).rejects.toMatchObject({ code: -32602 });
    }
    const raw = await post({ jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'nope__echo', arguments: {} } }, { 'mcp-session-id': await rawSession() });
    const inScope = await post({ jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'files__secret', arguments: {} } }, { 'mcp-session-id': await rawSession() });
    // The same answer whether the server is outside the scope or the tool is: a scope cannot be enumerated.
    expect(await raw.json()).toEqual({ jsonrpc: '2.0', id: 9, error: { code: -32602, message: 'Unknown tool: nope__echo' } });
    expect(await inScope.json()).toEqual({ jsonrpc: '2.0', id: 9, error: { code: -32602, message: 'Unknown tool: files__secret' } });
    const notString = await post({ jsonrpc: '2.0', id: 10, method: 'tools/call', params: { name: 42 } }, { 'mcp-session-id': await rawSession() });
    expect(await notString.json()).toMatchObject({ id: 10, error: { code: -32602 } });
    await expect(client.getPrompt({ name: 'files__hidden' })).rejects.toMatchObject({ code: -32602 });
    await expect(client.getPrompt({ name: 'git__greeting' })).rejects.toMatchObject({ code: -32602 });
    expect(toolCalls(files) + toolCalls(git)).toBe(before);
    expect(files.called.includes('secret') || git.called.includes('secret')).toBe(false);
    await client.close();
  });

  it('sampling from two servers at once: each request reaches the client and each answer its own server', async () => {
    const { client } = await connect(key, { sampling: {} });
    const asked: string[] = [];
    client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
      const text = (request.params.messages[0]!.content as { text: string }).text;
      asked.push(text);
      return { model: 'test-model', role: 'assistant', content: { type: 'text', text: `model saw ${text}` } };
    });
    // Both servers number their first request 0: only the gateway's ids keep them apart.
    const [fromFiles, fromGit] = await Promise.all([
      client.callTool({ name: 'files__sample', arguments: { prompt: 'for files' } }),
      client.callTool({ name: 'git__sample', arguments: { prompt: 'for git' } }),
    ]);
    expect(fromFiles.content).toEqual([{ type: 'text', text: 'files: model saw for files' }]);
    expect(fromGit.content).toEqual([{ type: 'text', text: 'git: model saw for git' }]);
    expect(asked.sort()).toEqual(['for files', 'for git']);
    await client.close();
  });

  it('a call to a server that cannot be reached is 502 -32603 carrying its own id, also when two wait on one opening', async () => {
    const session = await rawSession();
    const call = (id: string) => post({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'broken__anything', arguments: {} } }, { 'mcp-session-id': session });
    const answers = await Promise.all([call('first'), call('second')]);
    for (const [i, answer] of answers.entries()) {
      expect(answer.status).toBe(502);
      expect(await answer.json()).toMatchObject({ id: i === 0 ? 'first' : 'second', error: { code: -32603 } });
    }
    // The session still serves the other servers.
    const ok = await post({ jsonrpc: '2.0', id: 'third', method: 'tools/call', params: { name: 'git__echo', arguments: { text: 'still here' } } }, { 'mcp-session-id': session });
    expect(await ok.text()).toContain('still here');
  });

  it('a client that leaves a tools/call through /mcp cancels it on the server that runs it', async () => {
    const session = await rawSession();
    const before = files.cancelled;
    const response = await post({ jsonrpc: '2.0', id: 77, method: 'tools/call', params: { name: 'files__wait', arguments: {} } }, { 'mcp-session-id': session });
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    await waitFor('the server runs the tool', () => files.called.includes('wait'), 10_000);
    await response.body!.cancel();
    await waitFor('the server saw the cancellation', () => files.cancelled > before, 10_000);
  });

  it('requests two servers send on their GET streams reach the client on the merged stream, and each answer its own server', async () => {
    const { client } = await connect(key, { roots: { listChanged: false } });
    client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [{ uri: 'file:///work/project', name: 'project' }] }));
    const before = { files: files.roots.length, git: git.roots.length };
    // The server's request is dropped while the gateway's GET to it is not open yet: ask until one arrives.
    await waitFor(
      'roots reached both servers',
      async () => {
        if (files.roots.length === before.files) await client.callTool({ name: 'files__roots_later', arguments: {} });
        if (git.roots.length === before.git) await client.callTool({ name: 'git__roots_later', arguments: {} });
        return files.roots.length > before.files && git.roots.length > before.git;
      },
      20_000,
    );
    expect(files.roots.slice(before.files)[0]).toBe('file:///work/project');
    expect(git.roots.slice(before.git)[0]).toBe('file:///work/project');
    await client.close();
  });

  it('a client answer with an id the gateway never issued is 400 and reaches no server', async () => {
    const session = await rawSession();
    const seen = files.seen.length + git.seen.length;
    for (const id of [0, 'mcpgw:nope:n:0', 'mcpgw:files:n:0', 'mcpgw:files:x:1', 'mcpgw:', null]) {
      const answer = await post({ jsonrpc: '2.0', id, result: {} }, { 'mcp-session-id': session });
      expect(answer.status, String(id)).toBe(400);
      await answer.text();
    }
    expect(files.seen.length + git.seen.length).toBe(seen);
  });
});

describe('/mcp: limits and audit as on /mcp/{server}', () => {
  it('a files__echo quota is one count for calls through /mcp and through /mcp/files', async () => {
    const quotaKey = (await gateway.createKey({ plan: 'quota', mcp: { files: ['*'] } })).rawKey;
    const aggregated = await connect(quotaKey);
    const perServer = new Client({ name: 'per-server', version: '1.0.0' });
    await perServer.connect(new StreamableHTTPClientTransport(new URL(`${gateway.url}/mcp/files`), { requestInit: { headers: { authorization: `Bearer ${quotaKey}` } } }));
    await aggregated.client.callTool({ name: 'files__echo', arguments: { text: '1' } });
    await perServer.callTool({ name: 'echo', arguments: { text: '2' } });
    const before = files.called.length;
    const refused = await post({ jsonrpc: '2.0', id: 'third', method: 'tools/call', params: { name: 'files__echo', arguments: { text: '3' } } }, { authorization: `Bearer ${quotaKey}`, 'mcp-session-id': aggregated.transport.sessionId! });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await refused.json()).toMatchObject({ id: 'third', error: { code: -32000, data: { type: 'tool_budget_exceeded' } } });
    // The SDK client reports the HTTP status of a refusal.
    await expect(perServer.callTool({ name: 'echo', arguments: { text: '4' } })).rejects.toMatchObject({ code: 429 });
    expect(files.called.length).toBe(before);
    // Another tool of the server is not under that quota.
    expect((await aggregated.client.callTool({ name: 'files__add', arguments: { a: 2, b: 3 } })).content).toEqual([{ type: 'text', text: '5' }]);
    await aggregated.client.close();
    await perServer.close();
  });

  it('writes the per-server audit record: mcp_server and tool split, the /mcp session, never arguments', async () => {
    const audited = await gateway.createKey({ account: 'aggregated', mcp: { files: ['echo'], git: ['echo'] } });
    const { client, transport } = await connect(audited.rawKey);
    await client.callTool({ name: 'git__echo', arguments: { text: 'ARGUMENT-MARKER' } });
    await expect(client.callTool({ name: 'files__add', arguments: { a: 1, b: 1 } })).rejects.toMatchObject({ code: -32602 });
    await expect(client.callTool({ name: 'nope__add', arguments: {} })).rejects.toMatchObject({ code: -32602 });
    const path = join(gateway.dir, 'audit.jsonl');
    const records = await waitFor(
      'two audit records',
      async () => {
        const mine = (await readFile(path, 'utf8').catch(() => '')).split('\n').filter((line) => line.includes(audited.keyId));
        return mine.length >= 2 ? mine : undefined;
      },
      15_000,
    );
    expect(records.join('\n')).not.toContain('ARGUMENT-MARKER');
    const parsed = records.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(parsed.map((r) => [r.route, r.agent, r.mcp_server, r.tool, r.outcome, r.is_error, r.session_id])).toEqual([
      ['mcp', 'mcp:git', 'git', 'echo', 'ok', false, transport.sessionId],
      ['mcp', 'mcp:files', 'files', 'add', 'tool_not_allowed', null, transport.sessionId],
    ]);
    await client.close();
  });
});

describe('/mcp: sessions', () => {
  it('DELETE ends every upstream session of the session, then the gateway\'s', async () => {
    const { client, transport } = await connect();
    await client.callTool({ name: 'files__echo', arguments: { text: 'a' } });
    await client.callTool({ name: 'git__echo', arguments: { text: 'b' } });
    const filesSessions = files.sessions();
    const gitSessions = git.sessions();
    const id = transport.sessionId!;
    await transport.terminateSession();
    await waitFor('both upstream sessions ended', () => files.sessions() < filesSessions && git.sessions() < gitSessions, 10_000);
    const after = await post({ jsonrpc: '2.0', id: 1, method: 'ping' }, { 'mcp-session-id': id });
    expect(after.status).toBe(404);
    await client.close().catch(() => undefined);
  });

  it('a server that lost its session: that call is 502 -32603, the next opens a new upstream session; the other server is untouched', async () => {
    const session = await rawSession();
    const call = (id: number, name: string) => post({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: { text: name } } }, { 'mcp-session-id': session });
    expect((await call(1, 'files__echo')).status).toBe(200);
    expect((await call(2, 'git__echo')).status).toBe(200);
    const gitSession = git.seen.at(-1)!.headers['mcp-session-id'];
    files.forgetSessions();
    const lost = await call(3, 'files__echo');
    expect(lost.status).toBe(502);
    expect(await lost.json()).toMatchObject({ id: 3, error: { code: -32603 } });
    const again = await call(4, 'files__echo');
    expect(again.status).toBe(200);
    expect(await again.text()).toContain('files__echo');
    expect((await call(5, 'git__echo')).status).toBe(200);
    expect(git.seen.at(-1)!.headers['mcp-session-id']).toBe(gitSession);
  });

  it('a session answers only its key and its endpoint; a key with no MCP server is 403', async () => {
    const session = await rawSession();
    const other = (await gateway.createKey({ mcp: { files: ['*'] } })).rawKey;
    expect((await post({ jsonrpc: '2.0', id: 1, method: 'ping' }, { authorization: `Bearer ${other}`, 'mcp-session-id': session })).status).toBe(404);
    // An aggregated session is not a per-server one, nor the other way round.
    expect((await post({ jsonrpc: '2.0', id: 1, method: 'ping' }, { 'mcp-session-id': session }, '/mcp/files')).status).toBe(404);
    const perServer = new Client({ name: 'per-server', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(`${gateway.url}/mcp/files`), { requestInit: { headers: { authorization: `Bearer ${key}` } } });
    await perServer.connect(transport);
    expect((await post({ jsonrpc: '2.0', id: 1, method: 'ping' }, { 'mcp-session-id': transport.sessionId! })).status).toBe(404);
    await perServer.close();
    const noScope = (await gateway.createKey({})).rawKey;
    const refused = await post({ jsonrpc: '2.0', id: 1, method: 'ping' }, { authorization: `Bearer ${noScope}` });
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { error: { type: string } }).error.type).toBe('key_not_allowed');
    expect((await post('{}', { authorization: 'Bearer ha_nonsense' })).status).toBe(401);
  });

  it('GET merges the servers\' streams (their GETs opened without the client\'s Last-Event-ID)', async () => {
    const session = await rawSession();
    const seen = { files: files.seen.length, git: git.seen.length };
    const abort = new AbortController();
    const stream = await fetch(`${gateway.url}/mcp`, {
      method: 'GET',
      headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream', 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18', 'last-event-id': 'evt-9' },
      signal: abort.signal,
    });
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toContain('text/event-stream');
    for (const server of [files, git]) {
      const gets = server.seen.slice(server === files ? seen.files : seen.git).filter((request) => request.method === 'GET');
      expect(gets).toHaveLength(1);
      expect(gets[0]!.headers['last-event-id']).toBeUndefined();
    }
    abort.abort();
    await stream.body?.cancel().catch(() => undefined);
  });
});

describe('/mcp: bad input', () => {
  it('bad JSON -32700, a bad message -32600, a batch 400 on any revision, a missing session 400, an unknown one 404', async () => {
    expect(await (await post('{"jsonrpc": "2.0", ')).json()).toMatchObject({ error: { code: -32700 } });
    const invalid = await post({ jsonrpc: '1.0', id: 7, method: 'ping' });
    expect(invalid.status).toBe(400);
    expect(await invalid.json()).toMatchObject({ id: 7, error: { code: -32600 } });
    const session = await rawSession();
    const batch = await post([{ jsonrpc: '2.0', id: 1, method: 'ping' }], { 'mcp-session-id': session, 'mcp-protocol-version': '2025-03-26' });
    expect(batch.status).toBe(400);
    expect(((await batch.json()) as { error: { code: number } }).error.code).toBe(-32600);
    expect((await post({ jsonrpc: '2.0', id: 1, method: 'ping' })).status).toBe(400);
    expect((await post({ jsonrpc: '2.0', id: 1, method: 'ping' }, { 'mcp-session-id': 'A'.repeat(32) })).status).toBe(404);
    const huge = await post({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: { pad: 'x'.repeat(20_000) }, clientInfo: { name: 'raw', version: '1' } } });
    expect(huge.status).toBe(400);
    expect(await huge.json()).toMatchObject({ id: 1, error: { code: -32602 } });
    // The gateway still serves.
    expect((await post({ jsonrpc: '2.0', id: 2, method: 'ping' }, { 'mcp-session-id': session })).status).toBe(200);
  });
});
