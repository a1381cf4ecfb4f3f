// A hostile MCP server behind the front door (docs/mcp.md "Bad input"): huge lists, garbage,
// a stream that never ends, a server that never answers, one that refuses the gateway's
// credentials. Each is bounded and answered clearly; the gateway keeps serving; the
// server's credentials never reach the client, nor the admin API's MCP servers route.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseMetrics } from '../helpers/metrics-text.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_LISTED } from '../../src/mcp/listed-tools.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

const UPSTREAM_TOKEN = 'hostile-upstream-token-91c2';
const VIEWER_TOKEN = 'hostile-test-viewer-token-5e1f';
let hostile: Server;
let gateway: TestGateway;
let key: string;

function reply(res: ServerResponse, id: unknown, result: unknown, headers: Record<string, string> = {}): void {
  const body = JSON.stringify({ jsonrpc: '2.0', id, result });
  res.writeHead(200, { 'content-type': 'application/json', ...headers }).end(body);
}

async function readJson(req: IncomingMessage): Promise<{ id?: unknown; method?: string; params?: { name?: string } }> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as { id?: unknown; method?: string; params?: { name?: string } };
}

/** What the server does is chosen by the tool called, or by the list asked for. */
function handle(req: IncomingMessage, res: ServerResponse): void {
  void readJson(req).then((message) => {
    if (message.method === 'initialize') return reply(res, message.id, { protocolVersion: '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'hostile', version: '1' } }, { 'mcp-session-id': 'hostile-session' });
    if (message.id === undefined) return void res.writeHead(202).end();
    // A tools/list answered with a JSON-RPC error, or with a result that holds no list.
    if (message.method === 'tools/list' && message.id === 'list-error') return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: message.id, error: { code: -32603, message: 'broken' } }));
    if (message.method === 'tools/list' && message.id === 'list-garbage') return reply(res, message.id, { tools: 'not a list' });
    if (message.method === 'tools/list') {
      // 10,000 tools (about 600 KiB), and garbage entries among them.
      const tools: unknown[] = Array.from({ length: 10_000 }, (_, i) => ({ name: `tool_${i}`, inputSchema: { type: 'object' } }));
      tools.push(42, null, { name: 7 }, 'garbage');
      return reply(res, message.id, { tools });
    }
    if (message.method === 'prompts/list') {
      // Over the gateway's max_response: never ends until cut.
      res.writeHead(200, { 'content-type': 'application/json' });
      const chunk = 'x'.repeat(64 * 1024);
      const pump = () => {
        while (res.write(chunk)) if (res.destroyed) return;
        res.once('drain', pump);
      };
      pump();
      return;
    }
    switch (message.params?.name) {
      case 'garbage':
        res.writeHead(200, { 'content-type': 'text/event-stream' }).end('data: {not json\n\n\x00\x01garbage\n\n');
        return;
      case 'silent_stream':
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.flushHeaders();
        return; // never another byte
      case 'no_headers':
        return; // never answers
      case 'refuses':
        res.writeHead(401, { 'www-authenticate': `Bearer realm="${UPSTREAM_TOKEN}"`, 'content-type': 'text/plain' }).end(`bad token ${UPSTREAM_TOKEN}`);
        return;
      default:
        reply(res, message.id, { content: [{ type: 'text', text: 'ok' }] });
    }
  });
}

beforeAll(async () => {
  hostile = createServer(handle);
  await new Promise<void>((resolve) => hostile.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(hostile.address() as AddressInfo).port}/mcp`;
  gateway = await startTestGateway({
    agents: { support: 'http://127.0.0.1:9/api/v1' },
    config: {
      mcp_servers: { evil: { upstream: url, timeout: '1500ms', headers: { Authorization: `Bearer ${UPSTREAM_TOKEN}` } } },
      mcp: { max_response: 1_048_576 },
      admin: { host: '127.0.0.1', port: 0, tokens: [{ name: 'watcher', token: VIEWER_TOKEN, role: 'viewer' }] },
    },
  });
  key = (await gateway.createKey({ mcp: { evil: ['*'] } })).rawKey;
}, 60_000);

afterAll(async () => {
  await gateway?.close();
  hostile?.closeAllConnections();
  await new Promise<void>((resolve) => hostile?.close(() => resolve()));
});

async function session(): Promise<string> {
  const response = await call(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } }));
  await response.text();
  return response.headers.get('mcp-session-id')!;
}

function call(body: string, sessionId?: string, signal?: AbortSignal): Promise<Response> {
  return fetch(`${gateway.url}/mcp/evil`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18', ...(sessionId ? { 'mcp-session-id': sessionId } : {}) },
    body,
    ...(signal ? { signal } : {}),
  });
}

const toolCall = (name: string) => JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name, arguments: {} } });

describe('a hostile MCP server behind the front door', () => {
  it('a huge tools/list within max_response is filtered (garbage entries dropped) and the tool labels stay bounded', async () => {
    const id = await session();
    const response = await call(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }), id);
    expect(response.status).toBe(200);
    const body = (await response.json()) as { result: { tools: { name: string }[] } };
    expect(body.result.tools).toHaveLength(10_000);
    expect(body.result.tools.every((tool) => typeof tool.name === 'string')).toBe(true);
    for (let i = 0; i < 300; i += 1) await (await call(JSON.stringify({ jsonrpc: '2.0', id: 10 + i, method: 'tools/call', params: { name: `tool_${i}`, arguments: {} } }), id)).text();
    const metricsText = await (await fetch(`${gateway.adminUrl}/metrics`)).text();
    // This server's series (the labels are bounded per server; the registry is the test worker's, shared across files).
    const labels = new Set(parseMetrics(metricsText).filter((sample) => sample.name === 'agentgw_mcp_tool_calls_total' && sample.labels.server === 'evil').map((sample) => sample.labels.tool));
    expect(labels.has('other')).toBe(true);
    expect(labels.size).toBeLessThanOrEqual(257);
    // The admin API keeps the first MAX_LISTED names of the list and says the rest were left out.
    const route = await (await fetch(`${gateway.adminUrl}/admin/v1/mcp/servers`, { headers: { authorization: `Bearer ${VIEWER_TOKEN}` } })).text();
    expect(route).not.toContain(UPSTREAM_TOKEN);
    const evil = (JSON.parse(route) as { data: { listed_tools: { names: string[]; truncated: boolean } }[] }).data[0]!;
    expect(evil.listed_tools.names).toEqual(Array.from({ length: MAX_LISTED }, (_, i) => `tool_${i}`));
    expect(evil.listed_tools.truncated).toBe(true);
  });

  it('a tools/list answered with an error or without a list leaves the last listed tools as they were', async () => {
    const id = await session();
    const listedNames = async () => {
      const route = (await (await fetch(`${gateway.adminUrl}/admin/v1/mcp/servers`, { headers: { authorization: `Bearer ${VIEWER_TOKEN}` } })).json()) as { data: { listed_tools: { names: string[] } | null }[] };
      return route.data[0]!.listed_tools?.names.length;
    };
    await (await call(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }), id)).text();
    expect(await listedNames()).toBe(MAX_LISTED);
    for (const requestId of ['list-error', 'list-garbage']) {
      const answer = await call(JSON.stringify({ jsonrpc: '2.0', id: requestId, method: 'tools/list' }), id);
      expect(answer.status).toBe(200);
      await answer.text();
    }
    expect(await listedNames()).toBe(MAX_LISTED);
  });

  it('an answer over max_response is cut and answered 502 -32603 with the request id', async () => {
    const id = await session();
    const response = await call(JSON.stringify({ jsonrpc: '2.0', id: 'big', method: 'prompts/list' }), id);
    expect(response.status).toBe(502);
    expect(await response.json()).toMatchObject({ id: 'big', error: { code: -32603 } });
  });

  it('a server refusing the gateway credentials is 502, and nothing of its answer reaches the client', async () => {
    const id = await session();
    const response = await call(toolCall('refuses'), id);
    expect(response.status).toBe(502);
    expect(response.headers.get('www-authenticate')).toBeNull();
    const text = await response.text();
    expect(text).not.toContain(UPSTREAM_TOKEN);
    expect(JSON.parse(text)).toMatchObject({ id: 5, error: { code: -32603 } });
  });

  it('garbage in an SSE answer is relayed as sent and the gateway keeps serving', async () => {
    const id = await session();
    const response = await call(toolCall('garbage'), id);
    expect(response.status).toBe(200);
    expect(await response.text()).toContain('garbage');
    const ok = await call(toolCall('fine'), id);
    expect(await ok.json()).toMatchObject({ result: { content: [{ text: 'ok' }] } });
  });

  it('a server that never sends headers is 504 after its timeout; a stream that goes silent is cut', async () => {
    const id = await session();
    const noHeaders = await call(toolCall('no_headers'), id);
    expect(noHeaders.status).toBe(504);
    expect(await noHeaders.json()).toMatchObject({ error: { code: -32603 } });
    const silent = await call(toolCall('silent_stream'), id);
    expect(silent.status).toBe(200);
    // The body ends (cut) instead of hanging: the server's timeout is the longest silence.
    await expect(silent.text()).rejects.toThrow();
  });
});
