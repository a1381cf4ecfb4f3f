// stdio MCP servers behind the front door (docs/mcp.md "stdio servers"), with the official SDK
// on both sides: the server a child process the gateway starts per session (McpServer +
// StdioServerTransport, test/fixtures/mcp-stdio/sdk-server.mjs), the client the SDK's Client +
// StreamableHTTPClientTransport through /mcp/{server}. The same scopes, limits and audit as for
// a Streamable HTTP server; progress, elicitation and sampling through the child; DELETE, a
// crash and cancellation; the child's environment is not the gateway's.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateMessageRequestSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { runningChildren } from '../helpers/process-children.js';
import { waitFor } from '../helpers/wait.js';

const SERVER_SCRIPT = join(process.cwd(), 'test/fixtures/mcp-stdio/sdk-server.mjs');
const GATEWAY_SECRET = 'gateway-only-secret-5b1e';
let gateway: TestGateway;
let key: string;

beforeAll(async () => {
  // In the gateway's environment: the child must not see it.
  process.env.AGENTGW_STDIO_TEST_SECRET = GATEWAY_SECRET;
  gateway = await startTestGateway({
    agents: { support: 'http://127.0.0.1:9/api/v1' },
    config: {
      plans: {
        scale: { windows: [{ requests: 100_000, per: '1m' }] },
        quota: { windows: [{ requests: 100_000, per: '1m' }], tool_calls: { local__echo: [{ calls: 2, per: '1h' }] } },
      },
      mcp_servers: {
        local: {
          command: [process.execPath, SERVER_SCRIPT],
          timeout: '30s',
          env: { STDIO_TEST_TOKEN: 'for-the-child' },
          tools: ['echo', 'secret', 'fails', 'progress', 'ask', 'sample', 'wait', 'pid', 'env', 'called', 'cancelled', 'crash'],
          prompts: ['greeting', 'hidden'],
        },
        limited: { command: [process.execPath, SERVER_SCRIPT, '--limited'], max_sessions: 2 },
      },
    },
  });
  key = (await gateway.createKey({ mcp: { local: ['echo', 'add', 'fails', 'progress', 'ask', 'sample', 'wait', 'pid', 'env', 'called', 'cancelled', 'crash', 'greeting'], limited: ['*'] } })).rawKey;
}, 60_000);

afterAll(async () => {
  await gateway?.close();
  delete process.env.AGENTGW_STDIO_TEST_SECRET;
});

async function connect(rawKey = key, capabilities: Record<string, unknown> = {}): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const client = new Client({ name: 'stdio-test-client', version: '1.0.0' }, { capabilities });
  const transport = new StreamableHTTPClientTransport(new URL(`${gateway.url}/mcp/local`), { requestInit: { headers: { authorization: `Bearer ${rawKey}` } } });
  await client.connect(transport);
  return { client, transport };
}

function textOf(answer: unknown): string {
  return ((answer as { content?: { text?: string }[] }).content?.[0]?.text) ?? '';
}

function post(body: string, headers: Record<string, string> = {}, signal?: AbortSignal): Promise<Response> {
  return fetch(`${gateway.url}/mcp/local`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18', ...headers },
    body,
    signal,
  });
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('stdio MCP server: scopes, the child, its environment', () => {
  it('tools/list shows only the tools inside both the key scope and the allow-list; a call outside is -32602 and never reaches the child', async () => {
    const { client } = await connect();
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(['ask', 'called', 'cancelled', 'crash', 'echo', 'env', 'fails', 'pid', 'progress', 'sample', 'wait']);
    const { prompts } = await client.listPrompts();
    expect(prompts.map((prompt) => prompt.name)).toEqual(['greeting']);
    await expect(client.callTool({ name: 'secret', arguments: {} })).rejects.toMatchObject({ code: -32602 });
    await expect(client.callTool({ name: 'add', arguments: { a: 1, b: 2 } })).rejects.toMatchObject({ code: -32602 });
    await expect(client.getPrompt({ name: 'hidden' })).rejects.toMatchObject({ code: -32602 });
    expect(textOf(await client.callTool({ name: 'echo', arguments: { text: 'hi' } }))).toBe('hi');
    expect(JSON.parse(textOf(await client.callTool({ name: 'called', arguments: {} })))).toEqual(['echo', 'called']);
    await client.close();
  });

  it('one child per session, with a minimal environment plus its configured env, never the gateway environment', async () => {
    const first = await connect();
    const second = await connect();
    const pidA = Number(textOf(await first.client.callTool({ name: 'pid', arguments: {} })));
    const pidB = Number(textOf(await second.client.callTool({ name: 'pid', arguments: {} })));
    expect(pidA).toBeGreaterThan(0);
    expect(pidB).not.toBe(pidA);
    expect(pidA).not.toBe(process.pid);
    const env = JSON.parse(textOf(await first.client.callTool({ name: 'env', arguments: {} }))) as Record<string, string>;
    expect(env.STDIO_TEST_TOKEN).toBe('for-the-child');
    expect(env.PATH).toBeTruthy();
    expect(JSON.stringify(env)).not.toContain(GATEWAY_SECRET);
    expect(Object.keys(env).sort()).toEqual(Object.keys(env).filter((name) => ['PATH', 'HOME', 'LANG', 'TMPDIR', 'STDIO_TEST_TOKEN'].includes(name)).sort());
    await first.transport.terminateSession();
    await second.transport.terminateSession();
    await first.client.close();
    await second.client.close();
  });
});

describe('stdio MCP server: the aggregated /mcp', () => {
  it('leaves stdio servers out: their tools are not listed there and a call by {server}__{tool} is an unknown tool; no child is started', async () => {
    const before = runningChildren(process.pid, 'sdk-server.mjs').length;
    const client = new Client({ name: 'aggregate-client', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${gateway.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
    expect((await client.listTools()).tools).toEqual([]);
    await expect(client.callTool({ name: 'local__echo', arguments: { text: 'x' } })).rejects.toMatchObject({ code: -32602 });
    expect(runningChildren(process.pid, 'sdk-server.mjs').length).toBeLessThanOrEqual(before);
    await client.close();
  });
});

describe('stdio MCP server: streams', () => {
  it('relays progress notifications as they are sent, and elicitation and sampling round trips through the child', async () => {
    const { client } = await connect(key, { elicitation: {}, sampling: {} });
    client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { name: 'Ada' } }));
    client.setRequestHandler(CreateMessageRequestSchema, async () => ({ role: 'assistant', model: 'test-model', content: { type: 'text', text: 'hi there' } }));
    const progress: number[] = [];
    const done = await client.callTool({ name: 'progress', arguments: { steps: 3 } }, undefined, { onprogress: (p) => progress.push(p.progress) });
    expect(textOf(done)).toBe('done 3');
    expect(progress).toEqual([1, 2, 3]);
    expect(textOf(await client.callTool({ name: 'ask', arguments: {} }))).toBe('hello Ada');
    expect(textOf(await client.callTool({ name: 'sample', arguments: {} }))).toBe('model said hi there');
    await client.close();
  });

  it('answers as JSON to a client that accepts only JSON, and as SSE to one that accepts it', async () => {
    const { client, transport } = await connect();
    const headers = { 'mcp-session-id': transport.sessionId! };
    const json = await post(JSON.stringify({ jsonrpc: '2.0', id: 'j1', method: 'tools/call', params: { name: 'echo', arguments: { text: 'as json' } } }), { ...headers, accept: 'application/json' });
    expect(json.status).toBe(200);
    expect(json.headers.get('content-type')).toContain('application/json');
    expect(await json.json()).toMatchObject({ id: 'j1', result: { content: [{ type: 'text', text: 'as json' }] } });
    const sse = await post(JSON.stringify({ jsonrpc: '2.0', id: 's1', method: 'tools/call', params: { name: 'echo', arguments: { text: 'as sse' } } }), headers);
    expect(sse.headers.get('content-type')).toContain('text/event-stream');
    expect(await sse.text()).toContain('"text":"as sse"');
    await client.close();
  });

  it('forwards the client cancellation to the child, and a client that disconnects from a tools/call cancels it', async () => {
    const { client, transport } = await connect();
    const count = async () => Number(textOf(await client.callTool({ name: 'cancelled', arguments: {} })));
    // The SDK's own cancellation: notifications/cancelled from the client.
    const abort = new AbortController();
    const call = client.callTool({ name: 'wait', arguments: {} }, undefined, { signal: abort.signal });
    await waitFor('the child runs the tool', async () => JSON.parse(textOf(await client.callTool({ name: 'called', arguments: {} }))).includes('wait'), 15_000);
    abort.abort();
    await expect(call).rejects.toThrow();
    await waitFor('the child saw the first cancellation', async () => (await count()) === 1, 15_000);
    // A raw client that leaves: the gateway cancels on its behalf.
    const leave = new AbortController();
    // As JSON, the answer's headers wait for the result: the client leaves before any byte came.
    const response = post(JSON.stringify({ jsonrpc: '2.0', id: 91, method: 'tools/call', params: { name: 'wait', arguments: {} } }), { 'mcp-session-id': transport.sessionId!, accept: 'application/json' }, leave.signal);
    await waitFor('the child runs the tool again', async () => JSON.parse(textOf(await client.callTool({ name: 'called', arguments: {} }))).filter((name: string) => name === 'wait').length === 2, 15_000);
    leave.abort();
    await response.catch(() => undefined);
    await waitFor('the child saw the disconnect as a cancellation', async () => (await count()) === 2, 15_000);
    await client.close();
  });
});

describe('stdio MCP server: sessions', () => {
  it('DELETE ends the session and kills its child', async () => {
    const { client, transport } = await connect();
    const pid = Number(textOf(await client.callTool({ name: 'pid', arguments: {} })));
    expect(isRunning(pid)).toBe(true);
    const id = transport.sessionId!;
    await transport.terminateSession();
    await waitFor('the child is gone', () => !isRunning(pid), 15_000);
    const after = await post(JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'ping' }), { 'mcp-session-id': id });
    expect(after.status).toBe(404);
    await client.close();
  });

  it('a child that exits ends its session: the next request is 404 and the client can initialize again', async () => {
    const { client, transport } = await connect();
    const pid = Number(textOf(await client.callTool({ name: 'pid', arguments: {} })));
    const id = transport.sessionId!;
    const crashed = await post(JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'crash', arguments: {} } }), { 'mcp-session-id': id, accept: 'application/json' });
    expect(crashed.status).toBe(502);
    expect(await crashed.json()).toMatchObject({ id: 5, error: { code: -32603, message: "The MCP server's process exited." } });
    await waitFor('the child is gone', () => !isRunning(pid), 15_000);
    const lost = await post(JSON.stringify({ jsonrpc: '2.0', id: 6, method: 'ping' }), { 'mcp-session-id': id });
    expect(lost.status).toBe(404);
    await client.close().catch(() => undefined);
    const fresh = await connect();
    expect(textOf(await fresh.client.callTool({ name: 'echo', arguments: { text: 'back' } }))).toBe('back');
    await fresh.client.close();
  });

  it('a session answers only the key that opened it', async () => {
    const { client, transport } = await connect();
    const other = (await gateway.createKey({ mcp: { local: ['*'] } })).rawKey;
    const stolen = await post(JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'ping' }), { authorization: `Bearer ${other}`, 'mcp-session-id': transport.sessionId! });
    expect(stolen.status).toBe(404);
    await client.close();
  });

  it('a second GET stream on a session is 409; a batch is 400; a request id already in flight is 400', async () => {
    const { client, transport } = await connect();
    const headers = { 'mcp-session-id': transport.sessionId! };
    // The SDK client opens the session's GET stream after connect() returns, not before: the
    // first probe finds it open (409) or opens it itself (200, held here), and a second probe
    // while one is held must be 409. A 200 stream is never read to its end (it has none).
    const openGetStream = async (): Promise<{ status: number; close(): void }> => {
      const holder = new AbortController();
      const response = await fetch(`${gateway.url}/mcp/local`, { method: 'GET', headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream', 'mcp-protocol-version': '2025-06-18', ...headers }, signal: holder.signal });
      if (response.status === 200) return { status: 200, close: () => holder.abort() };
      await response.text();
      return { status: response.status, close: () => undefined };
    };
    const firstStream = await openGetStream();
    const secondStream = firstStream.status === 200 ? await openGetStream() : firstStream;
    expect(secondStream.status).toBe(409);
    secondStream.close();
    firstStream.close();
    const batch = await post(JSON.stringify([{ jsonrpc: '2.0', id: 1, method: 'ping' }]), { ...headers, 'mcp-protocol-version': '2025-03-26' });
    expect(batch.status).toBe(400);
    expect(await batch.json()).toMatchObject({ error: { code: -32600 } });
    const leave = new AbortController();
    const first = post(JSON.stringify({ jsonrpc: '2.0', id: 'dup', method: 'tools/call', params: { name: 'wait', arguments: {} } }), { ...headers, accept: 'application/json' }, leave.signal);
    await waitFor('the child runs the tool', async () => JSON.parse(textOf(await client.callTool({ name: 'called', arguments: {} }))).includes('wait'), 15_000);
    const duplicate = await post(JSON.stringify({ jsonrpc: '2.0', id: 'dup', method: 'ping' }), { ...headers, accept: 'application/json' });
    expect(duplicate.status).toBe(400);
    expect(await duplicate.json()).toMatchObject({ id: 'dup', error: { code: -32600 } });
    leave.abort();
    await first.catch(() => undefined);
    await client.close();
  }, 60_000);
});

describe('stdio MCP server: limits and audit', () => {
  it('beyond max_sessions live children, initialize is 503 with Retry-After and a JSON-RPC error, and nothing is spawned', async () => {
    const limited = (marker = 'limited') => runningChildren(process.pid, `--${marker}`).length;
    const init = (id: number) =>
      fetch(`${gateway.url}/mcp/limited`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }),
      });
    const first = await init(1);
    const second = await init(2);
    expect([first.status, second.status]).toEqual([200, 200]);
    await first.text();
    await second.text();
    expect(limited()).toBe(2);
    const refused = await init(3);
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('10');
    expect(await refused.json()).toMatchObject({ id: 3, error: { code: -32000, data: { type: 'mcp_sessions_exhausted', retry_after_ms: 10_000 } } });
    expect(limited()).toBe(2);
    // A session ended frees its place.
    const ended = await fetch(`${gateway.url}/mcp/limited`, { method: 'DELETE', headers: { authorization: `Bearer ${key}`, 'mcp-session-id': first.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-06-18' } });
    expect(ended.status).toBe(200);
    await waitFor('one limited child left', () => limited() === 1, 15_000);
    const again = await init(4);
    expect(again.status).toBe(200);
    await again.text();
    for (const response of [second, again]) {
      await fetch(`${gateway.url}/mcp/limited`, { method: 'DELETE', headers: { authorization: `Bearer ${key}`, 'mcp-session-id': response.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-06-18' } });
    }
    await waitFor('no limited child left', () => limited() === 0, 15_000);
  });

  it('a spent tool_calls quota is 429 with Retry-After and never reaches the child; each call is audited without arguments', async () => {
    const quotaKey = await gateway.createKey({ plan: 'quota', account: 'stdio-audited', mcp: { local: ['*'] } });
    const { client, transport } = await connect(quotaKey.rawKey);
    expect(textOf(await client.callTool({ name: 'echo', arguments: { text: 'ARGUMENT-MARKER' } }))).toBe('ARGUMENT-MARKER');
    await client.callTool({ name: 'echo', arguments: { text: '2' } });
    const refused = await post(JSON.stringify({ jsonrpc: '2.0', id: 'call-3', method: 'tools/call', params: { name: 'echo', arguments: { text: '3' } } }), {
      authorization: `Bearer ${quotaKey.rawKey}`,
      'mcp-session-id': transport.sessionId!,
    });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await refused.json()).toMatchObject({ id: 'call-3', error: { code: -32000, data: { type: 'tool_budget_exceeded' } } });
    expect(JSON.parse(textOf(await client.callTool({ name: 'called', arguments: {} })))).toEqual(['echo', 'echo', 'called']);
    expect((await client.callTool({ name: 'fails', arguments: {} })).isError).toBe(true);
    const path = join(gateway.dir, 'audit.jsonl');
    const records = await waitFor(
      'five audit records',
      async () => {
        const text = await readFile(path, 'utf8').catch(() => '');
        const mine = text.split('\n').filter((line) => line.includes(quotaKey.keyId));
        return mine.length >= 5 ? mine : undefined;
      },
      15_000,
    );
    expect(records.join('\n')).not.toContain('ARGUMENT-MARKER');
    const parsed = records.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(parsed.map((r) => [r.route, r.mcp_server, r.tool, r.outcome, r.is_error])).toEqual([
      ['mcp', 'local', 'echo', 'ok', false],
      ['mcp', 'local', 'echo', 'ok', false],
      ['mcp', 'local', 'echo', 'tool_budget_exceeded', null],
      ['mcp', 'local', 'called', 'ok', false],
      ['mcp', 'local', 'fails', 'ok', true],
    ]);
    expect(parsed[0]).toMatchObject({ account: 'stdio-audited', session_id: transport.sessionId, status: 200 });
    await client.close();
  });
});
