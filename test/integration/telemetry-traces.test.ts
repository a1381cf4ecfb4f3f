// OpenTelemetry traces (docs/observability.md) against a real OTLP/HTTP receiver the test
// starts, with real runners that record the traceparent they are sent: the spans, their
// parents, the trace continued from the client and seen by the runner, attributes, events,
// and nothing secret or any message text in the bytes exported.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { refusingPort } from '../helpers/free-port.js';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { postChat, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.js';
import { conventionProblems, loadSemconvRegistry } from '../helpers/semconv-registry.js';
import { waitFor } from '../helpers/wait.js';

const MESSAGE = 'please never export this message text 7f3a9c';
const TOOL_INPUT = 'tool input that stays private 51be';
const TOOL_OUTPUT = 'tool output that stays private 88d0';
const ADMIN_TOKEN = 'adm-telemetry-test-token-0123456789abcdefghijklmnop';
const USER_ID = 'end-user-4411';
const SESSION_ID = 'conversation-9902';
const CLIENT_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CLIENT_SPAN = '00f067aa0ba902b7';
const SERVER = 2;
const CLIENT = 3;
const ERROR = 2;

/** A runner answering /chat with a model and tool calls, and /chat/stream with token, tool_call and done events. */
function agentRunner(req: IncomingMessage, res: ServerResponse): void {
  if (req.url?.endsWith('/chat/stream')) {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('event: token\ndata: {"content":"Hel"}\n\n');
    res.write(`event: tool_call\ndata: ${JSON.stringify({ tool: 'calculator', input: { text: TOOL_INPUT }, output: { text: TOOL_OUTPUT } })}\n\n`);
    res.write('event: token\ndata: {"content":"lo"}\n\n');
    res.end('event: done\ndata: {"tokens_used":7,"latency_ms":2,"model":"stream-model-2","input_tokens":3,"output_tokens":4}\n\n');
    return;
  }
  const body = JSON.stringify({
    response: 'Hello',
    tool_calls: [
      { tool: 'search', input: { text: TOOL_INPUT }, output: { text: TOOL_OUTPUT } },
      { tool: 'calculator', input: {}, output: {} },
    ],
    metadata: { model: 'json-model-1', tokens_used: 12, latency_ms: 3 },
  });
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

function spansOf(receiver: OtlpReceiver, traceId: string): ReceivedSpan[] {
  return receiver.spans.filter((span) => span.traceId === traceId);
}

/** Waits until the trace has its server span (ended last) and returns every span of it. */
async function traceOf(receiver: OtlpReceiver, traceId: string, clientSpans = 1): Promise<{ server: ReceivedSpan; clients: ReceivedSpan[] }> {
  return waitFor(
    `trace ${traceId} at the receiver`,
    () => {
      const spans = spansOf(receiver, traceId);
      const server = spans.find((span) => span.kind === SERVER);
      const clients = spans.filter((span) => span.kind === CLIENT);
      return server !== undefined && clients.length >= clientSpans ? { server, clients } : undefined;
    },
    30_000,
  );
}

const traceIdOfTraceparent = (value: unknown): string => String(value).split('-')[1]!;

// Waits below allow for a loaded machine; the test's own deadline is longer than any of them.
describe('traces over OTLP/HTTP', { timeout: 180_000 }, () => {
  let receiver: OtlpReceiver;
  let runner: FakeUpstream;
  let gateway: TestGateway;
  let key: string;
  let keyId: string;

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    runner = await startFakeUpstream(agentRunner);
    gateway = await startTestGateway({
      // `provider` and `model` from the agent's config: gen_ai.provider.name and gen_ai.request.model.
      agents: { support: { upstream: runner.baseUrl, provider: 'openai', model: 'configured-model-3' }, plain: runner.baseUrl },
      config: {
        admin: { host: '127.0.0.1', port: 0, tokens: [{ name: 'ops', token: ADMIN_TOKEN, role: 'admin' }] },
        telemetry: { otlp_endpoint: receiver.url, service_name: 'gateway-under-test', headers: { 'x-collector-tenant': 'tenant-a' } },
      },
    });
    ({ rawKey: key, keyId } = await gateway.createKey({ account: 'acme', plan: 'pro' }));
  });

  afterAll(async () => {
    await gateway.close();
    await runner.close();
    await receiver.close();
  });

  it('continues the client trace: server span under the client span, a client span under it, and the runner sees that client span as parent', async () => {
    const res = await postChat(gateway.url, '/agents/support/api/v1/chat', key, { message: MESSAGE, context: { user_id: USER_ID, session_id: SESSION_ID }, max_tokens: 64, temperature: 0.5 }, {
      traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`,
    });
    expect(res.status).toBe(200);
    await res.text();
    const { server, clients } = await traceOf(receiver, CLIENT_TRACE);
    expect(server.name).toBe('invoke_agent support');
    expect(server.parentSpanId).toBe(CLIENT_SPAN);
    expect(clients).toHaveLength(1);
    const client = clients[0]!;
    expect(client.parentSpanId).toBe(server.spanId);
    expect(client.name).toBe('POST /api/v1/chat');
    // The runner's request names the gateway's client span as its parent, in the client's trace.
    const seen = runner.requests.at(-1)!;
    expect(seen.headers.traceparent).toBe(`00-${CLIENT_TRACE}-${client.spanId}-01`);
    expect(client.startNs).toBeGreaterThanOrEqual(server.startNs);
    expect(client.endNs).toBeLessThanOrEqual(server.endNs);

    expect(server.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.provider.name': 'openai',
      'gen_ai.agent.name': 'support',
      'gen_ai.conversation.id': SESSION_ID,
      'gen_ai.request.model': 'configured-model-3',
      'gen_ai.request.max_tokens': 64,
      'gen_ai.request.temperature': 0.5,
      'gen_ai.response.model': 'json-model-1',
      'agentgw.key_id': keyId,
      'agentgw.account': 'acme',
      'agentgw.plan': 'pro',
      'agentgw.outcome': 'ok',
      'agentgw.route': 'chat',
      'agentgw.tokens_used': 12,
      'http.response.status_code': 200,
    });
    expect(server.attributes['agentgw.request_id']).toBe(res.headers.get('x-request-id'));
    // user_id only with telemetry.include_user_id.
    expect(server.attributes).not.toHaveProperty('user.id');
    expect(server.attributes).not.toHaveProperty('error.type');
    expect(server.statusCode).toBe(0);
    expect(server.events.filter((event) => event.name === 'agentgw.tool_call').map((event) => event.attributes['gen_ai.tool.name'])).toEqual(['search', 'calculator']);
    expect(client.attributes).toMatchObject({ 'http.request.method': 'POST', 'server.address': '127.0.0.1', 'server.port': runner.port, 'http.response.status_code': 200 });
    expect(client.attributes).not.toHaveProperty('http.request.resend_count');
    expect(server.resource['service.name']).toBe('gateway-under-test');
    // The request's log line carries the same trace id.
    expect(gateway.logs.some((line) => line.includes(`"trace_id":"${CLIENT_TRACE}"`))).toBe(true);
  });

  it('marks a stream\'s first token and each tool call with events, and takes the model and token split from its done event', async () => {
    const res = await postChat(gateway.url, '/agents/support/api/v1/chat/stream', key, { message: MESSAGE });
    expect(res.status).toBe(200);
    await res.text();
    const traceId = traceIdOfTraceparent(runner.requests.at(-1)!.headers.traceparent);
    const { server, clients } = await traceOf(receiver, traceId);
    // No client traceparent: a new trace, the server span its root.
    expect(server.parentSpanId).toBe('');
    expect(runner.requests.at(-1)!.headers.traceparent).toBe(`00-${traceId}-${clients[0]!.spanId}-01`);
    expect(server.events.map((event) => event.name)).toEqual(['agentgw.first_token', 'agentgw.tool_call']);
    expect(server.events[1]!.attributes).toEqual({ 'gen_ai.tool.name': 'calculator' });
    expect(server.attributes).toMatchObject({
      'agentgw.route': 'chat/stream',
      'agentgw.tokens_used': 7,
      'gen_ai.response.model': 'stream-model-2',
      'gen_ai.usage.input_tokens': 3,
      'gen_ai.usage.output_tokens': 4,
      'agentgw.outcome': 'ok',
    });
  });

  it('names the gateway as the provider of an agent whose config names none, and no request model without a configured one', async () => {
    const res = await postChat(gateway.url, '/agents/plain/api/v1/chat', key, { message: MESSAGE });
    expect(res.status).toBe(200);
    await res.text();
    const { server } = await traceOf(receiver, traceIdOfTraceparent(runner.requests.at(-1)!.headers.traceparent));
    expect(server.attributes).toMatchObject({ 'gen_ai.provider.name': 'agent-gateway', 'gen_ai.agent.name': 'plain', 'gen_ai.response.model': 'json-model-1' });
    expect(server.attributes).not.toHaveProperty('gen_ai.request.model');
  });

  it('records a refusal with the error registry\'s type, the status left unset for a 4xx', async () => {
    const res = await postChat(gateway.url, '/agents/support/api/v1/chat', 'ha_notarealkeyatall', { message: MESSAGE }, { traceparent: `00-${'ab'.repeat(16)}-${CLIENT_SPAN}-01` });
    expect(res.status).toBe(401);
    await res.text();
    const server = await waitFor('the refused request\'s span', () => spansOf(receiver, 'ab'.repeat(16)).find((span) => span.kind === SERVER), 30_000);
    expect(server.attributes).toMatchObject({ 'error.type': 'invalid_api_key', 'http.response.status_code': 401 });
    expect(server.attributes).not.toHaveProperty('agentgw.key_id');
    expect(server.statusCode).toBe(0);
    expect(spansOf(receiver, 'ab'.repeat(16)).filter((span) => span.kind === CLIENT)).toEqual([]);
  });

  it('exports only names the semantic conventions registry knows, or the gateway\'s own agentgw.*', async () => {
    await waitFor('spans of every request so far', () => receiver.spans.filter((span) => span.kind === SERVER).length >= 4, 30_000);
    const attributes = new Set(receiver.spans.flatMap((span) => [...Object.keys(span.attributes), ...span.events.flatMap((event) => Object.keys(event.attributes))]));
    const events = new Set(receiver.spans.flatMap((span) => span.events.map((event) => event.name)));
    // What the requests above exported, so the check below judged something.
    for (const name of ['gen_ai.provider.name', 'gen_ai.request.model', 'gen_ai.tool.name', 'agentgw.outcome']) expect(attributes).toContain(name);
    expect(events).toEqual(new Set(['agentgw.first_token', 'agentgw.tool_call']));
    expect(conventionProblems(loadSemconvRegistry(), { attributes, events })).toEqual([]);
  });

  it('exports nothing secret and no message, user id or tool input/output text', async () => {
    // After the requests above (and whatever is still queued).
    await waitFor('spans of every request so far', () => receiver.spans.filter((span) => span.kind === SERVER).length >= 4, 30_000);
    const everything = Buffer.concat(receiver.raw).toString('utf8');
    // The bytes searched are the spans: the public key id and the session id are in them.
    expect(everything).toContain(keyId);
    expect(everything).toContain(SESSION_ID);
    for (const secret of [key, key.slice(3), ADMIN_TOKEN, MESSAGE, USER_ID, TOOL_INPUT, TOOL_OUTPUT, 'ha_notarealkeyatall']) expect(everything).not.toContain(secret);
  });
});

// Waits below allow for a loaded machine; the test's own deadline is longer than any of them.
describe('traces of retries, upstream failures, sampling and user ids', { timeout: 180_000 }, () => {
  let receiver: OtlpReceiver;
  let runner: FakeUpstream;
  const gateways: TestGateway[] = [];

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    runner = await startFakeUpstream(agentRunner);
  });

  afterEach(async () => {
    for (const gateway of gateways.splice(0)) await gateway.close();
  });

  afterAll(async () => {
    await runner.close();
    await receiver.close();
  });

  async function gatewayWith(agents: Record<string, string | Record<string, unknown>>, telemetry: Record<string, unknown> = {}): Promise<{ gateway: TestGateway; key: string }> {
    const gateway = await startTestGateway({ agents, config: { telemetry: { otlp_endpoint: receiver.url, ...telemetry } } });
    gateways.push(gateway);
    return { gateway, key: (await gateway.createKey()).rawKey };
  }

  it('shows each attempt as its own client span: a refused target, then the retry with its resend count', async () => {
    const refused = `http://127.0.0.1:${await refusingPort()}/api/v1`;
    // The refusing target carries nearly all the weight, so the first attempt goes to it.
    const { gateway, key } = await gatewayWith({ support: { upstreams: [{ url: refused, weight: 1000 }, { url: runner.baseUrl, weight: 1 }] } });
    const found = await waitFor(
      'a request whose first attempt was refused',
      async () => {
        const res = await postChat(gateway.url, '/agents/support/api/v1/chat', key, { message: 'hi' });
        expect(res.status).toBe(200);
        await res.text();
        const traceId = traceIdOfTraceparent(runner.requests.at(-1)!.headers.traceparent);
        const { server, clients } = await traceOf(receiver, traceId);
        return clients.length === 2 ? { server, clients, traceparent: runner.requests.at(-1)!.headers.traceparent } : undefined;
      },
      60_000,
    );
    const [first, second] = [...found.clients].sort((a, b) => (a.startNs < b.startNs ? -1 : 1));
    expect(first!.parentSpanId).toBe(found.server.spanId);
    expect(second!.parentSpanId).toBe(found.server.spanId);
    expect(first!.attributes).toMatchObject({ 'error.type': 'connect' });
    expect(first!.statusCode).toBe(ERROR);
    expect(first!.attributes).not.toHaveProperty('http.response.status_code');
    expect(second!.attributes).toMatchObject({ 'http.request.resend_count': 1, 'http.response.status_code': 200, 'server.port': runner.port });
    // The runner that answered saw the second attempt's span as its parent.
    expect(found.traceparent).toBe(`00-${found.server.traceId}-${second!.spanId}-01`);
    expect(found.server.attributes['agentgw.outcome']).toBe('ok');
  });

  it('marks a request the runner could not take as an error: agent_unavailable on the server span, the failure kind on the attempt', async () => {
    const { gateway, key } = await gatewayWith({ down: `http://127.0.0.1:${await refusingPort()}/api/v1` });
    const traceId = 'cd'.repeat(16);
    const res = await postChat(gateway.url, '/agents/down/api/v1/chat', key, { message: 'hi' }, { traceparent: `00-${traceId}-${CLIENT_SPAN}-01` });
    expect(res.status).toBe(503);
    await res.text();
    const { server, clients } = await traceOf(receiver, traceId);
    expect(server.attributes).toMatchObject({ 'error.type': 'agent_unavailable', 'agentgw.outcome': 'upstream_error', 'http.response.status_code': 503 });
    expect(server.statusCode).toBe(ERROR);
    expect(clients[0]!.attributes['error.type']).toBe('connect');
    expect(clients[0]!.statusCode).toBe(ERROR);
  });

  it('samples new traces by ratio and follows a sampled parent (parent-based); an unsampled request tells the runner so', async () => {
    const { gateway, key } = await gatewayWith({ support: runner.baseUrl }, { sample_ratio: 0 });
    const before = receiver.requests;
    const unsampled = await postChat(gateway.url, '/agents/support/api/v1/chat', key, { message: 'hi' });
    expect(unsampled.status).toBe(200);
    await unsampled.text();
    const sentUnsampled = String(runner.requests.at(-1)!.headers.traceparent);
    expect(sentUnsampled).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/);
    const sampledTrace = 'ef'.repeat(16);
    const sampled = await postChat(gateway.url, '/agents/support/api/v1/chat', key, { message: 'hi' }, { traceparent: `00-${sampledTrace}-${CLIENT_SPAN}-01` });
    expect(sampled.status).toBe(200);
    await sampled.text();
    await traceOf(receiver, sampledTrace);
    // The sampled one arrived; the one sampled out never does (the flush after close sends anything queued).
    await gateway.close();
    gateways.splice(gateways.indexOf(gateway), 1);
    expect(receiver.requests).toBeGreaterThan(before);
    expect(spansOf(receiver, traceIdOfTraceparent(sentUnsampled))).toEqual([]);
  });

  it('exports user.id only with include_user_id: true', async () => {
    const { gateway, key } = await gatewayWith({ support: runner.baseUrl }, { include_user_id: true });
    const traceId = '12'.repeat(16);
    const res = await postChat(gateway.url, '/agents/support/api/v1/chat', key, { message: 'hi', context: { user_id: USER_ID } }, { traceparent: `00-${traceId}-${CLIENT_SPAN}-01` });
    expect(res.status).toBe(200);
    await res.text();
    const { server } = await traceOf(receiver, traceId);
    expect(server.attributes['user.id']).toBe(USER_ID);
  });

  it('bounds what a hostile runner or client puts in a span: events, attribute lengths, a garbled traceparent', async () => {
    const hostile = await startFakeUpstream((_req, res) => {
      const body = JSON.stringify({
        response: 'x',
        // Under the 1 MiB the relay keeps to read an answer: 200 calls of 3,000-character names.
        tool_calls: Array.from({ length: 200 }, (_, i) => ({ tool: `t${i}-${'y'.repeat(3000)}` })),
        metadata: { model: 'm'.repeat(5000), tokens_used: 1 },
      });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    });
    try {
      const { gateway, key } = await gatewayWith({ support: hostile.baseUrl });
      // A session id longer than the API allows is refused before any span attribute takes it.
      const tooLong = await postChat(gateway.url, '/agents/support/api/v1/chat', key, { message: 'hi', context: { session_id: 's'.repeat(20_000) } });
      expect(tooLong.status).toBe(400);
      await tooLong.text();
      // A traceparent of the reserved version ff, with the longest session id the API takes.
      const res = await postChat(gateway.url, '/agents/support/api/v1/chat', key, { message: 'hi', context: { session_id: 's'.repeat(256) } }, { traceparent: `ff-${'9'.repeat(32)}-${CLIENT_SPAN}-01` });
      expect(res.status).toBe(200);
      await res.text();
      const traceId = traceIdOfTraceparent(hostile.requests.at(-1)!.headers.traceparent);
      expect(traceId).not.toBe('9'.repeat(32));
      const { server } = await traceOf(receiver, traceId);
      expect(server.parentSpanId).toBe('');
      expect(server.events.length).toBeLessThanOrEqual(128);
      expect(server.events.length).toBeGreaterThan(0);
      for (const event of server.events) expect(String(event.attributes['gen_ai.tool.name']).length).toBeLessThanOrEqual(1024);
      expect(String(server.attributes['gen_ai.conversation.id']).length).toBe(256);
      expect(String(server.attributes['gen_ai.response.model']).length).toBe(1024);
    } finally {
      await hostile.close();
    }
  });
});
