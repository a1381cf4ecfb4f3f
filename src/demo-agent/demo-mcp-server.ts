// The demo MCP server `npm start` runs beside the demo agent (on the same port, at /mcp), so
// docs/mcp.md's example has a real server behind the gateway's MCP front door. A minimal
// Streamable HTTP server in JSON mode: initialize (with a session id of its own), ping,
// tools/list and tools/call of three tools (add, echo, time), notifications accepted (202),
// DELETE ends a session. Written without the SDK: the SDK is a development dependency only.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';

const PROTOCOLS = ['2025-11-25', '2025-06-18', '2025-03-26'];
const MAX_BODY = 1024 * 1024;

const TOOLS = [
  { name: 'add', description: 'Adds two numbers', inputSchema: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] } },
  { name: 'echo', description: 'Answers its text', inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } },
  { name: 'time', description: 'The server time (ISO 8601)', inputSchema: { type: 'object', properties: {} } },
];

type Reply = { result: unknown } | { error: { code: number; message: string } };

function text(value: string): { content: { type: 'text'; text: string }[] } {
  return { content: [{ type: 'text', text: value }] };
}

function callTool(params: Record<string, unknown>): Reply {
  const args = (typeof params.arguments === 'object' && params.arguments !== null ? params.arguments : {}) as Record<string, unknown>;
  switch (params.name) {
    case 'add':
      if (typeof args.a !== 'number' || typeof args.b !== 'number') return { result: { ...text('add needs numbers a and b'), isError: true } };
      return { result: text(String(args.a + args.b)) };
    case 'echo':
      return { result: text(typeof args.text === 'string' ? args.text : '') };
    case 'time':
      return { result: text(new Date().toISOString()) };
    default:
      return { error: { code: -32602, message: `Unknown tool: ${String(params.name)}` } };
  }
}

function answer(method: string, params: Record<string, unknown>): Reply {
  switch (method) {
    case 'initialize': {
      const asked = typeof params.protocolVersion === 'string' && PROTOCOLS.includes(params.protocolVersion) ? params.protocolVersion : PROTOCOLS[0];
      return { result: { protocolVersion: asked, capabilities: { tools: {} }, serverInfo: { name: 'demo-tools', version: '1.0.0' } } };
    }
    case 'ping':
      return { result: {} };
    case 'tools/list':
      return { result: { tools: TOOLS } };
    case 'tools/call':
      return callTool(params);
    default:
      return { error: { code: -32601, message: `Method not found: ${method}` } };
  }
}

async function readBody(req: IncomingMessage): Promise<string | undefined> {
  let length = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of req as AsyncIterable<Buffer>) {
    length += chunk.length;
    if (length > MAX_BODY) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = body === undefined ? '' : JSON.stringify(body);
  res.writeHead(status, { ...headers, ...(text === '' ? {} : { 'Content-Type': 'application/json' }), 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

/** Answers one request to /mcp. */
export async function handleDemoMcp(req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (req.method === 'DELETE') return send(res, 200, undefined);
  if (req.method !== 'POST') return send(res, 405, undefined, { Allow: 'POST, DELETE' });
  const raw = await readBody(req);
  let message: Record<string, unknown>;
  try {
    message = JSON.parse(raw ?? '') as Record<string, unknown>;
  } catch {
    return send(res, 400, { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } });
  }
  if (typeof message !== 'object' || message === null || typeof message.method !== 'string') {
    // A client's response to a request of ours (none are sent) or garbage: accepted and dropped.
    return send(res, 202, undefined);
  }
  if (!('id' in message)) return send(res, 202, undefined);
  const params = (typeof message.params === 'object' && message.params !== null ? message.params : {}) as Record<string, unknown>;
  const reply = answer(message.method, params);
  const headers: Record<string, string> = message.method === 'initialize' ? { 'Mcp-Session-Id': randomUUID() } : {};
  return send(res, 200, { jsonrpc: '2.0', id: message.id, ...reply }, headers);
}
