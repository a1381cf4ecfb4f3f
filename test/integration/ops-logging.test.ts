// Logs: one JSON line per request with the fields operators search by, the W3C trace id
// (passed through or started), key material redacted, the level from config, and the
// human rendering used only on a terminal.
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, flushLogger, formatPrettyLine, wantsPrettyLogs } from '../../src/logger.js';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { postChat, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { openSse } from '../helpers/sse-client.js';

let upstream: FakeUpstream;
let gateway: TestGateway;
let key: string;
let keyId: string;

beforeAll(async () => {
  upstream = await startFakeUpstream();
  gateway = await startTestGateway({ agents: { support: upstream.baseUrl } });
  ({ rawKey: key, keyId } = await gateway.createKey());
});

afterAll(async () => {
  await gateway?.close();
  await upstream?.close();
});

type Line = Record<string, unknown>;

async function requestLines(requestId: string): Promise<Line[]> {
  const deadline = Date.now() + 3_000;
  for (;;) {
    const lines = gateway.logs
      .flatMap((chunk) => chunk.split('\n'))
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as Line)
      .filter((line) => line.msg === 'request' && line.request_id === requestId);
    if (lines.length > 0 || Date.now() > deadline) return lines;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function captureLogger(level: string, base?: Record<string, unknown>) {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      callback();
    },
  });
  return { logger: createLogger({ level, destination, base }), lines };
}

describe('request log line', () => {
  it('writes exactly one JSON line per request with id, agent, key_id, status, outcome, latency and tokens', async () => {
    const res = await postChat(gateway.url, '/agents/support/api/v1/chat', key, { message: 'hi' }, { 'x-request-id': 'log-ok-1' });
    expect(res.status).toBe(200);
    const lines = await requestLines('log-ok-1');
    expect(lines).toHaveLength(1);
    const line = lines[0]!;
    expect(line).toMatchObject({ level: 30, msg: 'request', request_id: 'log-ok-1', agent: 'support', route: 'chat', key_id: keyId, status: 200, outcome: 'ok', tokens_used: 5 });
    expect(typeof line.latency_ms).toBe('number');
    expect(typeof line.upstream_latency_ms).toBe('number');
    expect(line.trace_id).toMatch(/^[0-9a-f]{32}$/);
  });

  it('follows the level a reload sets: no request lines at warn, back at info', async () => {
    gateway.logger.level = 'warn';
    try {
      expect((await postChat(gateway.url, '/agents/support/api/v1/chat', key, { message: 'hi' }, { 'x-request-id': 'log-quiet-1' })).status).toBe(200);
      // The line would be written when the response closes, just after the client has it.
      await new Promise((resolve) => setTimeout(resolve, 200));
    } finally {
      gateway.logger.level = 'info';
    }
    expect((await postChat(gateway.url, '/agents/support/api/v1/chat', key, { message: 'hi' }, { 'x-request-id': 'log-loud-1' })).status).toBe(200);
    // The later request's line is there, so the earlier one's would be too.
    expect(await requestLines('log-loud-1')).toHaveLength(1);
    expect(await requestLines('log-quiet-1')).toHaveLength(0);
  });

  it('logs rejected and streamed requests too, one line each, never the raw key', async () => {
    await postChat(gateway.url, '/agents/support/api/v1/chat', 'ha_wrongwrongwrong', { message: 'hi' }, { 'x-request-id': 'log-401-1' });
    const stream = await openSse(`${gateway.url}/agents/support/api/v1/chat/stream`, key, { message: 'hi' }, { 'x-request-id': 'log-sse-1' });
    await stream.ended;
    const [rejected] = await requestLines('log-401-1');
    expect(rejected).toMatchObject({ status: 401, error: 'invalid_api_key', agent: 'support' });
    expect(rejected!.key_id).toBeUndefined();
    const streamed = await requestLines('log-sse-1');
    expect(streamed).toHaveLength(1);
    expect(streamed[0]).toMatchObject({ route: 'chat/stream', status: 200, outcome: 'ok', tokens_used: 1, key_id: keyId });
    const everything = gateway.logs.join('');
    expect(everything).not.toContain(key);
    expect(everything).not.toContain('ha_wrongwrongwrong');
  });
});

describe('W3C trace context', () => {
  it('passes a valid traceparent through and logs its trace id', async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const traceparent = `00-${traceId}-00f067aa0ba902b7-01`;
    await postChat(gateway.url, '/agents/support/api/v1/chat', key, { message: 'hi' }, { 'x-request-id': 'log-trace-1', traceparent });
    expect(upstream.requests.at(-1)!.headers.traceparent).toBe(traceparent);
    expect((await requestLines('log-trace-1'))[0]!.trace_id).toBe(traceId);
  });

  it('starts a trace when none (or an invalid one) arrives, and logs the id it sent upstream', async () => {
    for (const [id, headers] of [
      ['log-trace-2', {}],
      ['log-trace-3', { traceparent: 'not-a-traceparent' }],
      ['log-trace-4', { traceparent: `00-${'0'.repeat(32)}-00f067aa0ba902b7-01` }],
    ] as const) {
      await postChat(gateway.url, '/agents/support/api/v1/chat', key, { message: 'hi' }, { 'x-request-id': id, ...headers });
      const sent = upstream.requests.at(-1)!.headers.traceparent as string;
      const match = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(sent);
      expect(match, sent).not.toBeNull();
      expect(match![1]).not.toBe('0'.repeat(32));
      expect((await requestLines(id))[0]!.trace_id).toBe(match![1]);
    }
  });
});

describe('createLogger', () => {
  it('redacts authorization headers and key material wherever they are logged', () => {
    const { logger, lines } = captureLogger('info');
    logger.info({ authorization: 'Bearer ha_secret1', headers: { authorization: 'Bearer ha_secret2' }, req: { headers: { authorization: 'Bearer ha_secret3' } } }, 'a');
    logger.info({ key: 'ha_secret4', created: { rawKey: 'ha_secret5', key: 'ha_secret6' } }, 'b');
    const text = lines.join('\n');
    expect(text).not.toMatch(/ha_secret/);
    expect(JSON.parse(lines[0]!)).toMatchObject({ authorization: '[redacted]', headers: { authorization: '[redacted]' }, req: { headers: { authorization: '[redacted]' } } });
    expect(JSON.parse(lines[1]!)).toMatchObject({ key: '[redacted]', created: { rawKey: '[redacted]', key: '[redacted]' } });
  });

  it('takes its level from config and stamps every line with the label, ISO time, pid and base fields', async () => {
    const { logger, lines } = captureLogger('warn', { worker: 2 });
    logger.info('dropped');
    logger.warn('kept');
    await flushLogger(logger);
    expect(lines).toHaveLength(1);
    const line = JSON.parse(lines[0]!) as Line;
    expect(line).toMatchObject({ level: 'warn', msg: 'kept', pid: process.pid, worker: 2 });
    expect(new Date(line.time as string).toISOString()).toBe(line.time);
  });
});

describe('pretty output', () => {
  it('is used only when stdout is a terminal and JSON was not asked for', () => {
    expect(wantsPrettyLogs(true, {})).toBe(true);
    expect(wantsPrettyLogs(true, { LOG_FORMAT: 'json' })).toBe(false);
    expect(wantsPrettyLogs(false, {})).toBe(false);
    expect(wantsPrettyLogs(undefined, { LOG_FORMAT: 'pretty' })).toBe(false);
  });

  it('renders a JSON line as time, level, message and key=value fields', () => {
    const line = JSON.stringify({ level: 'info', time: '2030-01-02T03:04:05.678Z', pid: 1, msg: 'request', request_id: 'r1', status: 200, tokens_used: null, agents: ['a', 'b'] });
    expect(formatPrettyLine(`${line}\n`)).toBe('03:04:05.678 INFO  request request_id=r1 status=200 agents=["a","b"]\n');
    expect(formatPrettyLine(line, true)).toContain('\x1b[32mINFO \x1b[0m');
    expect(formatPrettyLine('not json')).toBe('not json\n');
  });
});
