// MCP servers made with the official SDK (@modelcontextprotocol/sdk) for the front door's
// tests: Streamable HTTP, one StreamableHTTPServerTransport per session (stateful, the SDK's
// own session ids), tools that answer, fail, stream progress, ask the client back (elicitation,
// sampling) and wait for cancellation. It records what it was sent, so a test can see what reached it.
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

export interface TestMcpServer {
  url: string;
  /** Every request's method, path and headers as the server saw them. */
  seen: { method: string; headers: IncomingMessage['headers']; body: string }[];
  /** tools/call names the server ran. */
  called: string[];
  /** Requests cancelled by notifications/cancelled (the tool's signal fired). */
  cancelled: number;
  /** Root URIs the client answered to the server's roots/list requests sent on the GET stream (tool roots_later). */
  roots: string[];
  sessions(): number;
  /** Ends every session as if the server restarted (its sessions are lost). */
  forgetSessions(): void;
  close(): Promise<void>;
}

function buildServer(state: TestMcpServer, name: string): McpServer {
  const server = new McpServer({ name, version: '1.0.0' }, { capabilities: { logging: {} } });
  server.registerTool('echo', { description: 'Echoes its text', inputSchema: { text: z.string() } }, async ({ text }) => {
    state.called.push('echo');
    return { content: [{ type: 'text', text }] };
  });
  server.registerTool('add', { description: 'Adds two numbers', inputSchema: { a: z.number(), b: z.number() } }, async ({ a, b }) => {
    state.called.push('add');
    return { content: [{ type: 'text', text: String(a + b) }] };
  });
  server.registerTool('secret', { description: 'A tool no test key is given' }, async () => {
    state.called.push('secret');
    return { content: [{ type: 'text', text: 'the secret' }] };
  });
  server.registerTool('fails', { description: 'Answers isError' }, async () => {
    state.called.push('fails');
    return { content: [{ type: 'text', text: 'it failed' }], isError: true };
  });
  server.registerTool('progress', { description: 'Sends progress notifications, then answers', inputSchema: { steps: z.number() } }, async ({ steps }, extra) => {
    state.called.push('progress');
    const token = extra._meta?.progressToken;
    for (let i = 1; i <= steps; i++) {
      if (token !== undefined) await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: i, total: steps } });
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return { content: [{ type: 'text', text: `done ${steps}` }] };
  });
  // ask and sample send their request related to the call, so it goes on the call's own stream
  // (as the spec says a server's requests during a call should), not the session's GET stream.
  server.registerTool('ask', { description: 'Asks the client (elicitation), answers what it said' }, async (extra) => {
    state.called.push('ask');
    const answer = await server.server.elicitInput({ message: 'Your name?', requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } }, { relatedRequestId: extra.requestId });
    return { content: [{ type: 'text', text: `hello ${String(answer.content?.name)}` }] };
  });
  server.registerTool('sample', { description: 'Asks the client to sample (sampling/createMessage), answers with its server name and what the model said', inputSchema: { prompt: z.string() } }, async ({ prompt }, extra) => {
    state.called.push('sample');
    const answer = await server.server.createMessage({ messages: [{ role: 'user', content: { type: 'text', text: prompt } }], maxTokens: 16 }, { relatedRequestId: extra.requestId });
    const content = answer.content as { type: string; text?: string };
    return { content: [{ type: 'text', text: `${name}: ${content.text ?? ''}` }] };
  });
  server.registerTool('roots_later', { description: 'Answers at once; then asks the client for its roots on the session stream (GET), not tied to this call' }, async () => {
    state.called.push('roots_later');
    // Not related to the call: the SDK sends it on the standalone GET stream (dropped if none is open).
    setTimeout(() => {
      server.server.listRoots().then(
        (answer) => state.roots.push(...answer.roots.map((root) => root.uri)),
        () => undefined,
      );
    }, 0);
    return { content: [{ type: 'text', text: 'asked' }] };
  });
  server.registerTool('wait', { description: 'Waits until cancelled' }, async (extra) => {
    state.called.push('wait');
    await new Promise<void>((resolve) => {
      if (extra.signal.aborted) resolve();
      extra.signal.addEventListener('abort', () => resolve(), { once: true });
    });
    state.cancelled += 1;
    return { content: [{ type: 'text', text: 'cancelled' }] };
  });
  server.registerPrompt('greeting', { description: 'A greeting' }, () => ({ messages: [{ role: 'user', content: { type: 'text', text: 'hello' } }] }));
  server.registerPrompt('hidden', { description: 'Not for test keys' }, () => ({ messages: [{ role: 'user', content: { type: 'text', text: 'hidden' } }] }));
  return server;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** `name` is the server's serverInfo name, and what its `sample` tool prefixes its answer with. */
export async function startTestMcpServer(name = 'test-mcp'): Promise<TestMcpServer> {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  let http: Server;
  const state: TestMcpServer = {
    url: '',
    seen: [],
    called: [],
    cancelled: 0,
    roots: [],
    sessions: () => transports.size,
    forgetSessions() {
      for (const transport of transports.values()) void transport.close();
      transports.clear();
    },
    close: async () => {
      state.forgetSessions();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
  http = createServer((req, res) => {
    void (async () => {
      const text = req.method === 'POST' ? await readBody(req) : '';
      state.seen.push({ method: req.method ?? '', headers: req.headers, body: text });
      const parsed: unknown = text === '' ? undefined : JSON.parse(text);
      const sessionId = req.headers['mcp-session-id'];
      let transport = typeof sessionId === 'string' ? transports.get(sessionId) : undefined;
      if (transport === undefined) {
        if (typeof sessionId === 'string') {
          res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } }));
          return;
        }
        const created: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (id) => {
            transports.set(id, created);
          },
          onsessionclosed: (id) => {
            transports.delete(id);
          },
        });
        transport = created;
        await buildServer(state, name).connect(transport);
      }
      await transport.handleRequest(req, res, parsed);
    })().catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
  return state;
}
