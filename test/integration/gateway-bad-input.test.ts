// Hostile bytes on a raw socket: every one gets a clear 4xx (or a closed connection for
// bytes that are not HTTP at all), and the server keeps serving good requests.
import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { postChat, startTestGateway, type TestGateway } from '../helpers/gateway.js';

let upstream: FakeUpstream;
let gateway: TestGateway;
let key: string;

beforeAll(async () => {
  upstream = await startFakeUpstream();
  gateway = await startTestGateway({ agents: { support: upstream.baseUrl } });
  ({ rawKey: key } = await gateway.createKey());
});

afterAll(async () => {
  await gateway?.close();
  await upstream?.close();
});

/** Writes raw bytes and returns everything the server sent back before closing (or 2 s). */
function rawExchange(bytes: Buffer | string, port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let received = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(received);
    }, 2_000);
    socket.on('data', (chunk) => (received += chunk.toString('latin1')));
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(received);
    });
    socket.write(bytes);
  });
}

function statusOf(response: string): number {
  return Number(/^HTTP\/1\.1 (\d{3})/.exec(response)?.[1] ?? 0);
}

async function expectStillServing(): Promise<void> {
  const response = await postChat(gateway.url, '/agents/support/api/v1/chat', key, { message: 'still there?' });
  expect(response.status).toBe(200);
  await response.arrayBuffer();
}

describe('hostile input on the socket', () => {
  const port = () => gateway.running.port;

  it('answers 400 to a malformed request line and random bytes', async () => {
    expect(statusOf(await rawExchange('GARBAGE / HTTP/9.9\r\n\r\n', port()))).toBe(400);
    for (let i = 0; i < 20; i++) {
      const response = await rawExchange(randomBytes(256 + i * 50), port());
      expect([0, 400]).toContain(statusOf(response));
    }
    await expectStillServing();
  });

  it('answers 431 to oversized headers', async () => {
    const response = await rawExchange(`POST /agents/support/api/v1/chat HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, port());
    expect(statusOf(response)).toBe(431);
    expect(response).toContain('request_header_fields_too_large');
    await expectStillServing();
  });

  it('answers 400 to conflicting Content-Length and Transfer-Encoding', async () => {
    const request =
      'POST /agents/support/api/v1/chat HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
      `Authorization: Bearer ${key}\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`;
    expect(statusOf(await rawExchange(request, port()))).toBe(400);
    const twoLengths = `POST /agents/support/api/v1/chat HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello`;
    expect(statusOf(await rawExchange(twoLengths, port()))).toBe(400);
    await expectStillServing();
  });

  it('answers JSON errors to CONNECT (405), and an unknown Expect (417)', async () => {
    const connect = await rawExchange('CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n', port());
    expect(statusOf(connect)).toBe(405);
    expect(connect).toContain('"method_not_allowed"');
    const expect417 = await rawExchange(
      `POST /agents/support/api/v1/chat HTTP/1.1\r\nHost: x\r\nExpect: teapot\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`,
      port(),
    );
    expect(statusOf(expect417)).toBe(417);
    expect(expect417).toContain('"expectation_failed"');
    await expectStillServing();
  });

  it('answers 413 to a 10 MB body without reading all of it', async () => {
    const body = Buffer.alloc(10 * 1024 * 1024, 0x61);
    const response = await fetch(`${gateway.url}/agents/support/api/v1/chat`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: new Uint8Array(body),
    }).catch((error: Error) => error);
    if (response instanceof Error) {
      // The server may close the socket while the client is still sending; that is a refusal too.
      expect(response.message).toMatch(/fetch failed|socket|closed|reset/i);
    } else {
      expect(response.status).toBe(413);
      expect(((await response.json()) as { error: { type: string } }).error.type).toBe('payload_too_large');
    }
    await expectStillServing();
  });

  it('answers 400 invalid_json to deep nesting and wrong shapes, and keeps serving', async () => {
    const deep = '['.repeat(50_000) + ']'.repeat(50_000);
    const nested = await postChat(gateway.url, '/agents/support/api/v1/chat', key, deep);
    expect(nested.status).toBe(400);
    await nested.arrayBuffer();
    for (const body of ['null', '42', '"text"', '{"message":{"nested":true}}', '{"message":"x","tools":[null]}']) {
      const response = await postChat(gateway.url, '/agents/support/api/v1/chat', key, body);
      expect(response.status).toBe(400);
      await response.arrayBuffer();
    }
    await expectStillServing();
  });
});
