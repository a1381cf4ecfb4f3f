// Traces of the MCP front door (docs/mcp.md "Traces"): a tools/call through the gateway makes a
// server span named by the OpenTelemetry MCP conventions (`tools/call {tool}`), a child of the
// client's traceparent, with the method, protocol revision, session, JSON-RPC id and tool
// name, never the arguments; the MCP server receives the span as its parent.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startTestMcpServer, type TestMcpServer } from '../helpers/mcp-servers.js';
import { startOtlpReceiver, type OtlpReceiver } from '../helpers/otlp-receiver.js';
import { waitFor } from '../helpers/wait.js';

const TRACE_ID = 'c'.repeat(32);
const CLIENT_SPAN = '00f067aa0ba902b7';
const ARGUMENT = 'argument-text-never-exported-5d1a';
let receiver: OtlpReceiver;
let mcp: TestMcpServer;
let gateway: TestGateway;
let key: string;

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  mcp = await startTestMcpServer();
  gateway = await startTestGateway({
    agents: { support: 'http://127.0.0.1:9/api/v1' },
    config: { telemetry: { otlp_endpoint: receiver.url, service_name: 'mcp-under-test' }, mcp_servers: { files: { upstream: mcp.url } } },
  });
  key = (await gateway.createKey({ mcp: { files: ['echo'] } })).rawKey;
}, 60_000);

afterAll(async () => {
  await gateway?.close();
  await mcp?.close();
  await receiver?.close();
});

function post(body: unknown, headers: Record<string, string>, path = '/mcp/files'): Promise<Response> {
  return fetch(`${gateway.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18', ...headers },
    body: JSON.stringify(body),
  });
}

describe('traces of the MCP front door', () => {
  it('a tools/call span by the MCP conventions, the client span its parent, the server its child', async () => {
    const init = await post({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } }, {});
    await init.text();
    const session = init.headers.get('mcp-session-id')!;
    const call = await post({ jsonrpc: '2.0', id: 'call-1', method: 'tools/call', params: { name: 'echo', arguments: { text: ARGUMENT } } }, { 'mcp-session-id': session, traceparent: `00-${TRACE_ID}-${CLIENT_SPAN}-01` });
    expect(call.status).toBe(200);
    await call.text();
    const span = await waitFor('the tools/call span', () => receiver.spans.find((s) => s.traceId === TRACE_ID), 30_000);
    expect(span.name).toBe('tools/call echo');
    expect(span.kind).toBe(2);
    expect(span.parentSpanId).toBe(CLIENT_SPAN);
    expect(span.attributes).toMatchObject({
      'mcp.method.name': 'tools/call',
      'mcp.protocol.version': '2025-06-18',
      'mcp.session.id': session,
      'jsonrpc.request.id': 'call-1',
      'gen_ai.tool.name': 'echo',
      'gen_ai.operation.name': 'execute_tool',
      'http.response.status_code': 200,
    });
    expect(JSON.stringify({ name: span.name, attributes: span.attributes, events: span.events })).not.toContain(ARGUMENT);
    const forwarded = mcp.seen.find((request) => request.body.includes('call-1'))!;
    expect(forwarded.headers.traceparent).toBe(`00-${TRACE_ID}-${span.spanId}-01`);
  });

  it('a tools/call through the aggregated /mcp makes the same span, named by the server\'s own tool name', async () => {
    const traceId = 'd'.repeat(32);
    const init = await post({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } }, {}, '/mcp');
    await init.text();
    const session = init.headers.get('mcp-session-id')!;
    const call = await post({ jsonrpc: '2.0', id: 'agg-call-1', method: 'tools/call', params: { name: 'files__echo', arguments: { text: ARGUMENT } } }, { 'mcp-session-id': session, traceparent: `00-${traceId}-${CLIENT_SPAN}-01` }, '/mcp');
    expect(call.status).toBe(200);
    await call.text();
    const span = await waitFor('the tools/call span', () => receiver.spans.find((s) => s.traceId === traceId), 30_000);
    expect(span.name).toBe('tools/call echo');
    expect(span.parentSpanId).toBe(CLIENT_SPAN);
    expect(span.attributes).toMatchObject({ 'mcp.method.name': 'tools/call', 'mcp.session.id': session, 'jsonrpc.request.id': 'agg-call-1', 'gen_ai.tool.name': 'echo', 'agentgw.mcp_server': 'files' });
    expect(JSON.stringify({ name: span.name, attributes: span.attributes, events: span.events })).not.toContain(ARGUMENT);
    const forwarded = mcp.seen.find((request) => request.body.includes('agg-call-1'))!;
    expect(forwarded.headers.traceparent).toBe(`00-${traceId}-${span.spanId}-01`);
  });
});
