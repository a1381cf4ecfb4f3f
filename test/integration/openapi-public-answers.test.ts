// The public chat routes' answers match openapi/agent-chat.yaml: a 200 JSON chat, the SSE
// stream's content type, and every gateway error type a request can produce here (each
// with its documented headers: WWW-Authenticate, Allow, Retry-After, rate-limit headers).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { refusingPort } from '../helpers/free-port.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { OpenApiCheck } from '../helpers/openapi-check.js';

const doc = new OpenApiCheck('agent-chat');
let upstream: FakeUpstream;
let gw: TestGateway;
let key: string;
let limitedKey: string;

beforeAll(async () => {
  upstream = await startFakeUpstream();
  gw = await startTestGateway({
    agents: { support: upstream.baseUrl, down: `http://127.0.0.1:${await refusingPort()}/api/v1` },
    config: { plans: { roomy: { windows: [{ requests: 1000, per: '1m' }] }, tiny: { windows: [{ requests: 1, per: '1h' }] } }, limits: { max_body_bytes: 2048 } },
  });
  key = (await gw.createKey({ plan: 'roomy', account: 'acme' })).rawKey;
  limitedKey = (await gw.createKey({ plan: 'tiny', account: `tiny-${randomUUID()}` })).rawKey;
});

afterAll(async () => {
  await gw?.close();
  await upstream?.close();
});

function post(path: string, options: { key?: string | null; body?: string; headers?: Record<string, string>; method?: string } = {}) {
  const headers: Record<string, string> = { 'content-type': 'application/json', ...options.headers };
  const k = options.key === undefined ? key : options.key;
  if (k !== null) headers.authorization = `Bearer ${k}`;
  return doc.fetch(`${gw.url}${path}`, { method: options.method ?? 'POST', headers, body: options.body ?? JSON.stringify({ message: 'hi' }) });
}

const type = (body: unknown) => (body as { error: { type: string } }).error.type;

describe('public answers against openapi/agent-chat.yaml', () => {
  it('a JSON chat, an event stream, and each error type', async () => {
    const chat = await post('/agents/support/api/v1/chat');
    expect(chat.status).toBe(200);
    expect(chat.headers.get('x-ratelimit-limit')).toBe('1000');
    const stream = await post('/agents/support/api/v1/chat/stream');
    expect([stream.status, stream.headers.get('content-type')]).toEqual([200, 'text/event-stream']);
    expect(stream.text).toContain('event: done');

    const cases: [string, Awaited<ReturnType<typeof post>>, number][] = [
      ['invalid_json', await post('/agents/support/api/v1/chat', { body: '{"message":' }), 400],
      ['invalid_request', await post('/agents/support/api/v1/chat', { body: JSON.stringify({ message: 'hi', temperature: 9 }) }), 400],
      ['missing_api_key', await post('/agents/support/api/v1/chat', { key: null }), 401],
      ['invalid_api_key', await post('/agents/support/api/v1/chat', { key: 'ha_notakey' }), 401],
      ['not_found', await post('/agents/nobody/api/v1/chat'), 404],
      ['payload_too_large', await post('/agents/support/api/v1/chat', { body: JSON.stringify({ message: 'x'.repeat(4096) }) }), 413],
      ['unsupported_media_type', await post('/agents/support/api/v1/chat', { headers: { 'content-type': 'text/plain' } }), 415],
      ['agent_unavailable', await post('/agents/down/api/v1/chat'), 503],
    ];
    await post('/agents/support/api/v1/chat', { key: limitedKey });
    cases.push(['rate_limit_exceeded', await post('/agents/support/api/v1/chat', { key: limitedKey }), 429]);
    const wrongMethod = await doc.fetch(`${gw.url}/agents/support/api/v1/chat`, { method: 'PUT', headers: { authorization: `Bearer ${key}` } });
    cases.push(['method_not_allowed', wrongMethod, 405]);
    for (const [expected, answer, status] of cases) expect([answer.status, type(answer.body)], expected).toEqual([status, expected]);
    expect(cases.find(([t]) => t === 'missing_api_key')![1].headers.get('www-authenticate')).toBe('Bearer');
    expect(cases.find(([t]) => t === 'rate_limit_exceeded')![1].headers.get('retry-after')).toMatch(/^\d+$/);
    expect(wrongMethod.headers.get('allow')).toBe('POST');
  });
});
