// A Streamable HTTP MCP server for the official conformance suite's server scenarios
// (@modelcontextprotocol/conformance; the conformance repository's everything-server is the
// model of what each scenario calls), built with the official SDK, one session per client.
// It implements every server scenario the suite lists (CONFORMANCE_SCENARIOS; those only the
// 2025-11-25 revision has are in mcp-conformance-2025-11-25.ts); test/integration/
// mcp-conformance.test.ts runs each against it directly and through the gateway. Streams are
// resumable (an event store, a priming event with `retry:`), and requests whose Host or Origin
// is not this server's own localhost address are refused 403 (DNS rebinding protection).
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CompleteRequestSchema, CreateMessageResultSchema, ElicitResultSchema, SetLevelRequestSchema, SubscribeRequestSchema, UnsubscribeRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { CONFORMANCE_SCENARIOS_2025_11_25, SessionEventStore, SSE_RETRY_MS, tools20251125 } from './mcp-conformance-2025-11-25.js';

/** The suite's server scenarios, every one it lists (`conformance list --server`). */
export const CONFORMANCE_SCENARIOS = [
  'server-initialize', 'logging-set-level', 'ping', 'completion-complete', 'tools-list', 'tools-call-simple-text', 'tools-call-image',
  'tools-call-audio', 'tools-call-embedded-resource', 'tools-call-mixed-content', 'tools-call-with-logging', 'tools-call-error',
  'tools-call-with-progress', 'tools-call-sampling', 'tools-call-elicitation', 'resources-list', 'resources-read-text',
  'resources-read-binary', 'resources-templates-read', 'resources-subscribe', 'resources-unsubscribe', 'prompts-list',
  'prompts-get-simple', 'prompts-get-with-args', 'prompts-get-embedded-resource', 'prompts-get-with-image', ...CONFORMANCE_SCENARIOS_2025_11_25,
] as const;

// A 1×1 PNG and a minimal WAV, base64.
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';
const WAV = 'UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=';
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function tools(server: McpServer): void {
  const text = (value: string) => ({ content: [{ type: 'text' as const, text: value }] });
  server.registerTool('test_simple_text', { description: 'Simple text' }, async () => text('This is a simple text response for testing.'));
  server.registerTool('test_image_content', { description: 'Image' }, async () => ({ content: [{ type: 'image' as const, data: PNG, mimeType: 'image/png' }] }));
  server.registerTool('test_audio_content', { description: 'Audio' }, async () => ({ content: [{ type: 'audio' as const, data: WAV, mimeType: 'audio/wav' }] }));
  server.registerTool('test_embedded_resource', { description: 'Embedded resource' }, async () => ({
    content: [{ type: 'resource' as const, resource: { uri: 'test://embedded-resource', mimeType: 'text/plain', text: 'This is an embedded resource content.' } }],
  }));
  server.registerTool('test_multiple_content_types', { description: 'Mixed content' }, async () => ({
    content: [
      { type: 'text' as const, text: 'Multiple content types test:' },
      { type: 'image' as const, data: PNG, mimeType: 'image/png' },
      { type: 'resource' as const, resource: { uri: 'test://mixed-content-resource', mimeType: 'application/json', text: '{"test":"data","value":123}' } },
    ],
  }));
  server.registerTool('test_tool_with_logging', { description: 'Logs while it runs', inputSchema: {} }, async (_args, extra) => {
    for (const data of ['Tool execution started', 'Tool processing data', 'Tool execution completed']) {
      await extra.sendNotification({ method: 'notifications/message', params: { level: 'info', data } });
      await pause(30);
    }
    return text('Tool with logging executed successfully');
  });
  server.registerTool('test_tool_with_progress', { description: 'Reports progress', inputSchema: {} }, async (_args, extra) => {
    const progressToken = extra._meta?.progressToken ?? 0;
    for (const progress of [0, 50, 100]) {
      await extra.sendNotification({ method: 'notifications/progress', params: { progressToken, progress, total: 100, message: `Completed step ${progress} of 100` } });
      await pause(30);
    }
    return text(String(progressToken));
  });
  server.registerTool('test_error_handling', { description: 'Fails' }, async () => {
    throw new Error('This tool intentionally returns an error for testing');
  });
  server.registerTool('test_sampling', { description: 'Asks the client for a completion', inputSchema: { prompt: z.string() } }, async ({ prompt }, extra) => {
    // On the call's own stream (related to it): sent unrelated, it would go on the session's GET
    // stream, which the SDK drops when that stream is not open yet — and a client's GET and its
    // tools/call are two requests whose order a gateway between them does not keep (docs/mcp.md "Streams").
    const result = await extra.sendRequest({ method: 'sampling/createMessage', params: { messages: [{ role: 'user', content: { type: 'text', text: prompt } }], maxTokens: 100 } }, CreateMessageResultSchema);
    const content = result.content as { text?: string };
    return text(`LLM response: ${content.text ?? 'No response'}`);
  });
  server.registerTool('test_elicitation', { description: 'Asks the user', inputSchema: { message: z.string() } }, async ({ message }, extra) => {
    const result = await extra.sendRequest(
      { method: 'elicitation/create', params: { mode: 'form', message, requestedSchema: { type: 'object', properties: { response: { type: 'string', description: "User's response" } }, required: ['response'] } } },
      ElicitResultSchema,
    );
    return text(`User response: action=${result.action}, content=${JSON.stringify(result.content ?? {})}`);
  });
}

function resources(server: McpServer, log: (text: string) => void): void {
  server.registerResource('static-text', 'test://static-text', { title: 'Static Text Resource', mimeType: 'text/plain' }, async () => ({
    contents: [{ uri: 'test://static-text', mimeType: 'text/plain', text: 'This is the content of the static text resource.' }],
  }));
  server.registerResource('static-binary', 'test://static-binary', { title: 'Static Binary Resource', mimeType: 'image/png' }, async () => ({
    contents: [{ uri: 'test://static-binary', mimeType: 'image/png', blob: PNG }],
  }));
  server.registerResource('template', new ResourceTemplate('test://template/{id}/data', { list: undefined }), { title: 'Resource Template', mimeType: 'application/json' }, async (uri, { id }) => ({
    contents: [{ uri: uri.toString(), mimeType: 'application/json', text: JSON.stringify({ id, templateTest: true, data: `Data for ID: ${String(id)}` }) }],
  }));
  server.registerResource('watched-resource', 'test://watched-resource', { title: 'Watched Resource', mimeType: 'text/plain' }, async () => ({
    contents: [{ uri: 'test://watched-resource', mimeType: 'text/plain', text: 'Watched resource content' }],
  }));
  server.server.setRequestHandler(SubscribeRequestSchema, async (request) => {
    log(`Subscribed to resource: ${request.params.uri}`);
    return {};
  });
  server.server.setRequestHandler(UnsubscribeRequestSchema, async (request) => {
    log(`Unsubscribed from resource: ${request.params.uri}`);
    return {};
  });
}

function prompts(server: McpServer): void {
  server.registerPrompt('test_simple_prompt', { title: 'Simple Test Prompt', description: 'A simple prompt without arguments' }, async () => ({
    messages: [{ role: 'user', content: { type: 'text', text: 'This is a simple prompt for testing.' } }],
  }));
  server.registerPrompt('test_prompt_with_arguments', { title: 'Prompt With Arguments', description: 'A prompt with required arguments', argsSchema: { arg1: z.string(), arg2: z.string() } }, async ({ arg1, arg2 }) => ({
    messages: [{ role: 'user', content: { type: 'text', text: `Prompt with arguments: arg1='${arg1}', arg2='${arg2}'` } }],
  }));
  server.registerPrompt('test_prompt_with_embedded_resource', { title: 'Prompt With Embedded Resource', description: 'A prompt that includes an embedded resource', argsSchema: { resourceUri: z.string() } }, async ({ resourceUri }) => ({
    messages: [
      { role: 'user', content: { type: 'resource', resource: { uri: resourceUri, mimeType: 'text/plain', text: 'Embedded resource content for testing.' } } },
      { role: 'user', content: { type: 'text', text: 'Please process the embedded resource above.' } },
    ],
  }));
  server.registerPrompt('test_prompt_with_image', { title: 'Prompt With Image', description: 'A prompt that includes image content' }, async () => ({
    messages: [
      { role: 'user', content: { type: 'image', data: PNG, mimeType: 'image/png' } },
      { role: 'user', content: { type: 'text', text: 'Please analyze the image above.' } },
    ],
  }));
}

export function conformanceServer(): McpServer {
  const server = new McpServer(
    { name: 'agentgw-conformance-server', version: '1.0.0' },
    { capabilities: { tools: { listChanged: true }, resources: { subscribe: true, listChanged: true }, prompts: { listChanged: true }, logging: {}, completions: {} } },
  );
  const log = (data: string) => void server.server.notification({ method: 'notifications/message', params: { level: 'info', logger: 'conformance', data } }).catch(() => undefined);
  tools(server);
  tools20251125(server);
  resources(server, log);
  prompts(server);
  server.server.setRequestHandler(SetLevelRequestSchema, async (request) => {
    log(`Log level set to: ${request.params.level}`);
    return {};
  });
  server.server.setRequestHandler(CompleteRequestSchema, async () => ({ completion: { values: [], total: 0, hasMore: false } }));
  return server;
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  return text === '' ? undefined : (JSON.parse(text) as unknown);
}

export interface ConformanceServer {
  url: string;
  close(): Promise<void>;
}

export async function startConformanceServer(): Promise<ConformanceServer> {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const revisions = new Map<string, string>();
  let port = 0;
  const http: Server = createServer((req, res) => {
    void (async () => {
      const body = req.method === 'POST' ? await readJson(req) : undefined;
      const sessionId = req.headers['mcp-session-id'];
      let transport = typeof sessionId === 'string' ? transports.get(sessionId) : undefined;
      if (transport === undefined) {
        if (typeof sessionId === 'string') {
          res.writeHead(404, { 'content-type': 'application/json' }).end('{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}');
          return;
        }
        const revision = (body as { params?: { protocolVersion?: unknown } } | undefined)?.params?.protocolVersion;
        const created: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (id) => {
            transports.set(id, created);
            if (typeof revision === 'string') revisions.set(id, revision);
          },
          onsessionclosed: (id) => {
            transports.delete(id);
            revisions.delete(id);
          },
          eventStore: new SessionEventStore(),
          retryInterval: SSE_RETRY_MS,
          enableDnsRebindingProtection: true,
          allowedHosts: [`127.0.0.1:${port}`, `localhost:${port}`],
          allowedOrigins: [`http://127.0.0.1:${port}`, `http://localhost:${port}`],
        });
        transport = created;
        await conformanceServer().connect(transport);
      } else readSessionRevision(req, revisions.get(sessionId as string));
      await transport.handleRequest(req, res, body);
    })().catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  port = (http.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    async close() {
      for (const transport of transports.values()) await transport.close();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

/**
 * The suite's own requests after initialize (server-sse-polling's tools/call) say
 * MCP-Protocol-Version 2025-03-26 whatever the session agreed, and the SDK offers resumable
 * streams (priming event, closeSSEStream) only to a request whose header is 2025-11-25 or
 * later: this server reads a session's requests at the revision the session agreed.
 */
function readSessionRevision(req: IncomingMessage, revision: string | undefined): void {
  const header = req.headers['mcp-protocol-version'];
  if (revision === undefined || typeof header !== 'string' || header >= revision) return;
  req.headers['mcp-protocol-version'] = revision;
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) if (req.rawHeaders[i]!.toLowerCase() === 'mcp-protocol-version') req.rawHeaders[i + 1] = revision;
}
