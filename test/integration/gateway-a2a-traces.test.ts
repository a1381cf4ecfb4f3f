// Traces on an A2A agent (docs/a2a.md, docs/observability.md): against real A2A servers built
// with the official SDK and a real OTLP/HTTP receiver, a request to an A2A agent has the same
// spans as one to an Agent Chat runner — the server span `invoke_agent {agent}` with the agent,
// route, status, outcome, model and tokens; one client span per attempt, whose id the agent
// receives as its parent — and the attempt names the JSON-RPC method it called.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startA2aServer, type TestA2aServer } from '../helpers/a2a-servers.js';
import { postChat, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.js';
import { conventionProblems, loadSemconvRegistry } from '../helpers/semconv-registry.js';
import { waitFor } from '../helpers/wait.js';

const MESSAGE = 'a2a message text that is never exported 3c1e';
const SESSION_ID = 'a2a-conversation-7781';
const TOKENS = 12;
const SERVER = 2;
const CLIENT = 3;
const ERROR = 2;
const CLIENT_SPAN = '00f067aa0ba902b7';

let receiver: OtlpReceiver;
let servers: Record<'streaming' | 'plain' | 'failing' | 'legacy', TestA2aServer>;
let gateway: TestGateway;
let key: string;
let keyId: string;
let traces = 0;

/** A fresh client trace id per request, so each test finds its own spans. */
function nextTrace(): string {
  traces += 1;
  return traces.toString(16).padStart(32, 'a');
}

async function traced(agent: string, route: 'chat' | 'chat/stream', body: Record<string, unknown>): Promise<{ status: number; server: ReceivedSpan; clients: ReceivedSpan[] }> {
  const traceId = nextTrace();
  const res = await postChat(gateway.url, `/agents/${agent}/api/v1/${route}`, key, body, { traceparent: `00-${traceId}-${CLIENT_SPAN}-01` });
  await res.text();
  return waitFor(
    `trace ${traceId} at the receiver`,
    () => {
      const spans = receiver.spans.filter((span) => span.traceId === traceId);
      const server = spans.find((span) => span.kind === SERVER);
      const clients = spans.filter((span) => span.kind === CLIENT);
      return server !== undefined && clients.length > 0 ? { status: res.status, server, clients } : undefined;
    },
    30_000,
  );
}

beforeAll(async () => {
  const metadata = { model: 'sdk-model', tokens_used: TOKENS };
  const [streaming, plain, failing, legacy] = await Promise.all([
    startA2aServer({ kind: 'streaming', metadata }),
    startA2aServer({ kind: 'plain', metadata }),
    startA2aServer({ kind: 'failing' }),
    startA2aServer({ kind: 'streaming', version: '0.3', metadata }),
  ]);
  servers = { streaming, plain, failing, legacy };
  receiver = await startOtlpReceiver();
  const a2a = (url: string): Record<string, unknown> => ({ protocol: 'a2a', upstream: url });
  gateway = await startTestGateway({
    agents: { travel: a2a(streaming.url), plain: a2a(plain.url), failing: a2a(failing.url), legacy: a2a(legacy.url) },
    config: { telemetry: { otlp_endpoint: receiver.url, service_name: 'a2a-under-test' } },
  });
  ({ rawKey: key, keyId } = await gateway.createKey({ account: 'acme', plan: 'pro' }));
});

afterAll(async () => {
  await gateway?.close();
  await Promise.all(Object.values(servers ?? {}).map((server) => server.close()));
  await receiver?.close();
});

describe('traces on an A2A agent', { timeout: 120_000 }, () => {
  it('/chat: the server span of a native request, and a client span naming SendMessage whose id the agent sees as its parent', async () => {
    const { status, server, clients } = await traced('travel', 'chat', { message: MESSAGE, context: { session_id: SESSION_ID }, max_tokens: 64 });
    expect(status).toBe(200);
    expect(server.name).toBe('invoke_agent travel');
    expect(server.parentSpanId).toBe(CLIENT_SPAN);
    expect(server.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.name': 'travel',
      'gen_ai.conversation.id': SESSION_ID,
      'gen_ai.request.max_tokens': 64,
      'gen_ai.response.model': 'sdk-model',
      'agentgw.key_id': keyId,
      'agentgw.account': 'acme',
      'agentgw.plan': 'pro',
      'agentgw.route': 'chat',
      'agentgw.outcome': 'ok',
      'agentgw.tokens_used': TOKENS,
      'http.response.status_code': 200,
    });
    expect(server.attributes).not.toHaveProperty('error.type');
    expect(server.statusCode).toBe(0);
    expect(clients).toHaveLength(1);
    const client = clients[0]!;
    expect(client.name).toBe('POST /a2a/jsonrpc');
    expect(client.parentSpanId).toBe(server.spanId);
    expect(client.attributes).toMatchObject({
      'http.request.method': 'POST',
      'server.address': '127.0.0.1',
      'url.full': servers.streaming.url,
      'gen_ai.agent.name': 'travel',
      'rpc.system.name': 'jsonrpc',
      'rpc.method': 'SendMessage',
      'http.response.status_code': 200,
    });
    expect(client.attributes).not.toHaveProperty('rpc.system');
    expect(servers.streaming.traceparents.at(-1)).toBe(`00-${server.traceId}-${client.spanId}-01`);
  });

  it('/chat/stream: the first token event, the model and tokens from the done event, and SendStreamingMessage', async () => {
    const { status, server, clients } = await traced('travel', 'chat/stream', { message: MESSAGE });
    expect(status).toBe(200);
    expect(server.events.map((event) => event.name)).toContain('agentgw.first_token');
    expect(server.attributes).toMatchObject({ 'agentgw.route': 'chat/stream', 'agentgw.outcome': 'ok', 'agentgw.tokens_used': TOKENS, 'gen_ai.response.model': 'sdk-model', 'http.response.status_code': 200 });
    expect(clients[0]!.attributes).toMatchObject({ 'rpc.method': 'SendStreamingMessage' });
  });

  it('names the send an agent without streaming gets on the stream route, and the 0.3 methods', async () => {
    const plain = await traced('plain', 'chat/stream', { message: MESSAGE });
    expect(plain.server.attributes).toMatchObject({ 'agentgw.route': 'chat/stream', 'agentgw.tokens_used': TOKENS });
    expect(plain.clients[0]!.attributes['rpc.method']).toBe('SendMessage');
    const legacyChat = await traced('legacy', 'chat', { message: MESSAGE });
    expect(legacyChat.clients[0]!.attributes['rpc.method']).toBe('message/send');
    const legacyStream = await traced('legacy', 'chat/stream', { message: MESSAGE });
    expect(legacyStream.clients[0]!.attributes['rpc.method']).toBe('message/stream');
    expect(legacyStream.server.attributes).toMatchObject({ 'agentgw.tokens_used': TOKENS, 'agentgw.outcome': 'ok' });
  });

  it('a failed task: 502 with the registry type, the span status ERROR; the attempt itself answered 200', async () => {
    const { status, server, clients } = await traced('failing', 'chat', { message: MESSAGE });
    expect(status).toBe(502);
    expect(server.attributes).toMatchObject({ 'error.type': 'agent_task_failed', 'agentgw.outcome': 'error', 'http.response.status_code': 502 });
    expect(server.statusCode).toBe(ERROR);
    expect(clients[0]!.attributes).toMatchObject({ 'rpc.method': 'SendMessage', 'http.response.status_code': 200 });
  });

  it('exports only names the semantic conventions registry knows, or the gateway\'s own agentgw.*', async () => {
    const attributes = new Set(receiver.spans.flatMap((span) => [...Object.keys(span.attributes), ...span.events.flatMap((event) => Object.keys(event.attributes))]));
    const events = new Set(receiver.spans.flatMap((span) => span.events.map((event) => event.name)));
    for (const name of ['rpc.system.name', 'rpc.method', 'gen_ai.provider.name']) expect(attributes).toContain(name);
    expect(events).toContain('agentgw.first_token');
    expect(conventionProblems(loadSemconvRegistry(), { attributes, events })).toEqual([]);
  });

  it('exports no message text and no key', async () => {
    const everything = Buffer.concat(receiver.raw).toString('utf8');
    expect(everything).toContain(keyId);
    for (const secret of [MESSAGE, key, key.slice(3), 'Hello, ']) expect(everything).not.toContain(secret);
  });
});
