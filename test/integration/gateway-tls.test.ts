// TLS on the public listener against real sockets (docs/operations.md "TLS"): /chat and
// /chat/stream over HTTPS, HTTP/1.1 and HTTP/2 on one port by ALPN, plain HTTP refused,
// certificates replaced on disk served to new connections without a restart while an open
// connection keeps working, a bad replacement kept out, and mutual TLS. Certificates are made
// per run with the openssl CLI (helpers/tls-certs.ts).
import { once } from 'node:events';
import { copyFile, rename, writeFile } from 'node:fs/promises';
import { connect as connectTcp } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultHandler, startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { makeTestCertificates, type TestCertificates } from '../helpers/tls-certs.js';
import { clientTls, http2Post, httpsPost, oneConnectionAgent, openHttp2, servedFingerprint, fingerprintOf, replaceFile, type ClientTls } from '../helpers/tls-clients.js';
import { waitFor } from '../helpers/wait.js';

const CHAT = '/agents/support/api/v1/chat';
const STREAM = '/agents/support/api/v1/chat/stream';

let first: TestCertificates;
let second: TestCertificates;
let upstream: FakeUpstream;
/** Trusts both test CAs, so it connects whichever certificate is served. */
let trustBoth: ClientTls;


beforeAll(async () => {
  [first, second] = await Promise.all([makeTestCertificates('localhost'), makeTestCertificates('localhost')]);
  upstream = await startFakeUpstream();
  trustBoth = await clientTls([first.ca, second.ca]);
});

afterAll(async () => {
  await upstream?.close();
  await first?.remove();
  await second?.remove();
});

/** A gateway whose listener serves copies of `first`'s server certificate (so a test can replace them). */
async function tlsGateway(tls: Record<string, unknown>): Promise<{ gateway: TestGateway; port: number; apiKey: string; certFile: string; keyFile: string }> {
  const certFile = join(first.dir, `listener-${Math.random().toString(36).slice(2)}.pem`);
  const keyFile = `${certFile}.key`;
  await copyFile(first.serverCert, certFile);
  await copyFile(first.serverKey, keyFile);
  const gateway = await startTestGateway({ agents: { support: upstream.baseUrl }, config: { listen: { tls: { cert: certFile, key: keyFile, ...tls } } } });
  const { rawKey } = await gateway.createKey();
  return { gateway, port: gateway.running.port, apiKey: rawKey, certFile, keyFile };
}


describe('TLS listener (HTTP/1.1 and HTTP/2 on one port)', () => {
  let gateway: TestGateway;
  let port: number;
  let apiKey: string;
  let certFile: string;
  let keyFile: string;

  beforeAll(async () => {
    ({ gateway, port, apiKey, certFile, keyFile } = await tlsGateway({}));
  });
  afterAll(() => gateway?.close());

  it('answers /chat over HTTPS with HTTP/1.1 and tells the runner the client used https', async () => {
    const answer = await httpsPost(port, CHAT, { tls: trustBoth, apiKey, body: { message: 'hi' } });
    expect(answer.status).toBe(200);
    expect(answer.alpn).toBe('http/1.1');
    expect(JSON.parse(answer.body).response).toBe('Hello from the fake runner');
    expect(upstream.requests.at(-1)!.headers['x-forwarded-proto']).toBe('https');
  });

  it('relays /chat/stream over HTTPS with HTTP/1.1', async () => {
    const answer = await httpsPost(port, STREAM, { tls: trustBoth, apiKey, body: { message: 'hi' } });
    expect(answer.status).toBe(200);
    expect(answer.headers['content-type']).toMatch(/^text\/event-stream/);
    expect(answer.body).toContain('event: done');
  });

  it('answers /chat over HTTP/2 and its errors in the usual envelope', async () => {
    const session = await openHttp2(port, trustBoth);
    try {
      expect(session.alpnProtocol).toBe('h2');
      const ok = await http2Post(session, CHAT, apiKey, { message: 'hi' });
      expect(ok.headers[':status']).toBe(200);
      expect(JSON.parse(ok.body).response).toBe('Hello from the fake runner');
      expect(ok.headers['x-request-id']).toBeTruthy();
      const refused = await http2Post(session, CHAT, 'ha_not_a_real_key', { message: 'hi' });
      expect(refused.headers[':status']).toBe(401);
      expect(JSON.parse(refused.body).error.type).toBe('invalid_api_key');
      // The same session carries the next request: the refusal did not close it.
      const again = await http2Post(session, CHAT, apiKey, { message: 'again' });
      expect(again.headers[':status']).toBe(200);
    } finally {
      session.close();
    }
  });

  it('streams SSE over HTTP/2 unbuffered: every event reaches the client before the runner writes the next', async () => {
    // The lockstep of gateway-streaming.test.ts: the runner writes event i+1 only once the
    // client holds event i; a relay that held one back would stall the loop.
    let tokensSeen = 0;
    let stalledAt = -1;
    upstream.handle(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.flushHeaders();
      for (let i = 0; i < 10; i++) {
        res.write(`event: token\ndata: {"content":"t${i} "}\n\n`);
        const seen = await waitFor(`token ${i} at the client`, () => tokensSeen > i, 5_000, 2).then(() => true, () => false);
        if (!seen) {
          stalledAt = i;
          break;
        }
      }
      res.end('event: done\ndata: {"tokens_used":10,"latency_ms":1000}\n\n');
    });
    const session = await openHttp2(port, trustBoth);
    try {
      const answer = await http2Post(session, STREAM, apiKey, { message: 'hi' }, (_chunk, all) => {
        tokensSeen = all.split('event: token\n').length - 1;
      });
      expect(stalledAt, 'the event the client never received before the next was due').toBe(-1);
      expect(answer.headers[':status']).toBe(200);
      expect(answer.headers['content-type']).toMatch(/^text\/event-stream/);
      expect(tokensSeen).toBe(10);
      expect(answer.body).toContain('event: done');
    } finally {
      session.close();
      upstream.handle(defaultHandler);
    }
  });

  it('stops the runner when an HTTP/2 client cancels its stream mid-answer', async () => {
    upstream.handle((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('event: token\ndata: {"content":"first"}\n\n');
      // …and never ends: only the gateway can close this request.
    });
    const session = await openHttp2(port, trustBoth);
    try {
      const stream = session.request({ ':method': 'POST', ':path': STREAM, 'content-type': 'application/json', authorization: `Bearer ${apiKey}` });
      stream.end(JSON.stringify({ message: 'hi' }));
      stream.on('error', () => undefined);
      await once(stream, 'data');
      const seen = upstream.requests.at(-1)!;
      stream.close(0x8); // NGHTTP2_CANCEL
      await waitFor('the runner request closed', () => seen.closed.then(() => true), 5_000);
      // The session outlives the cancelled stream.
      upstream.handle(defaultHandler);
      expect((await http2Post(session, CHAT, apiKey, { message: 'hi' })).headers[':status']).toBe(200);
    } finally {
      session.close();
      upstream.handle(defaultHandler);
    }
  });

  it('answers an oversized HTTP/2 body with 413 without closing the session', async () => {
    const session = await openHttp2(port, trustBoth);
    try {
      const answer = await http2Post(session, CHAT, apiKey, { message: 'x'.repeat(2 * 1024 * 1024) });
      expect(answer.headers[':status']).toBe(413);
      expect(JSON.parse(answer.body).error.type).toBe('payload_too_large');
      expect((await http2Post(session, CHAT, apiKey, { message: 'hi' })).headers[':status']).toBe(200);
    } finally {
      session.close();
    }
  });

  it('refuses plain HTTP on the TLS port: no HTTP answer, the connection closed, nothing forwarded', async () => {
    const forwardedBefore = upstream.requests.length;
    const socket = connectTcp({ host: '127.0.0.1', port });
    await once(socket, 'connect');
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
    socket.on('error', () => undefined);
    socket.write(`POST ${CHAT} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${apiKey}\r\nContent-Type: application/json\r\nContent-Length: 17\r\n\r\n{"message":"hi"}\n`);
    await once(socket, 'close');
    expect(received.startsWith('HTTP/')).toBe(false);
    expect(upstream.requests.length).toBe(forwardedBefore);
    // And the listener still serves TLS clients.
    expect((await httpsPost(port, CHAT, { tls: trustBoth, apiKey, body: { message: 'hi' } })).status).toBe(200);
  });

  it('serves a replaced certificate to new connections without a restart, while an open connection keeps working', async () => {
    const agent = oneConnectionAgent(trustBoth);
    try {
      const before = await httpsPost(port, CHAT, { tls: trustBoth, agent, apiKey, body: { message: 'before' } });
      expect(before.fingerprint).toBe(fingerprintOf(first.serverCert));
      await replaceFile(keyFile, second.serverKey);
      await replaceFile(certFile, second.serverCert);
      // The files are polled once a second: 5 s is the documented bound, with room for a busy machine.
      await waitFor('the new certificate on a new connection', async () => (await servedFingerprint(port, trustBoth)) === fingerprintOf(second.serverCert), 5_000, 100);
      // The connection opened before the change is still open and still answers, with its certificate.
      const after = await httpsPost(port, CHAT, { tls: trustBoth, agent, apiKey, body: { message: 'after' } });
      expect(after.status).toBe(200);
      expect(after.fingerprint).toBe(fingerprintOf(first.serverCert));
      expect(gateway.logs.join('')).toContain('TLS certificate reloaded');
    } finally {
      agent.destroy();
    }
  });

  it('keeps the running certificate when the new file is not a certificate, and logs why', async () => {
    const running = await servedFingerprint(port, trustBoth);
    await writeFile(`${certFile}.new`, '-----BEGIN CERTIFICATE-----\nnot a certificate\n-----END CERTIFICATE-----\n');
    await rename(`${certFile}.new`, certFile);
    await waitFor('the refusal in the log', () => gateway.logs.join('').includes('TLS certificate reload refused'), 5_000, 100);
    expect(await servedFingerprint(port, trustBoth)).toBe(running);
    expect((await httpsPost(port, CHAT, { tls: trustBoth, apiKey, body: { message: 'hi' } })).status).toBe(200);
    // A config reload (what SIGHUP runs) reads the files again; fixed files apply.
    await replaceFile(certFile, first.serverCert);
    await replaceFile(keyFile, first.serverKey);
    gateway.running.reload(gateway.config);
    await waitFor('the fixed certificate', async () => (await servedFingerprint(port, trustBoth)) === fingerprintOf(first.serverCert), 5_000, 100);
  });
});

describe('HTTP/2 off (listen.tls.http2: false)', () => {
  it('serves HTTPS with HTTP/1.1 only', async () => {
    const { gateway, port, apiKey } = await tlsGateway({ http2: false });
    try {
      const answer = await httpsPost(port, CHAT, { tls: trustBoth, apiKey, body: { message: 'hi' } });
      expect(answer.status).toBe(200);
      await expect(openHttp2(port, trustBoth)).rejects.toThrow();
    } finally {
      await gateway.close();
    }
  });
});

describe('graceful stop over HTTP/2', () => {
  it('drains an idle session, and ends an open stream with the shutting_down event', async () => {
    const { gateway, port, apiKey } = await tlsGateway({});
    upstream.handle((req, res) => {
      if (!req.url?.endsWith('/chat/stream')) return defaultHandler(req, res, undefined as never);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('event: token\ndata: {"content":"held"}\n\n');
    });
    try {
      const idle = await openHttp2(port, trustBoth);
      expect((await http2Post(idle, CHAT, apiKey, { message: 'hi' })).headers[':status']).toBe(200);
      const busy = await openHttp2(port, trustBoth);
      let firstEvent!: () => void;
      const gotFirst = new Promise<void>((resolve) => (firstEvent = resolve));
      const streaming = http2Post(busy, STREAM, apiKey, { message: 'hi' }, () => firstEvent());
      await gotFirst;
      const idleClosed = once(idle, 'close');
      await gateway.running.close(1_000);
      await idleClosed;
      const answer = await streaming;
      expect(answer.body).toContain('event: error');
      expect(answer.body).toContain('shutting_down');
    } finally {
      upstream.handle(defaultHandler);
      await gateway.close();
    }
  });
});

describe('mutual TLS (listen.tls.ca)', () => {
  let gateway: TestGateway;
  let port: number;
  let apiKey: string;

  beforeAll(async () => {
    ({ gateway, port, apiKey } = await tlsGateway({ ca: first.ca, min_version: 'TLSv1.3' }));
  });
  afterAll(() => gateway?.close());

  it('refuses a client without a certificate', async () => {
    await expect(httpsPost(port, CHAT, { tls: trustBoth, apiKey, body: { message: 'hi' } })).rejects.toThrow();
    await expect(openHttp2(port, trustBoth).then((session) => http2Post(session, CHAT, apiKey, { message: 'hi' }).finally(() => session.close()))).rejects.toThrow();
  });

  it('refuses a client whose certificate another CA signed', async () => {
    const stranger = await clientTls([first.ca, second.ca], second.clientCert, second.clientKey);
    await expect(httpsPost(port, CHAT, { tls: stranger, apiKey, body: { message: 'hi' } })).rejects.toThrow();
  });

  it('accepts a client with a certificate the CA signed, over HTTP/1.1 and HTTP/2', async () => {
    const client = await clientTls([first.ca], first.clientCert, first.clientKey);
    expect((await httpsPost(port, CHAT, { tls: client, apiKey, body: { message: 'hi' } })).status).toBe(200);
    const session = await openHttp2(port, client);
    try {
      expect((await http2Post(session, CHAT, apiKey, { message: 'hi' })).headers[':status']).toBe(200);
    } finally {
      session.close();
    }
  });

  it('refuses TLS 1.2 when min_version is TLSv1.3', async () => {
    const client = await clientTls([first.ca], first.clientCert, first.clientKey);
    await expect(servedFingerprint(port, { ...client, maxVersion: 'TLSv1.2' } as ClientTls)).rejects.toThrow();
  });
});

describe('start-up', () => {
  it('refuses to start when a certificate file cannot be read, naming the key and the file', async () => {
    await expect(
      startTestGateway({ agents: { support: upstream.baseUrl }, config: { listen: { tls: { cert: join(first.dir, 'missing.pem'), key: first.serverKey } } } }),
    ).rejects.toThrow(/listen\.tls\.cert: cannot read .*missing\.pem: ENOENT/);
  });
});
