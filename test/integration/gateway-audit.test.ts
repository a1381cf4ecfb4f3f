// Usage audit through HTTP (docs/design.md, "Usage audit records"): the gateway in process,
// with the Redis stream sink and the file sink on a real Redis. One mixed run covers every
// outcome; each answered request must leave exactly one record, with the right fields, in both
// sinks — and a 401 none. Neither sink nor the log may hold the raw key or the message text.
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditRecord } from '../../src/audit/audit-record.js';
import { createRedisClient, type RedisClient } from '../../src/redis/redis-client.js';
import { silentLogger } from '../../src/logger.js';
import { chatResponse, startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { refusingPort } from '../helpers/free-port.js';
import { postChat, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { openSse } from '../helpers/sse-client.js';
import { sleep } from '../helpers/wait.js';
import { requestIdOfLine } from '../helpers/audit-records.js';

const STREAM_KEY = `gwaudit:${randomUUID()}`;
/** Distinctive, so a leak into any sink or log line is unmistakable. */
const SECRET_MESSAGE = 'zebra-quartz-message-8f41c2 please summarise my invoice';
const CHAT_TOKENS = 17;
const STREAM_TOKENS = 9;

const RECORD_FIELDS = [
  'id', 'request_id', 'ts', 'key_id', 'account', 'plan', 'agent', 'route', 'status', 'outcome', 'tokens_used', 'latency_ms',
  'upstream_latency_ms', 'bytes_in', 'bytes_out', 'client_ip', 'user_id', 'session_id', 'model', 'cost_usd', 'tool_calls', 'tools_withheld',
].sort();

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** What the test knows about one request, to compare with its record. */
interface Sent {
  id: string;
  agent: string;
  route: 'chat' | 'chat/stream';
  keyId: string;
  account: string;
  plan: string;
  status: number;
  outcome: AuditRecord['outcome'];
  tokens: number | null;
  bytesIn: number;
  /** Body bytes the client received; undefined when it cut the stream itself. */
  bytesOut: number | undefined;
  reachedUpstream: boolean;
  userId: string | null;
  sessionId: string | null;
}

function sseHead(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.flushHeaders();
}

/** The upstream behaves as the request body's (forwarded, unknown) `scenario` field says. */
function scenarioOf(body: Buffer): string {
  try {
    return String((JSON.parse(body.toString('utf8')) as { scenario?: unknown }).scenario ?? 'ok');
  } catch {
    return 'ok';
  }
}

let redis: TestRedis;
let inspect: RedisClient;
let upstream: FakeUpstream;
let gateway: TestGateway;
let mainKey: { rawKey: string; keyId: string };
let tinyKey: { rawKey: string; keyId: string };

beforeAll(async () => {
  [redis, upstream] = await Promise.all([
    startRedis(),
    startFakeUpstream(async (req, res, seen) => {
      const scenario = scenarioOf(seen.body);
      if (scenario === 'hang') return; // never answers: the agent's timeout fires
      if (!req.url?.endsWith('/chat/stream')) {
        const body = JSON.stringify(chatResponse('Here is your summary.', CHAT_TOKENS));
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
        res.end(body);
        return;
      }
      sseHead(res);
      res.write('event: token\ndata: {"content":"Hel"}\n\n');
      if (scenario === 'ok') {
        res.end(`event: token\ndata: {"content":"lo"}\n\nevent: done\ndata: {"tokens_used":${STREAM_TOKENS},"latency_ms":4}\n\n`);
      } else if (scenario === 'reset') {
        await sleep(30);
        res.socket?.destroy();
      } else if (scenario === 'endless') {
        const timer = setInterval(() => res.write('event: token\ndata: {"content":"."}\n\n'), 40);
        res.on('close', () => clearInterval(timer));
      }
    }),
  ]);
  inspect = createRedisClient({ url: redis.url, prefix: 'gwaudit:', commandTimeoutMs: 2_000 }, silentLogger, 'test-inspect');
  const refusedPort = await refusingPort();
  gateway = await startTestGateway({
    agents: {
      support: upstream.baseUrl,
      slow: { upstream: upstream.baseUrl, timeout: '300ms' },
      down: `http://127.0.0.1:${refusedPort}/api/v1`,
    },
    redisUrl: redis.url,
    config: {
      // Generous: on a loaded machine a 100 ms timeout would fail the limiter open and spoil the 429s.
      redis: { prefix: 'gwaudit:', command_timeout: '2s' },
      plans: { roomy: { windows: [{ requests: 10_000, per: '1m' }] }, tiny: { windows: [{ requests: 2, per: '1m' }] }, scale: { windows: [] } },
      audit: { redis_stream: STREAM_KEY, flush_interval: '50ms' },
    },
  });
  [mainKey, tinyKey] = await Promise.all([
    gateway.createKey({ account: 'acme-audit', plan: 'roomy' }),
    gateway.createKey({ account: 'tiny-audit', plan: 'tiny' }),
  ]);
});

afterAll(async () => {
  await gateway?.close();
  inspect?.disconnect();
  await upstream?.close();
  await redis?.close();
});

async function streamEntries(): Promise<{ raw: string; record: AuditRecord }[]> {
  const entries = await inspect.xrange(STREAM_KEY, '-', '+');
  return entries.map(([, fields]) => {
    expect(fields).toHaveLength(2);
    expect(fields[0]).toBe('record');
    return { raw: fields[1]!, record: JSON.parse(fields[1]!) as AuditRecord };
  });
}

async function fileLines(): Promise<string[]> {
  const text = await readFile(join(gateway.dir, 'audit.jsonl'), 'utf8').catch(() => '');
  return text.split('\n').filter(Boolean);
}

/** Polls both sinks until every id is there (the flush interval is 50 ms). */
async function waitForIds(ids: string[], timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const inStream = new Set((await streamEntries()).map((e) => e.record.request_id));
    const inFile = new Set((await fileLines()).map(requestIdOfLine));
    const missing = ids.filter((id) => !inStream.has(id) || !inFile.has(id));
    if (missing.length === 0) return;
    if (Date.now() > deadline) throw new Error(`audit records missing after ${timeoutMs} ms: ${missing.join(', ')}`);
    await sleep(25);
  }
}

describe('a mixed run through the gateway', () => {
  const sent: Sent[] = [];
  const unauthenticatedIds: string[] = [];
  let runStartedMs = 0;
  let runEndedMs = 0;

  async function sendJson(input: {
    label: string;
    agent?: string;
    key?: { rawKey: string; keyId: string } | undefined;
    body: unknown;
    expect: Omit<Sent, 'id' | 'agent' | 'route' | 'keyId' | 'account' | 'plan' | 'bytesIn' | 'bytesOut' | 'userId' | 'sessionId'> & { bytesIn?: number };
    account?: string;
    plan?: string;
  }): Promise<void> {
    const id = `mix-${sent.length + unauthenticatedIds.length}-${input.label}`;
    const agent = input.agent ?? 'support';
    const text = typeof input.body === 'string' ? input.body : JSON.stringify(input.body);
    const response = await postChat(gateway.url, `/agents/${agent}/api/v1/chat`, input.key?.rawKey, text, { 'x-request-id': id });
    const body = Buffer.from(await response.arrayBuffer());
    expect(response.headers.get('x-request-id')).toBe(id);
    expect(response.status, input.label).toBe(input.expect.status);
    // A body that failed validation is not trusted for its context: the record says null.
    const validated = input.expect.status !== 400;
    const context = validated && typeof input.body === 'object' && input.body ? (input.body as { context?: { user_id?: string; session_id?: string } }).context : undefined;
    sent.push({
      id,
      agent,
      route: 'chat',
      keyId: input.key?.keyId ?? '',
      account: input.account ?? 'acme-audit',
      plan: input.plan ?? 'roomy',
      ...input.expect,
      bytesIn: input.expect.bytesIn ?? Buffer.byteLength(text),
      bytesOut: body.length,
      userId: context?.user_id ?? null,
      sessionId: context?.session_id ?? null,
    });
  }

  async function sendUnauthenticated(label: string, authorization: string | undefined): Promise<void> {
    const id = `mix-${sent.length + unauthenticatedIds.length}-${label}`;
    const headers: Record<string, string> = { 'x-request-id': id };
    if (authorization) headers.authorization = authorization;
    const response = await postChat(gateway.url, '/agents/support/api/v1/chat', undefined, { message: SECRET_MESSAGE }, headers);
    await response.arrayBuffer();
    expect(response.status).toBe(401);
    expect(response.headers.get('x-request-id')).toBe(id);
    unauthenticatedIds.push(id);
  }

  async function sendStream(label: string, scenario: 'ok' | 'reset' | 'endless', expected: Pick<Sent, 'outcome' | 'tokens'>, context?: { user_id: string; session_id: string }): Promise<void> {
    const id = `mix-${sent.length + unauthenticatedIds.length}-${label}`;
    const body = JSON.stringify({ message: SECRET_MESSAGE, scenario, ...(context ? { context } : {}) });
    const stream = await openSse(`${gateway.url}/agents/support/api/v1/chat/stream`, mainKey.rawKey, body, { 'x-request-id': id });
    expect(stream.status).toBe(200);
    expect(stream.headers['x-request-id']).toBe(id);
    let bytesOut: number | undefined;
    if (scenario === 'endless') {
      // Disconnect once the stream is flowing, then wait for the gateway to drop the upstream.
      const deadline = Date.now() + 3_000;
      while (!stream.events.some((e) => e.name === 'token') && Date.now() < deadline) await sleep(10);
      expect(stream.events.some((e) => e.name === 'token')).toBe(true);
      stream.abort();
      await upstream.requests.at(-1)!.closed;
    } else {
      await stream.ended;
      bytesOut = Buffer.byteLength(stream.text());
      expect(stream.events.at(-1)!.name).toBe(scenario === 'ok' ? 'done' : 'error');
    }
    sent.push({
      id,
      agent: 'support',
      route: 'chat/stream',
      keyId: mainKey.keyId,
      account: 'acme-audit',
      plan: 'roomy',
      status: 200,
      ...expected,
      bytesIn: Buffer.byteLength(body),
      bytesOut,
      reachedUpstream: true,
      userId: context?.user_id ?? null,
      sessionId: context?.session_id ?? null,
    });
  }

  beforeAll(async () => {
    runStartedMs = Date.now();
    const ok = { status: 200, outcome: 'ok', tokens: CHAT_TOKENS, reachedUpstream: true } as const;
    const invalid = { status: 400, outcome: 'invalid_request', tokens: null, reachedUpstream: false } as const;
    const limited = { status: 429, outcome: 'rate_limited', tokens: null, reachedUpstream: false, bytesIn: 0 } as const;

    await sendJson({ label: 'chat-ok', key: mainKey, body: { message: SECRET_MESSAGE, context: { user_id: 'user-42', session_id: 'sess-7' } }, expect: ok });
    await sendJson({ label: 'chat-ok-no-context', key: mainKey, body: { message: SECRET_MESSAGE }, expect: ok });
    await sendJson({ label: 'invalid-empty-message', key: mainKey, body: { message: '', context: { user_id: 'user-42' } }, expect: invalid });
    await sendUnauthenticated('missing-key', undefined);
    await sendJson({ label: 'invalid-json', key: mainKey, body: `{"message": "${SECRET_MESSAGE}"`, expect: invalid });
    await sendUnauthenticated('bad-key', 'Bearer ha_notARealKeyAtAll0000000000000000000');
    for (let i = 0; i < 4; i += 1) {
      await sendJson({ label: `tiny-${i}`, key: tinyKey, account: 'tiny-audit', plan: 'tiny', body: { message: SECRET_MESSAGE }, expect: i < 2 ? ok : limited });
    }
    await sendStream('stream-ok', 'ok', { outcome: 'ok', tokens: STREAM_TOKENS }, { user_id: 'user-9', session_id: 'sess-stream' });
    await sendStream('stream-ok-2', 'ok', { outcome: 'ok', tokens: STREAM_TOKENS });
    await sendStream('stream-client-abort', 'endless', { outcome: 'client_closed', tokens: null });
    await sendStream('stream-upstream-reset', 'reset', { outcome: 'upstream_error', tokens: null });
    await sendJson({ label: 'connect-refused', agent: 'down', key: mainKey, body: { message: SECRET_MESSAGE }, expect: { status: 503, outcome: 'upstream_error', tokens: null, reachedUpstream: true } });
    await sendJson({ label: 'headers-timeout', agent: 'slow', key: mainKey, body: { message: SECRET_MESSAGE, scenario: 'hang' }, expect: { status: 503, outcome: 'timeout', tokens: null, reachedUpstream: true } });
    // A last plain request: once its record is in, every earlier one would be too (batches keep order).
    await sendJson({ label: 'chat-last', key: mainKey, body: { message: SECRET_MESSAGE }, expect: ok });
    runEndedMs = Date.now();
    await waitForIds(sent.map((s) => s.id));
  });

  it('writes exactly one record per request id to each sink, and none for a 401', async () => {
    const expectedIds = sent.map((s) => s.id).sort();
    const streamIds = (await streamEntries()).map((e) => e.record.request_id).sort();
    const fileIds = (await fileLines()).map(requestIdOfLine).sort();
    expect(streamIds).toEqual(expectedIds);
    expect(fileIds).toEqual(expectedIds);
    for (const id of unauthenticatedIds) {
      expect(streamIds).not.toContain(id);
      expect(fileIds).not.toContain(id);
    }
  });

  it('gives each record every field of the audit record contract with its type and the value this request earned', async () => {
    const records = new Map((await streamEntries()).map((e) => [e.record.request_id, e.record]));
    const fromFile = new Map((await fileLines()).map((line) => { const r = JSON.parse(line) as AuditRecord; return [r.request_id, r]; }));
    for (const request of sent) {
      const record = records.get(request.id)!;
      const label = request.id;
      // Both sinks carry the same record.
      expect(fromFile.get(request.id), label).toEqual(record);
      expect(Object.keys(record).sort(), label).toEqual(RECORD_FIELDS);

      // The record's own id is the gateway's (a UUIDv7 of the arrival time), never the client's X-Request-Id.
      expect(record.request_id, label).toBe(request.id);
      expect(record.id, label).toMatch(UUID_V7);
      expect(record.id, label).not.toBe(request.id);
      expect(parseInt(record.id.slice(0, 8) + record.id.slice(9, 13), 16), label).toBe(Date.parse(record.ts));

      expect(typeof record.ts, label).toBe('string');
      expect(new Date(record.ts).toISOString(), label).toBe(record.ts);
      expect(Date.parse(record.ts), label).toBeGreaterThanOrEqual(runStartedMs);
      expect(Date.parse(record.ts), label).toBeLessThanOrEqual(runEndedMs);

      expect(record.key_id, label).toBe(request.keyId);
      expect(record.account, label).toBe(request.account);
      expect(record.plan, label).toBe(request.plan);
      expect(record.agent, label).toBe(request.agent);
      expect(record.route, label).toBe(request.route);
      expect(record.status, label).toBe(request.status);
      expect(record.outcome, label).toBe(request.outcome);
      expect(record.tokens_used, label).toBe(request.tokens);
      expect(record.client_ip, label).toBe('127.0.0.1');
      expect(record.user_id, label).toBe(request.userId);
      expect(record.session_id, label).toBe(request.sessionId);
      expect(record.bytes_in, label).toBe(request.bytesIn);

      expect(Number.isInteger(record.bytes_out), label).toBe(true);
      if (request.bytesOut !== undefined) expect(record.bytes_out, label).toBe(request.bytesOut);
      else expect(record.bytes_out, label).toBeGreaterThan(0);

      expect(Number.isInteger(record.latency_ms), label).toBe(true);
      expect(record.latency_ms, label).toBeGreaterThanOrEqual(0);
      if (request.reachedUpstream) {
        expect(Number.isInteger(record.upstream_latency_ms), label).toBe(true);
        expect(record.upstream_latency_ms!, label).toBeGreaterThanOrEqual(0);
        expect(record.upstream_latency_ms!, label).toBeLessThanOrEqual(record.latency_ms);
      } else {
        expect(record.upstream_latency_ms, label).toBeNull();
      }
    }
    expect(new Set([...records.values()].map((r) => r.id)).size).toBe(records.size);
    // The agent's 300 ms headers timeout is what ended that request.
    const timedOut = sent.find((s) => s.outcome === 'timeout')!;
    expect(records.get(timedOut.id)!.upstream_latency_ms!).toBeGreaterThanOrEqual(250);
  });

  it('keeps the raw key and the message text out of both sinks and the log', async () => {
    const streamText = (await streamEntries()).map((e) => e.raw).join('\n');
    const fileText = (await fileLines()).join('\n');
    const logText = gateway.logs.join('');
    for (const [where, text] of [['stream', streamText], ['audit file', fileText], ['log', logText]] as const) {
      // Not vacuous: the text does hold the request ids and key ids.
      expect(text, where).toContain(sent[0]!.id);
      expect(text, where).toContain(mainKey.keyId);
      for (const secret of [mainKey.rawKey, tinyKey.rawKey, SECRET_MESSAGE, 'zebra-quartz']) expect(text, where).not.toContain(secret);
    }
    // The rejected key of the 401 is not logged either.
    expect(logText).not.toContain('ha_notARealKeyAtAll');
  });
});
