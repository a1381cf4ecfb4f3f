// The request path against real sockets: routes, every validation rule and error type,
// request ids and header hygiene both ways.
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeUpstream, chatResponse, type FakeUpstream } from '../helpers/fake-upstream.js';
import { postChat, startTestGateway, type TestGateway } from '../helpers/gateway.js';

let upstream: FakeUpstream;
let gateway: TestGateway;
let key: string;
let keyId: string;

beforeAll(async () => {
  upstream = await startFakeUpstream();
  gateway = await startTestGateway({
    agents: {
      support: { upstream: upstream.baseUrl, tools: ['search', 'calculator'], max_tokens: 100, host: 'support.example.com' },
      sales: upstream.baseUrl,
    },
    config: { limits: { max_body_bytes: 4096, max_message_chars: 50 } },
  });
  ({ rawKey: key, keyId } = await gateway.createKey({ agents: ['support', 'sales'] }));
});

afterAll(async () => {
  await gateway?.close();
  await upstream?.close();
});

interface ErrorBody {
  error: { type: string; message: string; request_id: string; param?: string };
}

async function expectError(response: Response, status: number, type: string, param?: string): Promise<ErrorBody> {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  const body = (await response.json()) as ErrorBody;
  expect(body.error.type).toBe(type);
  expect(body.error.message.length).toBeGreaterThan(0);
  expect(body.error.request_id).toBe(response.headers.get('x-request-id'));
  if (param !== undefined) expect(body.error.param).toBe(param);
  return body;
}

describe('routes', () => {
  it('answers /chat with the upstream status, headers and body', async () => {
    const before = upstream.requests.length;
    const response = await postChat(gateway.url, '/agents/support/api/v1/chat', key, { message: 'hi' });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual(chatResponse());
    expect(upstream.requests.length).toBe(before + 1);
    expect(upstream.requests.at(-1)!.path).toBe('/api/v1/chat');
  });

  it('routes by host on /api/v1/...', async () => {
    const response = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpRequest(`${gateway.url}/api/v1/chat`, { method: 'POST', headers: { host: 'support.example.com', authorization: `Bearer ${key}`, 'content-type': 'application/json' } }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on('error', reject);
      req.end('{"message":"hi"}');
    });
    expect(response.status).toBe(200);
    expect(JSON.parse(response.body)).toEqual(chatResponse());
  });

  it('answers 404 not_found for unknown agents and paths, 405 with Allow: POST for other methods', async () => {
    await expectError(await postChat(gateway.url, '/agents/nobody/api/v1/chat', key, { message: 'hi' }), 404, 'not_found');
    await expectError(await postChat(gateway.url, '/agents/support/api/v1/other', key, { message: 'hi' }), 404, 'not_found');
    await expectError(await fetch(`${gateway.url}/`), 404, 'not_found');
    const response = await fetch(`${gateway.url}/agents/support/api/v1/chat`, { method: 'GET', headers: { authorization: `Bearer ${key}` } });
    await expectError(response, 405, 'method_not_allowed');
    expect(response.headers.get('allow')).toBe('POST');
  });

  it('rejects a missing key with 401 and WWW-Authenticate before reading the body', async () => {
    const response = await postChat(gateway.url, '/agents/support/api/v1/chat', undefined, { message: 'hi' });
    await expectError(response, 401, 'missing_api_key');
    expect(response.headers.get('www-authenticate')).toBe('Bearer');
    expect(response.headers.get('x-ratelimit-limit')).toBeNull();
  });
});

describe('body validation', () => {
  const path = '/agents/support/api/v1/chat';

  it('needs application/json (charset allowed): 415 otherwise', async () => {
    await expectError(await postChat(gateway.url, path, key, '{"message":"hi"}', { 'content-type': 'text/plain' }), 415, 'unsupported_media_type');
    const noType = await fetch(`${gateway.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: new Uint8Array(Buffer.from('{"message":"hi"}')) });
    await expectError(noType, 415, 'unsupported_media_type');
    const withCharset = await postChat(gateway.url, path, key, { message: 'hi' }, { 'content-type': 'application/json; charset=utf-8' });
    expect(withCharset.status).toBe(200);
    await withCharset.arrayBuffer();
  });

  it('answers 413 for a body over limits.max_body_bytes, declared or chunked', async () => {
    const big = JSON.stringify({ message: 'x'.repeat(5000) });
    await expectError(await postChat(gateway.url, path, key, big), 413, 'payload_too_large');
    const chunked = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < 10; i++) controller.enqueue(new Uint8Array(1000).fill(0x61));
        controller.close();
      },
    });
    const response = await fetch(`${gateway.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: chunked,
      duplex: 'half',
    } as RequestInit);
    await expectError(response, 413, 'payload_too_large');
  });

  it.each([
    ['', 'empty body'],
    ['{"message": "hi"', 'truncated JSON'],
    ['not json', 'not JSON'],
  ])('answers invalid_json for %j (%s)', async (body) => {
    await expectError(await postChat(gateway.url, path, key, body), 400, 'invalid_json');
  });

  it('answers invalid_json for invalid UTF-8', async () => {
    const response = await fetch(`${gateway.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: new Uint8Array([0x7b, 0x22, 0x6d, 0x65, 0x73, 0x73, 0x61, 0x67, 0x65, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0x22, 0x7d]),
    });
    await expectError(response, 400, 'invalid_json');
  });

  it.each([
    [{ message: '' }, 'message'],
    [{ message: 'x'.repeat(51) }, 'message'],
    [{ message: 1 }, 'message'],
    [{ context: {} }, 'message'],
    [{ message: 'hi', context: 'x' }, 'context'],
    [{ message: 'hi', context: { user_id: 5 } }, 'context.user_id'],
    [{ message: 'hi', context: { session_id: [] } }, 'context.session_id'],
    [{ message: 'hi', tools: ['search', 'search'] }, 'tools[1]'],
    [{ message: 'hi', tools: ['shell'] }, 'tools[0]'],
    [{ message: 'hi', tools: 'search' }, 'tools'],
    [{ message: 'hi', temperature: 3 }, 'temperature'],
    [{ message: 'hi', max_tokens: 101 }, 'max_tokens'],
    [{ message: 'hi', max_tokens: 0 }, 'max_tokens'],
    [[1, 2], 'body'],
  ])('answers invalid_request for %j naming %s, without calling the upstream', async (body, param) => {
    const before = upstream.requests.length;
    await expectError(await postChat(gateway.url, path, key, body), 400, 'invalid_request', param);
    expect(upstream.requests.length).toBe(before);
  });

  it('forwards unknown top-level fields and the exact body bytes', async () => {
    const text = '{"message":"hi",  "custom":{"a":1},"temperature":0.5}';
    const response = await postChat(gateway.url, path, key, text);
    expect(response.status).toBe(200);
    await response.arrayBuffer();
    expect(upstream.requests.at(-1)!.body.toString()).toBe(text);
  });
});

describe('request ids and header hygiene', () => {
  const path = '/agents/sales/api/v1/chat';

  it('echoes a sane client X-Request-Id and generates one otherwise', async () => {
    const echoed = await postChat(gateway.url, path, key, { message: 'hi' }, { 'x-request-id': 'client-abc.123' });
    expect(echoed.headers.get('x-request-id')).toBe('client-abc.123');
    expect(upstream.requests.at(-1)!.headers['x-request-id']).toBe('client-abc.123');
    const replaced = await postChat(gateway.url, path, key, { message: 'hi' }, { 'x-request-id': 'bad id with spaces' });
    expect(replaced.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const error = await postChat(gateway.url, '/agents/nobody/api/v1/chat', key, { message: 'hi' });
    expect(error.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('strips credentials, hop-by-hop and spoofed identity headers, and states identity to the upstream', async () => {
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const response = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(
        `${gateway.url}${path}`,
        {
          method: 'POST',
          headers: {
            authorization: `Bearer ${key}`,
            'content-type': 'application/json',
            connection: 'keep-alive, x-secret-hop',
            'x-secret-hop': 'must not pass',
            'keep-alive': 'timeout=5',
            te: 'trailers',
            'proxy-authorization': 'Basic Zm9vOmJhcg==',
            'x-key-id': 'key_spoofed',
            'x-account-id': 'someone-else',
            'x-forwarded-for': '6.6.6.6',
            'x-custom': 'kept',
            traceparent,
          },
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        },
      );
      req.on('error', reject);
      req.end('{"message":"hi"}');
    });
    expect(response).toBe(200);
    const seen = upstream.requests.at(-1)!.headers;
    expect(seen.authorization).toBeUndefined();
    expect(seen['proxy-authorization']).toBeUndefined();
    expect(seen['x-secret-hop']).toBeUndefined();
    expect(seen['keep-alive']).toBeUndefined();
    expect(seen.te).toBeUndefined();
    expect(seen['x-custom']).toBe('kept');
    expect(seen['x-agent-id']).toBe('sales');
    expect(seen['x-key-id']).toBe(keyId);
    expect(seen['x-account-id']).toBe('acme');
    expect(seen['x-forwarded-for']).toBe('127.0.0.1');
    expect(seen['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(seen.traceparent).toBe(traceparent);
    expect(JSON.stringify(seen)).not.toContain(key);
  });

  it('starts a trace when the client sends none', async () => {
    const response = await postChat(gateway.url, path, key, { message: 'hi' });
    await response.arrayBuffer();
    expect(upstream.requests.at(-1)!.headers.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
  });

  it('strips the upstream hop-by-hop headers and keeps the rest', async () => {
    upstream.handle((_req, res) => {
      const body = JSON.stringify(chatResponse());
      res.writeHead(201, { 'content-type': 'application/json', 'x-runner': 'r1', connection: 'x-internal', 'x-internal': 'secret', 'x-request-id': 'upstream-id' });
      res.end(body);
    });
    try {
      const response = await postChat(gateway.url, path, key, { message: 'hi' }, { 'x-request-id': 'mine' });
      expect(response.status).toBe(201);
      expect(response.headers.get('x-runner')).toBe('r1');
      expect(response.headers.get('x-internal')).toBeNull();
      expect(response.headers.get('x-request-id')).toBe('mine');
      expect(await response.json()).toEqual(chatResponse());
    } finally {
      upstream.handle((req, res, seen) => void import('../helpers/fake-upstream.js').then((m) => m.defaultHandler(req, res, seen)));
    }
  });

  it('passes upstream 4xx and 5xx answers through unchanged', async () => {
    upstream.handle((_req, res) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end('{"error":"runner exploded"}');
    });
    try {
      const response = await postChat(gateway.url, path, key, { message: 'hi' });
      expect(response.status).toBe(500);
      expect(await response.text()).toBe('{"error":"runner exploded"}');
    } finally {
      upstream.handle((req, res, seen) => void import('../helpers/fake-upstream.js').then((m) => m.defaultHandler(req, res, seen)));
    }
  });
});
