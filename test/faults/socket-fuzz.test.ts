// Raw-socket fuzzing with fast-check: random bytes, malformed request lines, mutated and
// pipelined requests, oversized headers (431), conflicting Content-Length/Transfer-Encoding
// (400), invalid UTF-8, deep JSON nesting (400 past limits.max_json_depth). Every connection
// ends with an answer from the documented set (never a 5xx) or a close, within the server
// timeouts; nothing that fails reaches the runner; and after each batch the server still
// answers a good request.
// (One fixed example of each hostile input: test/integration/gateway-bad-input.test.ts.)
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { splitAt } from '../helpers/split-at.js';
import { startFaultRunner, type FaultRunner } from '../helpers/faults/fault-runner.js';
import { rawExchange } from '../helpers/faults/raw-socket.js';
import { reportRow } from '../helpers/faults/report.js';

/** Every status the gateway (or Node's parser on its behalf) may answer a client with. */
const ALLOWED = new Set([200, 400, 401, 404, 405, 408, 413, 415, 417, 431]);
const REQUEST_TIMEOUT_MS = 2_000;
/**
 * How long a client waits before calling a connection hung: an incomplete request is cut by
 * request_timeout (2 s, enforced every second), so this is ten times that, a guard that only
 * a server which never cuts it reaches, however loaded the machine (not a speed bound).
 */
const END_BOUND_MS = REQUEST_TIMEOUT_MS * 10;
/** Stop a failing property's shrinking in time to report its counterexample before the test timeout. */
const FUZZ_OPTIONS = { interruptAfterTimeLimit: 40_000, markInterruptAsFailure: true };

let runner: FaultRunner;
let gateway: TestGateway;
let key: string;
const statuses = new Map<string, number>();

beforeAll(async () => {
  runner = await startFaultRunner();
  gateway = await startTestGateway({
    agents: { ok: runner.baseUrl('ok') },
    config: {
      listen: { headers_timeout: '1s', request_timeout: `${REQUEST_TIMEOUT_MS}ms` },
      // The fuzzer sends many bad keys from one address: keep the failed-attempt throttle out of the way.
      keys: { failed_auth: { max_attempts: 1_000_000 } },
      limits: { max_body_bytes: 4_096 },
    },
  });
  ({ rawKey: key } = await gateway.createKey());
});

afterAll(async () => {
  await gateway?.close();
  await runner?.close();
});

interface Exchange {
  /** Final (non-1xx) statuses, in order. */
  finals: number[];
  bodies: string[];
  closedByServer: boolean;
  endedAfterMs: number;
  raw: string;
  sent: string;
}

/** Splits a byte string of pipelined HTTP/1.1 responses; stops at the first incomplete one. */
function parseResponses(raw: Buffer): { finals: number[]; bodies: string[]; complete: boolean } {
  const finals: number[] = [];
  const bodies: string[] = [];
  let at = 0;
  while (at < raw.length) {
    const headEnd = raw.indexOf('\r\n\r\n', at);
    if (headEnd === -1) return { finals, bodies, complete: false };
    const head = raw.toString('latin1', at, headEnd);
    const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);
    let bodyStart = headEnd + 4;
    if (status >= 100 && status < 200) {
      at = bodyStart;
      continue;
    }
    const length = /\r\ncontent-length: *(\d+)/i.exec(head);
    let body = '';
    if (length) {
      const end = bodyStart + Number(length[1]);
      if (end > raw.length) return { finals, bodies, complete: false };
      body = raw.toString('utf8', bodyStart, end);
      at = end;
    } else if (/\r\ntransfer-encoding: *chunked/i.test(head)) {
      for (;;) {
        const lineEnd = raw.indexOf('\r\n', bodyStart);
        if (lineEnd === -1) return { finals, bodies, complete: false };
        const size = parseInt(raw.toString('latin1', bodyStart, lineEnd), 16);
        if (size === 0) {
          at = lineEnd + 4;
          break;
        }
        body += raw.toString('utf8', lineEnd + 2, lineEnd + 2 + size);
        bodyStart = lineEnd + 2 + size + 2;
        if (bodyStart > raw.length) return { finals, bodies, complete: false };
      }
    } else {
      at = raw.length;
    }
    finals.push(status);
    bodies.push(body);
  }
  return { finals, bodies, complete: true };
}

/**
 * Writes `bytes` (in the given pieces) and reads until the server closes, or until 250 ms pass
 * with nothing new after at least one complete answer, or until END_BOUND_MS.
 */
async function exchange(pieces: Buffer[]): Promise<Exchange> {
  const { received, closedByServer, elapsedMs } = await rawExchange(gateway.running.port, pieces, {
    between: () => new Promise((resolve) => setImmediate(resolve)),
    idleMsAfter: (bytes) => (parseResponses(bytes).finals.length > 0 ? 250 : undefined),
    boundMs: END_BOUND_MS,
  });
  const parsed = parseResponses(received);
  return { finals: parsed.finals, bodies: parsed.bodies, closedByServer, endedAfterMs: elapsedMs, raw: received.toString('latin1'), sent: Buffer.concat(pieces).toString('latin1') };
}

function tallyStatuses(results: Exchange[], label: string): void {
  for (const r of results) {
    const answer = r.finals.length === 0 ? 'closed without an answer' : r.finals.join('+');
    statuses.set(`${label}: ${answer}`, (statuses.get(`${label}: ${answer}`) ?? 0) + 1);
  }
}

/** Each connection answered only with allowed statuses (gateway errors as JSON), or closed; promptly. */
function expectWellHandled(results: Exchange[]): void {
  for (const r of results) {
    const sent = JSON.stringify(r.sent.slice(0, 300));
    expect(r.endedAfterMs, `hung: neither answered nor closed within ${END_BOUND_MS} ms; sent ${sent}, got ${r.raw.slice(0, 200)}`).toBeLessThan(END_BOUND_MS);
    expect(r.finals.length > 0 || r.closedByServer, `neither answered nor closed after ${sent}`).toBe(true);
    for (const [i, status] of r.finals.entries()) {
      expect(ALLOWED.has(status), `status ${status} for ${sent}: ${r.raw.slice(0, 300)}`).toBe(true);
      // Every error, including 408 (request timeout) and 417, is the gateway's JSON envelope.
      if (status >= 400) {
        const body = JSON.parse(r.bodies[i]!) as { error: Record<string, unknown> };
        expect(Object.keys(body)).toEqual(['error']);
        expect(body.error).toMatchObject({ type: expect.any(String), message: expect.any(String), request_id: expect.any(String) });
      }
    }
  }
}

async function expectStillServing(): Promise<void> {
  const response = await fetch(`${gateway.url}/agents/ok/api/v1/chat`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ message: 'still there?' }),
    signal: AbortSignal.timeout(10_000),
  });
  expect(response.status).toBe(200);
  await response.arrayBuffer();
  expect(gateway.logs.join('')).not.toContain('unhandled error in request pipeline');
}

/** Ids of the requests the runner received whose X-Request-Id starts with `prefix`. */
function forwardedWithPrefix(prefix: string): string[] {
  return runner.upstream.requests.map((r) => String(r.headers['x-request-id'])).filter((id) => id.startsWith(prefix));
}

// ----- generators -----

const CRLF = '\r\n';
const goodBody = '{"message":"hi"}';
/** Mostly the good value, sometimes a broken one: each request breaks a few things, not all. */
function mostly<T>(good: T, ...bad: T[]): fc.Arbitrary<T> {
  return fc.oneof({ arbitrary: fc.constant(good), weight: 6 }, { arbitrary: fc.constantFrom(...bad), weight: 1 });
}
const lineEnd = mostly(CRLF, '\n', '\r', '', '\r\r\n');
const method = mostly('POST', 'GET', 'post', 'P OST', 'POST\u0000', 'CONNECT', 'PRI', 'DELETE', '');
const target = mostly('/agents/ok/api/v1/chat', '/agents/ok/api/v1/chat/stream', '/agents/ok/api/v1/chat?x=1', '/agents/%ff/api/v1/chat', '/agents/ok/../ok/api/v1/chat', '*', 'http://x/agents/ok/api/v1/chat', '/\u00ff', '', '/agents/ok/api/v1/chat#frag', '/agents/nobody/api/v1/chat');
const version = mostly('HTTP/1.1', 'HTTP/1.0', 'HTTP/9.9', 'HTTP/1', 'HTTP/1.1 extra', 'http/1.1', '');
const headerName = fc.oneof(
  { arbitrary: fc.stringMatching(/^X-[A-Za-z0-9-]{1,10}$/), weight: 4 },
  fc.constantFrom('Host', 'Content-Length', 'Transfer-Encoding', 'Connection', 'Authorization', 'Content-Type', 'X-Request-Id', 'Expect', 'Upgrade', 'traceparent', 'X-Forwarded-For', 'Keep-Alive', 'TE'),
  fc.constantFrom('bad name', 'x:y', '', 'X-\u007f', 'X-\u00e9', 'X-A\u0000'),
  fc.stringMatching(/^[A-Za-z][A-Za-z0-9-]{0,10}$/),
);
const headerValue = fc.oneof(
  { arbitrary: fc.stringMatching(/^[ -~]{0,20}$/), weight: 4 },
  fc.constantFrom('chunked', 'gzip, chunked', 'identity', '0', '16', '-1', '1e3', ' 16', '0x10', 'close', 'keep-alive, x-a', 'application/json', 'text/plain', '100-continue', 'websocket', `Bearer ${'x'.repeat(38)}`),
  fc.string({ unit: fc.constantFrom('a', '1', ' ', '\t', ',', ';', '=', '"', '\u0000', '\u007f', '\u00ff', '\u0080', '\r', '\n', '\r\n '), maxLength: 20 }),
);
const bodyText = fc.oneof(
  { arbitrary: fc.constant(goodBody), weight: 4 },
  fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
  fc.constantFrom('', '{', '{"message":', '{"message":"\u00ff"}', '[]', 'null', '{"message":"hi","tools":["search","search"]}'),
  fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b).toString('latin1')),
);

interface RequestModel {
  requestLine: string;
  headers: Array<[string, string]>;
  body: string;
  framing: 'length' | 'wrong-length' | 'chunked' | 'bad-chunked' | 'none';
  ending: string;
}

const requestModel: fc.Arbitrary<RequestModel> = fc.record({
  requestLine: fc.tuple(method, target, version).map(([m, t, v]) => `${m} ${t} ${v}`),
  headers: fc.array(fc.tuple(headerName, headerValue), { maxLength: 4 }),
  body: bodyText,
  framing: fc.constantFrom('length', 'length', 'length', 'length', 'wrong-length', 'chunked', 'chunked', 'bad-chunked', 'none'),
  ending: lineEnd,
});

function render(model: RequestModel, keyText: string, withAuth: boolean): string {
  const lines = [model.requestLine, 'Host: fuzz', 'Content-Type: application/json'];
  if (withAuth) lines.push(`Authorization: Bearer ${keyText}`);
  const body = Buffer.from(model.body, 'latin1');
  let payload = model.body;
  if (model.framing === 'length') lines.push(`Content-Length: ${body.length}`);
  if (model.framing === 'wrong-length') lines.push(`Content-Length: ${Math.max(0, body.length + (body.length % 2 ? 7 : -3))}`);
  if (model.framing === 'chunked' || model.framing === 'bad-chunked') {
    lines.push('Transfer-Encoding: chunked');
    payload = model.framing === 'chunked' ? `${body.length.toString(16)}${CRLF}${model.body}${CRLF}0${CRLF}${CRLF}` : `zz${CRLF}${model.body}${CRLF}`;
  }
  for (const [name, value] of model.headers) lines.push(`${name}: ${value}`);
  return lines.join(model.ending) + model.ending + model.ending + payload;
}

/** Splits bytes into pieces at the given cuts, so the parser sees every kind of partial read. */
function piecesOf(text: string | Buffer, cuts: number[]): Buffer[] {
  const bytes = typeof text === 'string' ? Buffer.from(text, 'latin1') : text;
  // No empty pieces: each one is a real write on the socket.
  return splitAt(bytes, cuts.map((c) => c % Math.max(1, bytes.length)).filter((c) => c > 0));
}

const BATCH = 16;
const cuts = fc.array(fc.nat({ max: 4_000 }), { maxLength: 4 });

describe('raw-socket fuzzing (fast-check)', { timeout: 60_000 }, () => {
  it('random bytes: a 400 or a close, never a 5xx, and the server keeps serving', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(fc.uint8Array({ minLength: 1, maxLength: 2_048 }), cuts), { minLength: BATCH, maxLength: BATCH }), async (cases) => {
        const results = await Promise.all(cases.map(([bytes, c]) => exchange(piecesOf(Buffer.from(bytes), c))));
        tallyStatuses(results, 'random bytes');
        expectWellHandled(results);
        await expectStillServing();
      }),
      { numRuns: 6, ...FUZZ_OPTIONS },
    );
  });

  it('malformed request lines, mutated headers and framing, pipelined garbage: only documented answers', async () => {
    const forwardedBefore = runner.upstream.requests.length;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(requestModel, mostly(true, false), mostly(true, false), fc.option(fc.uint8Array({ minLength: 1, maxLength: 64 }), { nil: undefined, freq: 2 }), cuts), { minLength: BATCH, maxLength: BATCH }),
        async (cases) => {
          const results = await Promise.all(
            cases.map(([model, withAuth, realKey, trailing, c]) => {
              const text = render(model, realKey ? key : `ha_${'A'.repeat(38)}`, withAuth);
              const bytes = trailing ? Buffer.concat([Buffer.from(text, 'latin1'), Buffer.from(trailing)]) : Buffer.from(text, 'latin1');
              return exchange(piecesOf(bytes, c));
            }),
          );
          tallyStatuses(results, 'mutated requests');
          expectWellHandled(results);
          await expectStillServing();
        },
      ),
      { numRuns: 10, ...FUZZ_OPTIONS },
    );
    // Positive control: some fuzzed requests were good enough to be forwarded.
    const fuzzedForwarded = runner.upstream.requests.slice(forwardedBefore).filter((r) => !r.body.toString('utf8').includes('still there?'));
    expect(fuzzedForwarded.length).toBeGreaterThan(0);
  });

  it('oversized headers: 431 request_header_fields_too_large, however the bytes are spread', async () => {
    const oversized = fc.oneof(
      fc.integer({ min: 17_000, max: 60_000 }).map((n) => `X-Big: ${'a'.repeat(n)}${CRLF}`),
      fc.integer({ min: 200, max: 1_000 }).map((n) => Array.from({ length: n }, (_, i) => `X-H${i}: ${'b'.repeat(80)}${CRLF}`).join('')),
      fc.integer({ min: 17_000, max: 40_000 }).map((n) => `Cookie: ${'c=d; '.repeat(n / 5)}${CRLF}`),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(oversized, fc.boolean(), cuts), { minLength: 8, maxLength: 8 }), async (cases) => {
        const results = await Promise.all(
          cases.map(([headers, inTarget, c]) => {
            const path = inTarget ? `/agents/ok/api/v1/chat?pad=${'p'.repeat(17_000)}` : '/agents/ok/api/v1/chat';
            return exchange(piecesOf(`POST ${path} HTTP/1.1${CRLF}Host: x${CRLF}Authorization: Bearer ${key}${CRLF}${headers}${CRLF}${goodBody}`, c));
          }),
        );
        tallyStatuses(results, 'oversized headers');
        for (const r of results) {
          expect(r.finals, r.raw.slice(0, 200)).toEqual([431]);
          expect(JSON.parse(r.bodies[0]!)).toMatchObject({ error: { type: 'request_header_fields_too_large' } });
        }
        await expectStillServing();
      }),
      { numRuns: 4, ...FUZZ_OPTIONS },
    );
  });

  it('conflicting or invalid Content-Length / Transfer-Encoding: 400 and closed, never forwarded', async () => {
    let n = 0;
    const te = fc.constantFrom('chunked', 'Chunked', ' chunked', 'gzip, chunked', 'chunked, chunked', 'identity', 'chunked, identity');
    const cl = fc.constantFrom('0', '5', '16', '17', 'abc', '-1', '16, 16', '1e1');
    const framing = fc.oneof(
      fc.tuple(te, cl, fc.boolean()).map(([t, l, teFirst]) => (teFirst ? [`Transfer-Encoding: ${t}`, `Content-Length: ${l}`] : [`Content-Length: ${l}`, `Transfer-Encoding: ${t}`])),
      fc.tuple(fc.nat({ max: 40 }), fc.nat({ max: 40 })).filter(([a, b]) => a !== b).map(([a, b]) => [`Content-Length: ${a}`, `Content-Length: ${b}`]),
      fc.constantFrom(['Content-Length: abc'], ['Content-Length: -1'], ['Content-Length: 16, 16'], ['Content-Length: 16', 'Content-Length: 16'], ['Transfer-Encoding: identity'], ['Transfer-Encoding: chunked, identity']),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(framing, cuts), { minLength: BATCH, maxLength: BATCH }), async (cases) => {
        const results = await Promise.all(
          cases.map(([headers, c]) =>
            exchange(piecesOf(`POST /agents/ok/api/v1/chat HTTP/1.1${CRLF}Host: x${CRLF}X-Request-Id: fuzz-clte-${++n}${CRLF}Authorization: Bearer ${key}${CRLF}Content-Type: application/json${CRLF}${headers.join(CRLF)}${CRLF}${CRLF}10${CRLF}${goodBody}${CRLF}0${CRLF}${CRLF}`, c)),
          ),
        );
        tallyStatuses(results, 'CL/TE conflicts');
        for (const r of results) {
          expect(r.finals, r.raw.slice(0, 200)).toEqual([400]);
          expect(r.raw).toMatch(/\r\nConnection: close\r\n/i);
          expect(r.closedByServer).toBe(true);
        }
      }),
      { numRuns: 4, ...FUZZ_OPTIONS },
    );
    expect(forwardedWithPrefix('fuzz-clte-')).toEqual([]);
    await expectStillServing();
  });

  it('invalid UTF-8 in the body: 400 invalid_json, never forwarded', async () => {
    let n = 0;
    const invalid = fc.constantFrom([0xff], [0xc3], [0xe2, 0x82], [0xed, 0xa0, 0x80], [0xf8, 0x88, 0x80, 0x80], [0xc0, 0xaf], [0x80]);
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(fc.string({ maxLength: 10 }), invalid, fc.string({ maxLength: 10 }), cuts), { minLength: BATCH, maxLength: BATCH }), async (cases) => {
        const results = await Promise.all(
          cases.map(([before, bad, after, c]) => {
            const body = Buffer.concat([Buffer.from(`{"message":"${before.replace(/["\\]/g, '')}`), Buffer.from(bad), Buffer.from(`${after.replace(/["\\]/g, '')}"}`)]);
            const head = Buffer.from(`POST /agents/ok/api/v1/chat HTTP/1.1${CRLF}Host: x${CRLF}X-Request-Id: fuzz-utf8-${++n}${CRLF}Authorization: Bearer ${key}${CRLF}Content-Type: application/json${CRLF}Content-Length: ${body.length}${CRLF}${CRLF}`);
            return exchange(piecesOf(Buffer.concat([head, body]), c));
          }),
        );
        tallyStatuses(results, 'invalid UTF-8 body');
        for (const r of results) {
          expect(r.finals).toEqual([400]);
          expect(JSON.parse(r.bodies[0]!)).toMatchObject({ error: { type: 'invalid_json', message: 'The request body is not valid UTF-8.' } });
        }
        expect(forwardedWithPrefix('fuzz-utf8-')).toEqual([]);
      }),
      { numRuns: 3, ...FUZZ_OPTIONS },
    );
    await expectStillServing();
  });

  it('deep JSON nesting within max_body_bytes: 400 past limits.max_json_depth (64), forwarded untouched below it when it is a valid request, never a crash', async () => {
    const nesting = fc.tuple(fc.oneof(fc.integer({ min: 1, max: 70 }), fc.integer({ min: 100, max: 2_000 })), fc.constantFrom('[', '{"a":'), fc.boolean()).map(([depth, open, inMessage]) => {
      const close = open === '[' ? ']' : '}';
      const deep = open.repeat(depth) + (open === '[' ? '' : '1') + close.repeat(depth);
      // Inside the request object the nesting is one level deeper.
      return { body: inMessage ? `{"message":"hi","extra":${deep}}` : deep, valid: inMessage && depth + 1 <= 64 };
    });
    await fc.assert(
      fc.asyncProperty(fc.array(nesting, { minLength: 8, maxLength: 8 }), async (cases) => {
        const results = await Promise.all(
          cases.map(({ body }) => exchange([Buffer.from(`POST /agents/ok/api/v1/chat HTTP/1.1${CRLF}Host: x${CRLF}Authorization: Bearer ${key}${CRLF}Content-Type: application/json${CRLF}Content-Length: ${Buffer.byteLength(body)}${CRLF}${CRLF}${body}`)])),
        );
        tallyStatuses(results, 'deep nesting');
        for (const [i, r] of results.entries()) {
          const expected = Buffer.byteLength(cases[i]!.body) > 4_096 ? 413 : cases[i]!.valid ? 200 : 400;
          expect(r.finals).toEqual([expected]);
        }
      }),
      { numRuns: 3, ...FUZZ_OPTIONS },
    );
    await expectStillServing();
  });

  it('leaves a summary for docs/reliability.md', () => {
    const summary = [...statuses].map(([answer, n]) => `${answer} ×${n}`).join('; ');
    reportRow({ fault: 'raw-socket fuzz (fast-check)', answered: summary, affected: 'no 5xx, no hang', auditLost: '-', memory: '-' });
    expect(statuses.size).toBeGreaterThan(0);
  });
});
