// The reference agent runner: speaks the runner API (POST {base}/chat and {base}/chat/stream)
// with a deterministic, echo-style reply so `npm start`, the docs and the tests have a real
// upstream. It streams word by word, honours max_tokens and stops when the client goes away.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer } from '../node-http.js';
import { handleDemoMcp } from './demo-mcp-server.js';

export interface DemoAgentOptions {
  port: number;
  host?: string;
  /** Delay between streamed tokens. */
  tokenIntervalMs?: number;
  model?: string;
}

interface ChatBody {
  message?: unknown;
  tools?: unknown;
  max_tokens?: unknown;
}

const ARITHMETIC = /(-?\d+(?:\.\d+)?)\s*([+\-*/])\s*(-?\d+(?:\.\d+)?)/;

interface ToolCall {
  tool: string;
  input: Record<string, unknown>;
  output: Record<string, unknown>;
}

function calculate(message: string): ToolCall | undefined {
  const match = ARITHMETIC.exec(message);
  if (!match) return undefined;
  const [, left, op, right] = match;
  const a = Number(left);
  const b = Number(right);
  const result = op === '+' ? a + b : op === '-' ? a - b : op === '*' ? a * b : b === 0 ? null : a / b;
  return { tool: 'calculator', input: { expression: `${a} ${op} ${b}` }, output: { result } };
}

/** The reply as a list of tokens (words with their trailing space). */
export function composeReply(message: string, tools: string[], maxTokens: number): { tokens: string[]; toolCalls: ToolCall[] } {
  const toolCalls: ToolCall[] = [];
  const calc = tools.includes('calculator') ? calculate(message) : undefined;
  if (calc) toolCalls.push(calc);
  const text = calc
    ? `The answer to ${String(calc.input.expression)} is ${String(calc.output.result)}.`
    : `You said: "${message.slice(0, 200)}". This is the demo agent behind agent-gateway, answering word by word.`;
  const words = text.split(' ');
  const tokens = words.map((word, i) => (i < words.length - 1 ? `${word} ` : word)).slice(0, maxTokens);
  return { tokens, toolCalls };
}

function readJson(req: IncomingMessage): Promise<ChatBody> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      try {
        const parsed: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        resolve(parsed && typeof parsed === 'object' ? (parsed as ChatBody) : {});
      } catch {
        resolve({});
      }
    });
    req.on('error', () => resolve({}));
  });
}

function sendJson(res: ServerResponse, status: number, value: unknown): void {
  const body = JSON.stringify(value);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

export function createDemoAgent(options: DemoAgentOptions): Server {
  const intervalMs = options.tokenIntervalMs ?? 60;
  const model = options.model ?? 'demo-echo-1';

  return createServer(async (req, res) => {
    const path = (req.url ?? '/').split('?', 1)[0];
    // The demo MCP server (docs/mcp.md) shares the port: one demo process, one port to free.
    if (path === '/mcp') return handleDemoMcp(req, res);
    const isChat = path === '/api/v1/chat';
    const isStream = path === '/api/v1/chat/stream';
    if (!isChat && !isStream) return sendJson(res, 404, { error: { type: 'not_found', message: 'demo agent: unknown path' } });
    if (req.method !== 'POST') return sendJson(res, 405, { error: { type: 'method_not_allowed', message: 'demo agent: POST only' } });
    const started = Date.now();
    const body = await readJson(req);
    if (typeof body.message !== 'string' || body.message.length === 0) {
      return sendJson(res, 400, { error: { type: 'invalid_request', message: 'demo agent: "message" is required' } });
    }
    const tools = Array.isArray(body.tools) ? body.tools.filter((t): t is string => typeof t === 'string') : ['calculator'];
    const maxTokens = typeof body.max_tokens === 'number' && body.max_tokens > 0 ? body.max_tokens : 4096;
    const { tokens, toolCalls } = composeReply(body.message, tools, maxTokens);

    if (isChat) {
      return sendJson(res, 200, {
        response: tokens.join(''),
        tool_calls: toolCalls,
        metadata: { model, tokens_used: tokens.length, latency_ms: Date.now() - started },
      });
    }

    res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
    res.flushHeaders();
    let index = 0;
    let closed = false;
    res.on('close', () => {
      closed = true;
    });
    for (const call of toolCalls) res.write(`event: tool_call\ndata: ${JSON.stringify(call)}\n\n`);
    const timer = setInterval(() => {
      if (closed) {
        clearInterval(timer);
        return;
      }
      if (index < tokens.length) {
        res.write(`event: token\ndata: ${JSON.stringify({ content: tokens[index++] })}\n\n`);
        return;
      }
      clearInterval(timer);
      // The model too, as a JSON answer's metadata names it: the gateway prices streams by it.
      res.end(`event: done\ndata: ${JSON.stringify({ tokens_used: tokens.length, latency_ms: Date.now() - started, model })}\n\n`);
    }, intervalMs);
  });
}

export async function startDemoAgent(options: DemoAgentOptions): Promise<Server> {
  const server = createDemoAgent(options);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host ?? '127.0.0.1', () => resolve());
  });
  return server;
}
