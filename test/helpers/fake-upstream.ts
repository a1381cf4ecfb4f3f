// A real HTTP agent runner for tests, on a free loopback port, whose behaviour each test
// sets: handlers see the real request (headers, body) and write whatever they like.
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { RUNNER_MARKER } from './openapi-check.js';

export interface SeenRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** Resolves with the time (performance.now) the gateway closed this request's connection or stream. */
  closed: Promise<number>;
}

export type UpstreamHandler = (req: IncomingMessage, res: ServerResponse, seen: SeenRequest) => void | Promise<void>;

export interface FakeUpstream {
  url: string;
  baseUrl: string;
  port: number;
  requests: SeenRequest[];
  /** Handler for the next requests (replaces the previous one). */
  handle(handler: UpstreamHandler): void;
  /** Requests still open on the upstream side. */
  openRequests(): number;
  close(): Promise<void>;
}

export function chatResponse(text = 'Hello from the fake runner', tokens = 5): Record<string, unknown> {
  return { response: text, tool_calls: [], metadata: { model: 'fake-1', tokens_used: tokens, latency_ms: 3 } };
}

/** A runner that answers every request with `chatResponse(text, tokens)` as JSON. */
export function answerChat(text: string, tokens: number): UpstreamHandler {
  const body = JSON.stringify(chatResponse(text, tokens));
  return (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  };
}

export const defaultHandler: UpstreamHandler = (req, res) => {
  if (req.url?.endsWith('/chat/stream')) {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('event: token\ndata: {"content":"Hi"}\n\n');
    res.end('event: done\ndata: {"tokens_used":1,"latency_ms":1}\n\n');
    return;
  }
  const body = JSON.stringify(chatResponse());
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
};

/** `port`: listen on that port (a runner that comes back where it was); default a free one. */
export async function startFakeUpstream(initial: UpstreamHandler = defaultHandler, options: { port?: number } = {}): Promise<FakeUpstream> {
  let handler = initial;
  const requests: SeenRequest[] = [];
  let open = 0;
  const sockets = new Set<Socket>();
  const server: Server = createServer((req, res) => {
    open++;
    let markClosed!: (at: number) => void;
    const closed = new Promise<number>((resolve) => (markClosed = resolve));
    res.once('close', () => {
      open--;
      markClosed(performance.now());
    });
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const seen: SeenRequest = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks), closed };
      requests.push(seen);
      // Marks the answer as the runner's: the OpenAPI check then takes its status and body as passed through.
      res.setHeader(RUNNER_MARKER, 'fake');
      void Promise.resolve(handler(req, res, seen)).catch(() => res.destroy());
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', resolve);
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    baseUrl: `http://127.0.0.1:${port}/api/v1`,
    port,
    requests,
    handle: (next) => {
      handler = next;
    },
    openRequests: () => open,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
