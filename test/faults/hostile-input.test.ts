// The hostile-input suite (docs/security.md): the probes of the security review, each on a
// real socket against a gateway in process and a recording runner, asserting the documented
// answer and that nothing unvalidated reached the runner.
// - the eight findings: client-chosen audit ids (F1), a spoofable X-Forwarded-For (F2), a
//   nesting stall (F3), underscore twins of identity headers (F4), concurrent failed keys
//   passing the Redis throttle (F5), duplicate JSON keys (F6), Content-Encoding (F7), a raw
//   400 written into an open stream (F8), and two Host headers;
// - the classes that held: request smuggling, CR/NUL in headers, 64 KB headers, path tricks,
//   10 MB bodies, slow headers and bodies, slow SSE readers.
// Every probe carries a marker (its X-Request-Id, and the same text in its body); the last
// test checks every request the runner received against the gateway's own rules.
import { randomBytes } from 'node:crypto';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditRecord } from '../../src/audit/audit-record.js';
import { generateApiKey } from '../../src/keys/key-format.js';
import { postChat, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { referenceJsonShape } from '../helpers/reference-json-shape.js';
import { readAuditFile } from '../helpers/audit-records.js';
import { FIREHOSE_EVENT, startFaultRunner, type FaultRunner } from '../helpers/faults/fault-runner.js';
import { rawExchange } from '../helpers/faults/raw-socket.js';
import { reportRow } from '../helpers/faults/report.js';
import { sleep, waitFor } from '../helpers/wait.js';

const MB = 1024 * 1024;
const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const REQUEST_TIMEOUT_MS = 2_000;

let runner: FaultRunner;
let redis: TestRedis;
/** File key store; short header and request timeouts for the slow-client probes. */
let plain: TestGateway;
/** `trust_proxy: true`: one proxy in front; at most 5 failed keys per address. */
let trusting: TestGateway;
/** `trust_proxy` as a list of proxy addresses and ranges. */
let listing: TestGateway;
/** Redis key store (and failed-auth counter), `trust_proxy: true` so each probe has an address of its own. */
let shared: TestGateway;
let keyA: string;
let keyA2: string;
let keyB: string;
let trustingKey: string;
let listingKey: string;

beforeAll(async () => {
  runner = await startFaultRunner();
  redis = await startRedis();
  const agents = { ok: runner.baseUrl('ok'), slow: runner.baseUrl('slow'), firehose: runner.baseUrl('firehose') };
  [plain, trusting, listing, shared] = await Promise.all([
    startTestGateway({ agents, config: { listen: { headers_timeout: '1s', request_timeout: `${REQUEST_TIMEOUT_MS}ms` } } }),
    startTestGateway({ agents, config: { listen: { trust_proxy: true }, keys: { failed_auth: { max_attempts: 5, per: '1m', block_for: '1m' } } } }),
    startTestGateway({ agents, config: { listen: { trust_proxy: ['127.0.0.1', '10.0.0.0/8', '2001:db8::/32'] } } }),
    startTestGateway({
      agents,
      redisUrl: redis.url,
      config: { redis: { prefix: `hostile-${randomBytes(4).toString('hex')}:` }, listen: { trust_proxy: true }, keys: { store: 'redis', failed_auth: { max_attempts: 20, per: '1m', block_for: '1m' } } },
    }),
  ]);
  keyA = (await plain.createKey({ account: 'account-a' })).rawKey;
  keyA2 = (await plain.createKey({ account: 'account-a' })).rawKey;
  keyB = (await plain.createKey({ account: 'account-b' })).rawKey;
  trustingKey = (await trusting.createKey()).rawKey;
  listingKey = (await listing.createKey()).rawKey;
});

afterAll(async () => {
  await Promise.all([plain?.close(), trusting?.close(), listing?.close(), shared?.close()]);
  await redis?.close();
  await runner?.close();
});

let probes = 0;
/** A fresh marker: the probe's X-Request-Id, also written into its body. */
const marker = (label: string): string => `probe-${label}-${++probes}`;
const bodyWith = (id: string, extra = ''): string => `{"message":"hi","probe":"${id}"${extra}}`;

/** Whether the runner received anything carrying `id` (in a header or in the body). */
function runnerSaw(id: string): boolean {
  return runner.upstream.requests.some((r) => JSON.stringify(r.headers).includes(id) || r.body.toString('latin1').includes(id));
}

interface RawResult {
  text: string;
  statuses: number[];
  closedByServer: boolean;
}

/**
 * Writes `pieces` on a fresh socket (pausing `gapMs` between them) and reads until the server
 * closes, or `waitMs` after the last write (later data does not extend it).
 */
async function rawChatExchange(port: number, pieces: Array<string | Buffer>, options: { gapMs?: number; waitMs?: number } = {}): Promise<RawResult> {
  const gapMs = options.gapMs;
  const waitMs = options.waitMs ?? 2_000;
  let written = false;
  const { received, closedByServer } = await rawExchange(port, pieces, {
    between: gapMs ? () => sleep(gapMs) : undefined,
    // Armed once, when the last piece is written; data arriving before or after leaves it.
    idleMsAfter: () => (written ? undefined : ((written = true), waitMs)),
    boundMs: (gapMs ?? 0) * pieces.length + waitMs + 1_000,
  });
  const text = received.toString('latin1');
  // Status lines anywhere: a pipelined answer starts right after the previous body.
  return { text, statuses: [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1])), closedByServer };
}

/** A complete chat request as raw bytes, with the given extra header lines. */
function rawChat(key: string, id: string, extraHeaders: string[] = [], path = '/agents/ok/api/v1/chat', body = bodyWith(id)): string {
  const headers = ['Host: gw', 'Content-Type: application/json', `Authorization: Bearer ${key}`, `X-Request-Id: ${id}`, `Content-Length: ${Buffer.byteLength(body)}`, ...extraHeaders];
  return `POST ${path} HTTP/1.1\r\n${headers.join('\r\n')}\r\n\r\n${body}`;
}

async function auditByRequestId(gateway: TestGateway, requestId: string, count: number): Promise<AuditRecord[]> {
  return waitFor(
    `${count} audit records with request_id ${requestId}`,
    async () => {
      const records = (await readAuditFile(join(gateway.dir, 'audit.jsonl'))).filter((r) => r.request_id === requestId);
      return records.length >= count ? records : undefined;
    },
    5_000,
  );
}

async function errorOf(response: Response): Promise<{ status: number; type: string; message: string }> {
  const body = (await response.json()) as { error: { type: string; message: string } };
  return { status: response.status, type: body.error.type, message: body.error.message };
}

describe('F1: the audit record id is the gateway\'s, never the client\'s', () => {
  it('three requests of one account and one of another, all with X-Request-Id: same-id, leave four records with four ids', async () => {
    const answers = [];
    for (const key of [keyA, keyA, keyA2, keyB]) {
      const response = await postChat(plain.url, '/agents/ok/api/v1/chat', key, { message: 'hi' }, { 'x-request-id': 'same-id' });
      answers.push([response.status, response.headers.get('x-request-id')]);
      await response.arrayBuffer();
    }
    expect(answers).toEqual(Array.from({ length: 4 }, () => [200, 'same-id']));
    const records = await auditByRequestId(plain, 'same-id', 4);
    expect(records).toHaveLength(4);
    expect(new Set(records.map((r) => r.id)).size).toBe(4);
    for (const record of records) expect(record.id).toMatch(UUID_V7);
    expect(records.map((r) => r.account).sort()).toEqual(['account-a', 'account-a', 'account-a', 'account-b']);
    // The runner still gets the client's id, for its own logs.
    expect(runner.upstream.requests.filter((r) => r.headers['x-request-id'] === 'same-id')).toHaveLength(4);
    reportRow({ fault: 'audit id chosen by the client (F1): 4 requests, 2 accounts, X-Request-Id: same-id', answered: '200 ×4, X-Request-Id echoed', affected: '0/4', auditLost: 0, memory: '4 records, 4 distinct ids, request_id "same-id"' });
  });

  it('without an X-Request-Id, the id the gateway answered with is the record\'s id and request_id', async () => {
    const response = await postChat(plain.url, '/agents/ok/api/v1/chat', keyA, { message: 'hi' });
    await response.arrayBuffer();
    const id = response.headers.get('x-request-id')!;
    expect(id).toMatch(UUID_V7);
    const [record] = await auditByRequestId(plain, id, 1);
    expect(record).toMatchObject({ id, request_id: id });
  });
});

describe('F2: X-Forwarded-For is read from the right, where the trusted proxy wrote', () => {
  it('with trust_proxy: true, rotating the entries the client wrote does not dodge the failed-key throttle', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) {
      // The client's own X-Forwarded-For, then the address the proxy in front appends.
      const response = await postChat(trusting.url, '/agents/ok/api/v1/chat', generateApiKey().rawKey, { message: 'hi' }, { 'x-forwarded-for': `198.51.100.${i}, 203.0.113.77` });
      statuses.push(response.status);
      await response.arrayBuffer();
    }
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429, 429, 429, 429, 429]);
    reportRow({ fault: 'rotated X-Forwarded-For entries with trust_proxy: true (F2), 10 wrong keys', answered: '401 ×5 then 429 ×5 (max_attempts 5)', affected: '-', auditLost: 0, memory: '-' });
  });

  it('naming another client\'s address does not lock that client out, and the records name the real one', async () => {
    for (let i = 0; i < 6; i++) {
      const response = await postChat(trusting.url, '/agents/ok/api/v1/chat', generateApiKey().rawKey, { message: 'hi' }, { 'x-forwarded-for': '203.0.113.88, 203.0.113.99' });
      await response.arrayBuffer();
    }
    const blocked = await postChat(trusting.url, '/agents/ok/api/v1/chat', trustingKey, { message: 'hi' }, { 'x-forwarded-for': '203.0.113.99' });
    expect(blocked.status).toBe(429);
    await blocked.arrayBuffer();
    const id = marker('xff-victim');
    const victim = await postChat(trusting.url, '/agents/ok/api/v1/chat', trustingKey, { message: 'hi' }, { 'x-forwarded-for': '203.0.113.88', 'x-request-id': id });
    expect(victim.status).toBe(200);
    await victim.arrayBuffer();
    const [record] = await auditByRequestId(trusting, id, 1);
    expect(record!.client_ip).toBe('203.0.113.88');
    const seen = runner.upstream.requests.find((r) => r.headers['x-request-id'] === id)!;
    expect(seen.headers['x-forwarded-for']).toBe('203.0.113.88, 127.0.0.1');
  });

  it('what the client wrote left of the client address is not believed, logged or forwarded', async () => {
    const id = marker('xff-forged');
    const response = await postChat(trusting.url, '/agents/ok/api/v1/chat', trustingKey, { message: 'hi' }, { 'x-forwarded-for': '10.9.9.9, forged"json, 203.0.113.5', 'x-request-id': id });
    expect(response.status).toBe(200);
    await response.arrayBuffer();
    const [record] = await auditByRequestId(trusting, id, 1);
    expect(record!.client_ip).toBe('203.0.113.5');
    expect(runner.upstream.requests.find((r) => r.headers['x-request-id'] === id)!.headers['x-forwarded-for']).toBe('203.0.113.5, 127.0.0.1');
    const line = trusting.logs.join('').split('\n').find((l) => l.includes(id))!;
    expect(JSON.parse(line)).toMatchObject({ request_id: id, client_ip: '203.0.113.5' });
  });

  it('with a list of proxies, trusted entries are skipped from the right, IPv4 and IPv6', async () => {
    for (const [forwarded, client, chain] of [
      ['1.1.1.1, 198.51.100.3, 10.2.3.4', '198.51.100.3', '198.51.100.3, 10.2.3.4, 127.0.0.1'],
      ['198.51.100.4, 2001:db8::7, 10.0.0.1', '198.51.100.4', '198.51.100.4, 2001:db8::7, 10.0.0.1, 127.0.0.1'],
      ['2001:db9::1', '2001:db9::1', '2001:db9::1, 127.0.0.1'],
    ]) {
      const id = marker('xff-list');
      const response = await postChat(listing.url, '/agents/ok/api/v1/chat', listingKey, { message: 'hi' }, { 'x-forwarded-for': forwarded!, 'x-request-id': id });
      expect(response.status).toBe(200);
      await response.arrayBuffer();
      const [record] = await auditByRequestId(listing, id, 1);
      expect(record!.client_ip, forwarded).toBe(client);
      expect(runner.upstream.requests.find((r) => r.headers['x-request-id'] === id)!.headers['x-forwarded-for'], forwarded).toBe(chain);
    }
  });
});

describe('F3 and F6: hostile JSON is refused before it reaches the runner', () => {
  it('a 1 MB body nested 500,000 levels deep: 400 invalid_json naming the depth, and the next client is served', async () => {
    for (const body of ['['.repeat(500_000) + ']'.repeat(500_000), `{"message":"hi","a":${'{"b":'.repeat(150_000)}1${'}'.repeat(150_000)}}`]) {
      const id = marker('deep');
      const response = await postChat(plain.url, '/agents/ok/api/v1/chat', keyA, body, { 'x-request-id': id });
      expect(await errorOf(response)).toEqual({ status: 400, type: 'invalid_json', message: 'The request body nests objects and arrays more than 64 levels deep.' });
      expect(runnerSaw(id)).toBe(false);
    }
    const next = await postChat(plain.url, '/agents/ok/api/v1/chat', keyA, { message: 'next' });
    expect(next.status).toBe(200);
    await next.arrayBuffer();
    reportRow({ fault: 'body nested 500,000 levels deep, 1 MB (F3)', answered: '400 invalid_json ("more than 64 levels deep"), before JSON.parse', affected: '0 other clients', auditLost: 0, memory: '-' });
  });

  it('a key repeated in any object, plainly or escaped: 400 invalid_json, never forwarded', async () => {
    for (const extra of [',"max_tokens":99999999,"max_tokens":5', ',"tools":["shell"],"tools":["search"]', ',"max_tokens":5,"max\\u005ftokens":99999999', ',"context":{"user_id":"u","user_id":"v"}', ',"message":"again"']) {
      const id = marker('dup');
      const response = await postChat(plain.url, '/agents/ok/api/v1/chat', keyA, bodyWith(id, extra), { 'x-request-id': id });
      expect(await errorOf(response), extra).toEqual({ status: 400, type: 'invalid_json', message: 'The request body repeats a key within one JSON object; send each key once.' });
      expect(runnerSaw(id)).toBe(false);
    }
    reportRow({ fault: 'duplicate JSON keys (F6): max_tokens, tools, escaped twins, nested', answered: '400 invalid_json ×5', affected: '0 forwarded', auditLost: 0, memory: '-' });
  });
});

describe('F4: client header names with an underscore never reach the runner', () => {
  it('X_Account_Id, X_Key_Id, X_Agent_Id, X_Forwarded_For are dropped; the gateway\'s own identity headers go alone', async () => {
    const id = marker('underscore');
    const response = await postChat(plain.url, '/agents/ok/api/v1/chat', keyB, bodyWith(id), {
      'x-request-id': id,
      X_Account_Id: 'account-a',
      X_Key_Id: 'key_forged',
      X_Agent_Id: 'other',
      X_Forwarded_For: '6.6.6.6',
      'X-Custom_Flag': 'on',
    });
    expect(response.status).toBe(200);
    await response.arrayBuffer();
    const seen = runner.upstream.requests.find((r) => r.headers['x-request-id'] === id)!;
    expect(Object.keys(seen.headers).filter((name) => name.includes('_'))).toEqual([]);
    expect(seen.headers['x-account-id']).toBe('account-b');
    expect(seen.headers['x-agent-id']).toBe('ok');
    expect(seen.headers['x-forwarded-for']).toBe('127.0.0.1');
    expect(JSON.stringify(seen.headers)).not.toContain('6.6.6.6');
    reportRow({ fault: 'underscore twins of identity headers (F4): X_Account_Id, X_Key_Id, X_Agent_Id, X_Forwarded_For', answered: '200; none of them forwarded, the gateway\'s identity headers alone', affected: '-', auditLost: 0, memory: '-' });
  });
});

describe('F5: the Redis failed-key throttle counts atomically with its check', () => {
  it('200 concurrent wrong keys from one address: exactly max_attempts (20) are 401, the other 180 are 429', async () => {
    const responses = await Promise.all(
      Array.from({ length: 200 }, () => postChat(shared.url, '/agents/ok/api/v1/chat', generateApiKey().rawKey, { message: 'hi' }, { 'x-forwarded-for': '203.0.113.50' })),
    );
    const statuses = responses.map((r) => r.status);
    await Promise.all(responses.map((r) => r.arrayBuffer()));
    expect(statuses.filter((s) => s === 401)).toHaveLength(20);
    expect(statuses.filter((s) => s === 429)).toHaveLength(180);
    // Another address is not affected.
    const other = await postChat(shared.url, '/agents/ok/api/v1/chat', generateApiKey().rawKey, { message: 'hi' }, { 'x-forwarded-for': '203.0.113.51' });
    expect(other.status).toBe(401);
    await other.arrayBuffer();
    reportRow({ fault: '200 concurrent wrong keys from one address, Redis key store (F5)', answered: '401 ×20, 429 ×180 (max_attempts 20)', affected: '-', auditLost: 0, memory: '-' });
  });
});

describe('F7: a body encoding other than identity is 415', () => {
  it('gzip (claimed or real) and br are refused before the body is read; identity passes and is not forwarded as a header', async () => {
    const plainBody = bodyWith('x');
    for (const [encoding, payload] of [
      ['gzip', Buffer.from(plainBody)],
      ['gzip', gzipSync(plainBody)],
      ['br', Buffer.from(plainBody)],
      ['identity, gzip', Buffer.from(plainBody)],
    ] as Array<[string, Buffer]>) {
      const id = marker('encoding');
      const response = await fetch(`${plain.url}/agents/ok/api/v1/chat`, {
        method: 'POST',
        headers: { authorization: `Bearer ${keyA}`, 'content-type': 'application/json', 'content-encoding': encoding, 'x-request-id': id },
        body: new Uint8Array(payload),
      });
      const error = await errorOf(response);
      expect(error, encoding).toMatchObject({ status: 415, type: 'unsupported_media_type' });
      expect(error.message).toContain('Content-Encoding');
      expect(runnerSaw(id)).toBe(false);
    }
    const id = marker('identity');
    const response = await postChat(plain.url, '/agents/ok/api/v1/chat', keyA, bodyWith(id), { 'content-encoding': 'identity', 'x-request-id': id });
    expect(response.status).toBe(200);
    await response.arrayBuffer();
    expect(runner.upstream.requests.find((r) => r.headers['x-request-id'] === id)!.headers['content-encoding']).toBeUndefined();
    reportRow({ fault: 'Content-Encoding (F7): gzip on a plain body, a real gzip body, br, "identity, gzip"', answered: '415 unsupported_media_type ×4; identity: 200, header not forwarded', affected: '0 forwarded', auditLost: 0, memory: '-' });
  });
});

describe('F8: a malformed request behind a response in flight closes the connection without writing into it', () => {
  it('garbage sent on a streaming connection: the stream is cut, no 400 appears inside it', async () => {
    const id = marker('stream-garbage');
    const body = JSON.stringify({ message: 'hi', runner: { tokens: 40, intervalMs: 25 } });
    const result = await new Promise<RawResult & { beforeGarbage: string }>((resolve) => {
      const socket = connect(plain.running.port, '127.0.0.1');
      let text = '';
      let beforeGarbage = '';
      let sentGarbage = false;
      let closedByServer = false;
      const bound = setTimeout(() => socket.destroy(), 10_000);
      socket.on('data', (chunk: Buffer) => {
        text += chunk.toString('latin1');
        if (!sentGarbage && text.includes('event: token')) {
          sentGarbage = true;
          beforeGarbage = text;
          socket.write('GARBAGE / HTTP/9.9\r\nX: y\r\n\r\n');
        }
      });
      socket.on('error', () => {});
      socket.on('close', () => {
        closedByServer = true;
        clearTimeout(bound);
        resolve({ text, beforeGarbage, statuses: [...text.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => Number(m[1])), closedByServer });
      });
      socket.write(rawChat(keyA, id, [], '/agents/slow/api/v1/chat/stream', body));
    });
    expect(result.beforeGarbage).toMatch(/^HTTP\/1\.1 200 /);
    expect(result.statuses).toEqual([200]);
    expect(result.text).not.toContain('invalid_request');
    expect(result.text.startsWith(result.beforeGarbage)).toBe(true);
    expect(result.closedByServer).toBe(true);
    reportRow({ fault: 'malformed request sent behind an open stream (F8)', answered: 'connection closed; nothing written into the stream', affected: '1/1 (that stream ends)', auditLost: 0, memory: '-' });
  });

  it('garbage on an idle keep-alive connection is still answered 400', async () => {
    const id = marker('idle-garbage');
    const result = await rawChatExchange(plain.running.port, [rawChat(keyA, id), 'GARBAGE / HTTP/9.9\r\n\r\n'], { gapMs: 300 });
    expect(result.statuses).toEqual([200, 400]);
  });
});

describe('two Host headers', () => {
  it('are 400 invalid_request and close the connection, whatever their values', async () => {
    for (const hosts of [['Host: a', 'Host: b'], ['Host: gw', 'host: gw']]) {
      const id = marker('two-hosts');
      const request = rawChat(keyA, id, [hosts[1]!]).replace('Host: gw', hosts[0]!);
      const result = await rawChatExchange(plain.running.port, [request]);
      expect(result.statuses, hosts.join(' + ')).toEqual([400]);
      expect(result.text).toContain('"invalid_request"');
      expect(result.text).toContain('more than one Host header');
      expect(result.closedByServer).toBe(true);
      expect(runnerSaw(id)).toBe(false);
    }
    reportRow({ fault: 'two Host headers (different, or equal in other case)', answered: '400 invalid_request, closed ×2', affected: '0 forwarded', auditLost: 0, memory: '-' });
  });
});

describe('classes that held', () => {
  it('request smuggling: CL+TE, two lengths, broken chunks, obs-fold, bad TE: 400 and closed; the hidden request never reaches the runner', async () => {
    const port = plain.running.port;
    const smuggled = marker('smuggled');
    const hidden = rawChat(keyA, smuggled);
    const probes: Array<[string, string]> = [
      ['CL.TE', `POST /agents/ok/api/v1/chat HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${keyA}\r\nContent-Type: application/json\r\nContent-Length: ${5 + hidden.length}\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n${hidden}`],
      ['TE.CL', `POST /agents/ok/api/v1/chat HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${keyA}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n${hidden.length.toString(16)}\r\n${hidden}\r\n0\r\n\r\n`],
      ['two Content-Lengths', `POST /agents/ok/api/v1/chat HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${keyA}\r\nContent-Length: 16\r\nContent-Length: ${16 + hidden.length}\r\n\r\n{"message":"hi"}${hidden}`],
      ['TE not ending in chunked', `POST /agents/ok/api/v1/chat HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${keyA}\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n${hidden}`],
      ['obfuscated TE', `POST /agents/ok/api/v1/chat HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${keyA}\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n${hidden}`],
      ['obs-fold', `POST /agents/ok/api/v1/chat HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${keyA}\r\nX-A: a\r\n b\r\nContent-Length: ${hidden.length}\r\n\r\n${hidden}`],
      ['broken chunk size', `POST /agents/ok/api/v1/chat HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${keyA}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n${hidden}\r\n0\r\n\r\n`],
    ];
    const answers: string[] = [];
    for (const [label, request] of probes) {
      const result = await rawChatExchange(port, [request]);
      answers.push(`${label}: ${result.statuses.join('+')}`);
      expect(result.statuses, label).toEqual([400]);
      expect(result.closedByServer, label).toBe(true);
    }
    expect(runnerSaw(smuggled)).toBe(false);
    reportRow({ fault: 'request smuggling: CL.TE, TE.CL, two lengths, TE not chunked-last, "Transfer-Encoding :", obs-fold, broken chunk', answered: '400 and closed ×7', affected: 'the hidden request never forwarded', auditLost: 0, memory: '-' });
  });

  it('CR or NUL inside a header value, and a 64 KB header: 400 / 431, never forwarded', async () => {
    const port = plain.running.port;
    for (const [label, header, status] of [
      ['CR', 'X-A: a\rb', 400],
      ['NUL', 'X-A: a\u0000b', 400],
      ['64 KB header', `X-Big: ${'a'.repeat(64 * 1024)}`, 431],
    ] as Array<[string, string, number]>) {
      const id = marker('header-bytes');
      const result = await rawChatExchange(port, [rawChat(keyA, id, [header])]);
      expect(result.statuses, label).toEqual([status]);
      expect(result.closedByServer, label).toBe(true);
      expect(runnerSaw(id), label).toBe(false);
    }
    reportRow({ fault: 'CR or NUL inside a header value; a 64 KB header', answered: '400, 400, 431; each closed', affected: '0 forwarded', auditLost: 0, memory: '-' });
  });

  it('path tricks: dot segments, encoded slashes and NULs, doubled or trailing slashes are 404; the runner only ever gets its configured path', async () => {
    const port = plain.running.port;
    const answers: Record<string, number> = {};
    for (const path of [
      '/agents/ok/../ok/api/v1/chat',
      '/agents/./ok/api/v1/chat',
      '/agents/ok%2Fapi/v1/chat',
      '/agents/ok/api/v1/chat%2Fstream',
      '/agents/ok%2F..%2Fslow/api/v1/chat',
      '/agents/ok%00/api/v1/chat',
      '/agents/%2e%2e/api/v1/chat',
      '//agents/ok/api/v1/chat',
      '/agents//ok/api/v1/chat',
      '/agents/ok/api/v1/chat/',
      '/agents/ok/api/v1/chat;x=1',
      '/AGENTS/ok/api/v1/chat',
      'http://evil.example/agents/ok/api/v1/chat/../../../admin',
    ]) {
      const id = marker('path');
      const result = await rawChatExchange(port, [rawChat(keyA, id, ['Connection: close'], path)]);
      answers[path] = result.statuses[0] ?? 0;
      expect(result.statuses, path).toEqual([404]);
      expect(runnerSaw(id), path).toBe(false);
    }
    // One percent-decoding of the agent id, and a query, are accepted: the runner still gets its own path, no query.
    for (const path of ['/agents/%6Fk/api/v1/chat', '/agents/ok/api/v1/chat?next=../../admin']) {
      const id = marker('path-ok');
      const result = await rawChatExchange(port, [rawChat(keyA, id, ['Connection: close'], path)]);
      expect(result.statuses, path).toEqual([200]);
      expect(runner.upstream.requests.find((r) => r.headers['x-request-id'] === id)!.path, path).toBe('/ok/api/v1/chat');
    }
    reportRow({ fault: 'path tricks: dot segments, %2F, %00, %2e%2e, // and trailing /, ;params, case, absolute-form (13)', answered: `404 ×${Object.values(answers).filter((s) => s === 404).length}; /agents/%6Fk/… and a query: 200`, affected: 'the runner only got its configured path', auditLost: 0, memory: '-' });
  });

  it('10 MB bodies, by length and chunked: 413 (or the connection closed while sending), never forwarded', async () => {
    const big = Buffer.alloc(10 * MB, 0x61);
    const answers: string[] = [];
    for (const framing of ['length', 'chunked'] as const) {
      const id = marker('big');
      const response = await new Promise<{ status: number } | Error>((resolve) => {
        const headers: Record<string, string> = { authorization: `Bearer ${keyA}`, 'content-type': 'application/json', 'x-request-id': id };
        if (framing === 'length') headers['content-length'] = String(big.length);
        const req = httpRequest(`${plain.url}/agents/ok/api/v1/chat`, { method: 'POST', headers }, (res: IncomingMessage) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode ?? 0 }));
        });
        req.on('error', resolve);
        req.end(big);
      });
      answers.push(response instanceof Error ? `${framing}: closed while sending (${response.message})` : `${framing}: ${response.status}`);
      if (response instanceof Error) expect(response.message, framing).toMatch(/EPIPE|ECONNRESET|socket hang up/);
      else expect(response.status, framing).toBe(413);
      expect(runnerSaw(id), framing).toBe(false);
    }
    reportRow({ fault: '10 MB bodies, by Content-Length and chunked', answered: answers.join('; '), affected: '0 forwarded', auditLost: 0, memory: '-' });
  });

  it('slow headers and a slow body: 408 request_timeout once request_timeout passes, never forwarded', async () => {
    const port = plain.running.port;
    const id = marker('slow-body');
    const full = rawChat(keyA, id);
    const headEnd = full.indexOf('\r\n\r\n') + 4;
    // The body a byte at a time, past request_timeout (2 s).
    const bodyBytes = full.slice(headEnd).split('').slice(0, 12);
    const slowBody = await rawChatExchange(port, [full.slice(0, headEnd), ...bodyBytes], { gapMs: 300, waitMs: 3_000 });
    expect(slowBody.statuses).toEqual([408]);
    expect(slowBody.text).toContain('"request_timeout"');
    const slowHeaders = await rawChatExchange(port, ['POST /agents/ok/api/v1/chat HTTP/1.1\r\n', 'Host: gw\r\n', 'X-A: 1\r\n', 'X-B: 2\r\n', 'X-C: 3\r\n', 'X-D: 4\r\n', 'X-E: 5\r\n', 'X-F: 6\r\n', 'X-G: 7\r\n', 'X-H: 8\r\n', 'X-I: 9\r\n'], { gapMs: 300, waitMs: 3_000 });
    expect(slowHeaders.statuses).toEqual([408]);
    expect(runnerSaw(id)).toBe(false);
    reportRow({ fault: 'a body sent a byte per 300 ms; header lines a line per 300 ms (request_timeout 2s, headers_timeout 1s)', answered: '408 request_timeout, closed ×2', affected: '0 forwarded', auditLost: 0, memory: '-' });
  });

  it('a slow SSE reader: the runner is held back instead of the gateway buffering, and the stream completes once read', async () => {
    const streamBytes = 32 * MB;
    const writtenBefore = runner.firehoseWritten();
    let response!: IncomingMessage;
    await new Promise<void>((resolve, reject) => {
      const req = httpRequest(`${plain.url}/agents/firehose/api/v1/chat/stream`, { method: 'POST', headers: { authorization: `Bearer ${keyA}`, 'content-type': 'application/json' } }, (res) => {
        response = res;
        resolve();
      });
      req.on('error', reject);
      req.end(JSON.stringify({ message: 'hi', runner: { bytes: streamBytes } }));
    });
    // Read nothing for 1.5 s: only the socket buffers on the way can fill.
    await sleep(1_500);
    const heldBack = runner.firehoseWritten() - writtenBefore;
    let received = 0;
    let tail = '';
    response.on('data', (chunk: Buffer) => {
      received += chunk.length;
      tail = (tail + chunk.toString('latin1')).slice(-200);
    });
    await new Promise<void>((resolve) => response.on('end', resolve));
    expect(heldBack).toBeLessThan(streamBytes / 2);
    expect(received).toBeGreaterThanOrEqual(Math.floor(streamBytes / FIREHOSE_EVENT.length) * FIREHOSE_EVENT.length);
    expect(tail).toContain('event: done');
    reportRow({ fault: 'SSE reader that reads nothing for 1.5 s, 32 MB stream', answered: '200, complete once read', affected: '0/1', auditLost: 0, memory: `runner held at ${(heldBack / MB).toFixed(1)} MB while the client stalled` });
  });
});

describe('what the runner received', () => {
  it('only requests the gateway validated: JSON objects with a message, no repeated key, no deep nesting, no underscore header, no body encoding, its own identity headers', () => {
    expect(runner.upstream.requests.length).toBeGreaterThan(10);
    for (const seen of runner.upstream.requests) {
      const label = `${seen.path} ${String(seen.headers['x-request-id'])}`;
      expect(['/ok/api/v1/chat', '/ok/api/v1/chat/stream', '/slow/api/v1/chat/stream', '/firehose/api/v1/chat/stream'], label).toContain(seen.path);
      const text = seen.body.toString('utf8');
      // The fault runner keeps the first 4 KB of large bodies; every probe body here is smaller.
      const value = JSON.parse(text) as { message?: unknown };
      expect(typeof value.message, label).toBe('string');
      expect(referenceJsonShape(text), label).toMatchObject({ duplicateKey: false });
      expect(referenceJsonShape(text).depth, label).toBeLessThanOrEqual(64);
      expect(Object.keys(seen.headers).filter((name) => name.includes('_')), label).toEqual([]);
      expect(seen.headers['content-encoding'], label).toBeUndefined();
      expect(seen.headers.authorization, label).toBeUndefined();
      for (const name of ['x-request-id', 'x-agent-id', 'x-key-id', 'x-account-id', 'x-forwarded-for', 'traceparent']) expect(typeof seen.headers[name], `${label} ${name}`).toBe('string');
    }
  });
});
