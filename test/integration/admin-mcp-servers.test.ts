// GET /admin/v1/mcp/servers (docs/admin-api.md "MCP servers") on a gateway in process with real
// MCP servers made with the official SDK, reached through /mcp/{server} by the SDK's client:
// the configured servers with their upstreams (a URL's password redacted) and header names,
// never a header's value; each upstream's state (ejected after a connection failure); the tools
// a server last listed; calls, refusals and errors as this instance counted them. A viewer reads
// it; a query parameter is a 400 naming it; no mcp_servers is an empty list. Every answer is
// checked against openapi/admin.yaml.
import { randomUUID } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startTestMcpServer, type TestMcpServer } from '../helpers/mcp-servers.js';
import { freePort } from '../helpers/free-port.js';

const VIEWER_TOKEN = `view-${randomUUID()}`;
const HEADER_SECRET = `hdr-${randomUUID()}`;
const URL_PASSWORD = `pw-${randomUUID()}`;

interface ServerView {
  name: string;
  transport: string;
  upstreams: { url: string; weight: number }[];
  targets: { url: string; state: string; ejected_until: string | null }[] | null;
  header_names: string[];
  tools: string[] | null;
  prompts: string[] | null;
  listed_tools: { names: string[]; truncated: boolean; listed_at: string } | null;
  counts: { requests: number; tool_calls: number; tool_call_errors: number; tool_calls_refused: number; sessions: number; by_tool: { tool: string; calls: number; refused: number }[] } | null;
}

let files: TestMcpServer;
let flaky: TestMcpServer;
let gateway: TestGateway;
let deadPort: number;

function adminConfig() {
  return { host: '127.0.0.1', port: 0, tokens: [{ name: 'watcher', token: VIEWER_TOKEN, role: 'viewer' }] };
}

beforeAll(async () => {
  [files, flaky, deadPort] = await Promise.all([startTestMcpServer(), startTestMcpServer(), freePort()]);
  gateway = await startTestGateway({
    agents: { support: 'http://127.0.0.1:9/api/v1' },
    config: {
      admin: adminConfig(),
      mcp_servers: {
        // Names of this file's own: the counts are this process's metrics, which the test
        // workers share across files (vitest.config.ts).
        'admin-files': {
          upstream: files.url.replace('http://', `http://gw:${URL_PASSWORD}@`),
          timeout: '20s',
          headers: { Authorization: `Bearer ${HEADER_SECRET}`, 'X-Api-Key': HEADER_SECRET },
          tools: ['echo', 'secret', 'fails'],
        },
        'admin-flaky': { upstreams: [{ url: flaky.url, weight: 3 }, { url: `http://127.0.0.1:${deadPort}/mcp`, weight: 1 }], prompts: ['greeting'] },
      },
    },
  });
}, 60_000);

afterAll(async () => {
  await gateway?.close();
  await Promise.all([files?.close(), flaky?.close()]);
});

async function servers(): Promise<{ text: string; byName: Map<string, ServerView> }> {
  const answer = await fetch(`${gateway.adminUrl}/admin/v1/mcp/servers`, { headers: { authorization: `Bearer ${VIEWER_TOKEN}` } });
  expect(answer.status).toBe(200);
  const text = await answer.text();
  const body = JSON.parse(text) as { data: ServerView[] };
  return { text, byName: new Map(body.data.map((server) => [server.name, server])) };
}

async function connect(server: string, rawKey: string): Promise<Client> {
  const client = new Client({ name: 'admin-mcp-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${gateway.url}/mcp/${server}`), { requestInit: { headers: { authorization: `Bearer ${rawKey}` } } }));
  return client;
}

describe('GET /admin/v1/mcp/servers', () => {
  it('lists the configured servers for a viewer: upstreams redacted, header names only, allow-lists, nothing counted yet', async () => {
    const { text, byName } = await servers();
    expect([...byName.keys()].sort()).toEqual(['admin-files', 'admin-flaky']);
    expect(text).not.toContain(HEADER_SECRET);
    expect(text).not.toContain(URL_PASSWORD);
    const filesView = byName.get('admin-files')!;
    expect(filesView).toMatchObject({ transport: 'streamable-http', header_names: ['Authorization', 'X-Api-Key'], tools: ['echo', 'fails', 'secret'], prompts: null, listed_tools: null });
    expect(filesView.upstreams).toEqual([{ url: files.url.replace('http://', 'http://gw:***@'), weight: 1 }]);
    expect(filesView.targets).toEqual([{ url: files.url.replace('http://', 'http://gw:***@'), weight: 1, state: 'up', outstanding: 0, ejected_until: null }]);
    expect(filesView.counts).toEqual({ requests: 0, tool_calls: 0, tool_call_errors: 0, tool_calls_refused: 0, sessions: 0, by_tool: [] });
    const flakyView = byName.get('admin-flaky')!;
    expect(flakyView).toMatchObject({ header_names: [], tools: null, prompts: ['greeting'] });
    expect(flakyView.upstreams.map((u) => u.weight)).toEqual([3, 1]);
    expect(flakyView.targets!.map((t) => t.state)).toEqual(['up', 'up']);
  });

  it('shows the tools the server last listed (its whole list), and the calls made and refused through /mcp/{server}', async () => {
    const { rawKey } = await gateway.createKey({ mcp: { 'admin-files': ['echo'] } });
    const client = await connect('admin-files', rawKey);
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(['echo']);
    await client.callTool({ name: 'echo', arguments: { text: 'one' } });
    await client.callTool({ name: 'echo', arguments: { text: 'two' } });
    await expect(client.callTool({ name: 'secret', arguments: {} })).rejects.toMatchObject({ code: -32602 });
    const { text, byName } = await servers();
    expect(text).not.toContain(HEADER_SECRET);
    const view = byName.get('admin-files')!;
    // Everything the server listed, not only what the key may see.
    expect([...view.listed_tools!.names].sort()).toEqual(['add', 'ask', 'echo', 'fails', 'progress', 'roots_later', 'sample', 'secret', 'wait']);
    expect(view.listed_tools!.truncated).toBe(false);
    expect(Number.isNaN(Date.parse(view.listed_tools!.listed_at))).toBe(false);
    expect(view.counts).toMatchObject({ tool_calls: 2, tool_calls_refused: 1, tool_call_errors: 0, sessions: 1 });
    expect(view.counts!.requests).toBeGreaterThanOrEqual(5); // initialize, initialized, tools/list and three calls
    expect(view.counts!.by_tool).toEqual([
      { tool: 'echo', calls: 2, refused: 0 },
      { tool: 'secret', calls: 0, refused: 1 },
    ]);
    // The other server's counts are its own.
    expect(byName.get('admin-flaky')!.counts).toMatchObject({ requests: 0, tool_calls: 0 });
    await client.close();
  });

  it('counts a call whose server is gone as an error, and shows the upstream ejected', async () => {
    const { rawKey } = await gateway.createKey({ mcp: { 'admin-flaky': ['*'] } });
    // The dead upstream (weight 1) may be picked first: it refuses the connection, is ejected,
    // and the next initialize goes to the live one.
    let client: Client | undefined;
    for (let attempt = 0; client === undefined && attempt < 20; attempt++) client = await connect('admin-flaky', rawKey).catch(() => undefined);
    expect(client).toBeDefined();
    await client!.callTool({ name: 'echo', arguments: { text: 'up' } });
    await flaky.close();
    await expect(client!.callTool({ name: 'echo', arguments: { text: 'down' } })).rejects.toThrow();
    const view = (await servers()).byName.get('admin-flaky')!;
    expect(view.counts).toMatchObject({ tool_calls: 2, tool_call_errors: 1 });
    const live = view.targets!.find((t) => t.url === flaky.url)!;
    expect(live.state).toBe('ejected');
    expect(Date.parse(live.ejected_until!)).toBeGreaterThan(Date.now());
    await client!.close().catch(() => undefined);
  });

  it('refuses a query parameter (400 naming it), another method (405), and a caller without a token (401)', async () => {
    const withQuery = await fetch(`${gateway.adminUrl}/admin/v1/mcp/servers?server=files`, { headers: { authorization: `Bearer ${VIEWER_TOKEN}` } });
    expect(withQuery.status).toBe(400);
    expect(((await withQuery.json()) as { error: { type: string; param: string } }).error).toMatchObject({ type: 'invalid_request', param: 'server' });
    const post = await fetch(`${gateway.adminUrl}/admin/v1/mcp/servers`, { method: 'POST', headers: { authorization: `Bearer ${VIEWER_TOKEN}`, 'content-type': 'application/json' }, body: '{}' });
    expect([post.status, post.headers.get('allow')]).toEqual([405, 'GET']);
    const anonymous = await fetch(`${gateway.adminUrl}/admin/v1/mcp/servers`);
    expect(anonymous.status).toBe(401);
  });
});

describe('GET /admin/v1/mcp/servers without mcp_servers', () => {
  it('is an empty list', async () => {
    const plain = await startTestGateway({ agents: { support: 'http://127.0.0.1:9/api/v1' }, config: { admin: adminConfig() } });
    try {
      const answer = await fetch(`${plain.adminUrl}/admin/v1/mcp/servers`, { headers: { authorization: `Bearer ${VIEWER_TOKEN}` } });
      expect(answer.status).toBe(200);
      expect(await answer.json()).toEqual({ data: [] });
    } finally {
      await plain.close();
    }
  });
});
