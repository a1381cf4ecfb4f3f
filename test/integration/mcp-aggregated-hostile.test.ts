// Hostile and odd MCP servers behind the aggregated endpoint `/mcp` (docs/mcp.md "The
// aggregated endpoint"; decision 0103): a list over its server's share of mcp.max_response, a
// server that pages, one whose cursor never ends, one that will not speak the client's revision,
// one whose SSE event is larger than the gateway can rewrite. Each is bounded or left out; the
// list and the gateway go on serving.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

let hostile: Server;
let gateway: TestGateway;
let key: string;

interface Message {
  id?: unknown;
  method?: string;
  params?: { name?: string; cursor?: string; protocolVersion?: string };
}

async function readJson(req: IncomingMessage): Promise<Message> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Message;
}

function reply(res: ServerResponse, id: unknown, result: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(200, { 'content-type': 'application/json', ...headers }).end(JSON.stringify({ jsonrpc: '2.0', id, result }));
}

/** The server's behaviour is chosen by its path: /{kind}/mcp. */
function handle(req: IncomingMessage, res: ServerResponse): void {
  const kind = (req.url ?? '').split('/')[1];
  if (req.method === 'GET') return void res.writeHead(405).end();
  if (req.method === 'DELETE') return void res.writeHead(200).end();
  void readJson(req).then((message) => {
    if (message.method === 'initialize') {
      const revision = kind === 'oldrev' ? '2024-11-05' : message.params?.protocolVersion;
      return reply(res, message.id, { protocolVersion: revision, capabilities: { tools: {} }, serverInfo: { name: kind, version: '1' } }, { 'mcp-session-id': `${kind}-session` });
    }
    if (message.id === undefined) return void res.writeHead(202).end();
    if (message.method === 'tools/list') {
      if (kind === 'huge') return reply(res, message.id, { tools: Array.from({ length: 10_000 }, (_, i) => ({ name: `tool_${i}`, inputSchema: { type: 'object' } })) });
      if (kind === 'endless') return reply(res, message.id, { tools: [{ name: 'again', inputSchema: { type: 'object' } }], nextCursor: 'more' });
      const page = Number(message.params?.cursor ?? '0');
      return reply(res, message.id, { tools: [{ name: `page_${page}`, inputSchema: { type: 'object' } }], ...(page < 2 ? { nextCursor: String(page + 1) } : {}) });
    }
    if (message.method === 'tools/call' && kind === 'bigevent') {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(`data: ${JSON.stringify({ jsonrpc: '2.0', id: message.id, result: { content: [{ type: 'text', text: 'x'.repeat(2 * 1024 * 1024) }] } })}\n\n`);
      return;
    }
    reply(res, message.id, { content: [{ type: 'text', text: `${kind} ok` }] });
  });
}

beforeAll(async () => {
  hostile = createServer(handle);
  await new Promise<void>((resolve) => hostile.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(hostile.address() as AddressInfo).port}`;
  gateway = await startTestGateway({
    agents: { support: 'http://127.0.0.1:9/api/v1' },
    config: {
      mcp_servers: Object.fromEntries(['paged', 'huge', 'endless', 'oldrev', 'bigevent'].map((kind) => [kind, { upstream: `${base}/${kind}/mcp`, timeout: '5s' }])),
      // Five servers: a share of about 200 KiB each.
      mcp: { max_response: 1_048_576 },
    },
  });
  key = (await gateway.createKey({ mcp: { paged: ['*'], huge: ['*'], endless: ['*'], oldrev: ['*'], bigevent: ['*'] } })).rawKey;
}, 60_000);

afterAll(async () => {
  await gateway?.close();
  hostile?.closeAllConnections();
  await new Promise<void>((resolve) => hostile?.close(() => resolve()));
});

function post(body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${gateway.url}/mcp`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18', ...headers },
    body: JSON.stringify(body),
  });
}

async function session(): Promise<string> {
  const init = await post({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
  await init.text();
  return init.headers.get('mcp-session-id')!;
}

describe('/mcp in front of hostile servers', () => {
  it('gathers every page of a server, stops an endless cursor at 100 pages, leaves out a list over its share and a server of another revision', async () => {
    const id = await session();
    const answer = await post({ jsonrpc: '2.0', id: 2, method: 'tools/list' }, { 'mcp-session-id': id });
    expect(answer.status).toBe(200);
    const { result } = (await answer.json()) as { result: { tools: { name: string }[]; nextCursor?: string } };
    const names = result.tools.map((tool) => tool.name);
    expect(names.filter((name) => name.startsWith('paged__'))).toEqual(['paged__page_0', 'paged__page_1', 'paged__page_2']);
    expect(names.filter((name) => name === 'endless__again')).toHaveLength(100);
    expect(names.some((name) => name.startsWith('huge__') || name.startsWith('oldrev__'))).toBe(false);
    expect(result.nextCursor).toBeUndefined();
    expect(gateway.logs.join('')).toContain('"mcp_server":"huge"');
    expect(gateway.logs.join('')).toContain('"mcp_server":"oldrev"');
  });

  it('a call to a server of another revision is 502 and nothing is forwarded; an event too large to rewrite cuts that answer; the gateway goes on', async () => {
    const id = await session();
    const oldrev = await post({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'oldrev__x', arguments: {} } }, { 'mcp-session-id': id });
    expect(oldrev.status).toBe(502);
    expect(await oldrev.json()).toMatchObject({ id: 3, error: { code: -32603 } });
    const big = await post({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'bigevent__x', arguments: {} } }, { 'mcp-session-id': id });
    expect(big.status).toBe(200);
    await expect(big.text()).rejects.toThrow();
    const fine = await post({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'paged__x', arguments: {} } }, { 'mcp-session-id': id });
    expect(await fine.json()).toEqual({ jsonrpc: '2.0', id: 5, result: { content: [{ type: 'text', text: 'paged ok' }] } });
  });
});
