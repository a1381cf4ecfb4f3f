// What a runner's response head may carry to clients (issue 33, finding 4 and the
// Set-Cookie/HSTS item; docs/security.md "What a runner's answer may do"): connection-specific
// fields (RFC 9113 8.2.2, `HTTP2-Settings` among them) never reach an HTTP/2 client, which is
// answered rather than left hanging; `Set-Cookie` and `Strict-Transport-Security` are never
// relayed, over HTTP/1.1 or HTTP/2.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readAuditFile } from '../helpers/audit-records.js';
import { chatResponse, startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { makeTestCertificates, type TestCertificates } from '../helpers/tls-certs.js';
import { clientTls, http2Post, httpsPost, openHttp2, type ClientTls } from '../helpers/tls-clients.js';
import { waitFor } from '../helpers/wait.js';

const CHAT = '/agents/support/api/v1/chat';
const STREAM = '/agents/support/api/v1/chat/stream';

let certs: TestCertificates;
let tls: ClientTls;
let upstream: FakeUpstream;
let hints: FakeUpstream;
let gateway: TestGateway;
let apiKey: string;

/** A runner's whole answer: a stream of one token and done, or a JSON answer saying `text`. */
function answer(req: IncomingMessage, res: ServerResponse, text: string): void {
  if (req.url?.endsWith('/chat/stream')) {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.end('event: token\ndata: {"content":"hi"}\n\nevent: done\ndata: {"tokens_used":1,"latency_ms":1}\n\n');
    return;
  }
  const body = JSON.stringify(chatResponse(text, 1));
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

beforeAll(async () => {
  certs = await makeTestCertificates('localhost');
  tls = await clientTls([certs.ca]);
  // Every answer carries the headers under test.
  upstream = await startFakeUpstream((req, res) => {
    res.setHeader('HTTP2-Settings', 'AAMAAABkAAQAAP__');
    res.setHeader('Set-Cookie', ['agentgw_session=stolen; Path=/', 'runner=1']);
    res.setHeader('Strict-Transport-Security', 'max-age=31536000; includeSubDomains');
    res.setHeader('X-Runner', 'kept');
    answer(req, res, 'hi');
  });
  // Worth-fixing item: a runner that sends 103 Early Hints before its answer.
  hints = await startFakeUpstream((req, res) => {
    res.writeEarlyHints({ link: '</style.css>; rel=preload; as=style' });
    answer(req, res, 'hinted');
  });
  gateway = await startTestGateway({ agents: { support: upstream.baseUrl, hints: hints.baseUrl }, config: { listen: { tls: { cert: certs.serverCert, key: certs.serverKey } } } });
  ({ rawKey: apiKey } = await gateway.createKey({ account: 'runner-headers' }));
});

afterAll(async () => {
  await gateway?.close();
  await upstream?.close();
  await hints?.close();
  await certs?.remove();
});

describe('a runner answering with connection-specific and origin-state headers', () => {
  it.each([CHAT, STREAM])('HTTP/2 %s: answered 200 without HTTP2-Settings, Set-Cookie or HSTS; the audit records what the client got', async (path) => {
    const session = await openHttp2(gateway.running.port, tls);
    try {
      const answer = await http2Post(session, path, apiKey, { message: 'hi' });
      expect(answer.headers[':status']).toBe(200);
      expect(answer.headers['http2-settings']).toBeUndefined();
      expect(answer.headers['set-cookie']).toBeUndefined();
      expect(answer.headers['strict-transport-security']).toBeUndefined();
      expect(answer.headers['x-runner']).toBe('kept');
      const requestId = answer.headers['x-request-id'];
      const record = await waitFor('the audit record', async () => (await readAuditFile(join(gateway.dir, 'audit.jsonl'))).find((r) => r.request_id === requestId), 10_000);
      expect(record.status).toBe(200);
      expect(record.outcome).toBe('ok');
    } finally {
      session.close();
    }
  });

  it('HTTP/1.1: neither HTTP2-Settings, Set-Cookie nor HSTS is relayed', async () => {
    const answer = await httpsPost(gateway.running.port, CHAT, { tls, apiKey, body: { message: 'hi' } });
    expect(answer.status).toBe(200);
    expect(answer.headers['http2-settings']).toBeUndefined();
    expect(answer.headers['set-cookie']).toBeUndefined();
    expect(answer.headers['strict-transport-security']).toBeUndefined();
    expect(answer.headers['x-runner']).toBe('kept');
  });
});

describe('a runner sending 103 Early Hints before its answer', () => {
  it.each(['chat', 'chat/stream'])('/%s: the hints are skipped and the answer relayed, over HTTP/1.1 and HTTP/2', async (route) => {
    const path = `/agents/hints/api/v1/${route}`;
    const viaH1 = await httpsPost(gateway.running.port, path, { tls, apiKey, body: { message: 'hi' } });
    expect(viaH1.status).toBe(200);
    expect(viaH1.headers.link).toBeUndefined();
    const session = await openHttp2(gateway.running.port, tls);
    try {
      const viaH2 = await http2Post(session, path, apiKey, { message: 'hi' });
      expect(viaH2.headers[':status']).toBe(200);
      for (const answer of [viaH1.body, viaH2.body]) expect(answer).toContain(route === 'chat' ? 'hinted' : 'event: done');
    } finally {
      session.close();
    }
  });
});
