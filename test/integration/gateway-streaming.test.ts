// /chat/stream against real sockets: unbuffered relay, headers before the first token,
// heartbeats, the final error event on abnormal ends, and aborting the upstream on disconnect.
import type { ServerResponse } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { defaultHandler, startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { openSse, type SseResponse } from '../helpers/sse-client.js';
import { sleep, waitFor } from '../helpers/wait.js';

let upstream: FakeUpstream;
let gateway: TestGateway;
let key: string;
const STREAM_PATH = '/agents/support/api/v1/chat/stream';

beforeAll(async () => {
  upstream = await startFakeUpstream();
  gateway = await startTestGateway({
    agents: { support: upstream.baseUrl },
    config: { stream: { heartbeat: '150ms', idle_timeout: '700ms', max_duration: '3s' } },
  });
  ({ rawKey: key } = await gateway.createKey());
});

afterEach(() => upstream.handle(defaultHandler));

afterAll(async () => {
  await gateway?.close();
  await upstream?.close();
});

function sseHead(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.flushHeaders();
}

describe('streaming relay', () => {
  it('relays every event before the runner writes the next one (never batched)', async () => {
    // Lockstep instead of a timing bound: the runner writes event i+1 only once the client
    // holds event i. A relay that held an event back would stall this loop until its wait
    // gives up, however fast or slow the machine is.
    let received: SseResponse | undefined;
    let stalledAt = -1;
    upstream.handle(async (_req, res) => {
      sseHead(res);
      for (let i = 0; i < 10; i++) {
        res.write(`event: token\ndata: {"content":"t${i} "}\n\n`);
        const seen = await waitFor(`token ${i} at the client`, () => (received?.events.filter((e) => e.name === 'token').length ?? 0) > i, 5_000, 2).then(() => true, () => false);
        if (!seen) {
          stalledAt = i;
          break;
        }
      }
      res.end('event: done\ndata: {"tokens_used":10,"latency_ms":1000}\n\n');
    });
    received = await openSse(`${gateway.url}${STREAM_PATH}`, key, { message: 'hi' });
    const stream = received;
    await stream.ended;
    expect(stalledAt, 'the event the client never received before the next was due').toBe(-1);
    expect(stream.status).toBe(200);
    expect(stream.headers['content-type']).toMatch(/^text\/event-stream/);
    expect(stream.headers['cache-control']).toBe('no-cache');
    expect(stream.headers['x-accel-buffering']).toBe('no');
    expect(stream.headers['content-encoding']).toBeUndefined();
    const tokens = stream.events.filter((e) => e.name === 'token');
    expect(tokens.map((e) => JSON.parse(e.data).content)).toEqual(Array.from({ length: 10 }, (_, i) => `t${i} `));
    expect(stream.events.at(-1)).toMatchObject({ name: 'done' });
  });

  it('sends the response headers before a delayed first token', async () => {
    // The runner holds its first token until the client has the headers (or 5 s pass): if
    // the gateway held the headers back for the first token, the client would get them only
    // after the token was sent. Ordered by events, not by a stopwatch.
    let clientHasHeaders!: () => void;
    const headersSeen = new Promise<void>((resolve) => (clientHasHeaders = resolve));
    let tokenSent = false;
    upstream.handle(async (_req, res) => {
      sseHead(res);
      await Promise.race([headersSeen, sleep(5_000)]);
      tokenSent = true;
      res.write('event: token\ndata: {"content":"late"}\n\n');
      res.end('event: done\ndata: {"tokens_used":1,"latency_ms":600}\n\n');
    });
    const stream = await openSse(`${gateway.url}${STREAM_PATH}`, key, { message: 'hi' });
    expect(tokenSent).toBe(false);
    expect(stream.events).toEqual([]);
    clientHasHeaders();
    await stream.ended;
    expect(stream.events.map((e) => e.name)).toEqual(['token', 'done']);
  });

  it('passes unknown event kinds through unchanged', async () => {
    const raw = 'event: tool_call\ndata: {"tool":"search","input":{"q":"x"}}\n\nid: 7\nretry: 1000\nevent: token\ndata: {"content":"a"}\n\nevent: done\ndata: {"tokens_used":1,"latency_ms":2}\n\n';
    upstream.handle((_req, res) => {
      sseHead(res);
      res.end(raw);
    });
    const stream = await openSse(`${gateway.url}${STREAM_PATH}`, key, { message: 'hi' });
    await stream.ended;
    expect(stream.text()).toBe(raw);
  });

  it('writes ": ping" heartbeats while the upstream is idle, never inside an event', async () => {
    upstream.handle(async (_req, res) => {
      sseHead(res);
      res.write('event: token\ndata: {"con');
      await sleep(400);
      res.write('tent":"a"}\n\n');
      await sleep(400);
      res.end('event: done\ndata: {"tokens_used":1,"latency_ms":2}\n\n');
    });
    const stream = await openSse(`${gateway.url}${STREAM_PATH}`, key, { message: 'hi' });
    await stream.ended;
    const text = stream.text();
    expect(text).toContain(': ping\n\n');
    expect(text).toContain('event: token\ndata: {"content":"a"}\n\n');
    expect(stream.events.filter((e) => e.name === 'token').map((e) => e.data)).toEqual(['{"content":"a"}']);
  });
});

describe('abnormal stream ends', () => {
  it('ends with event: error when the upstream resets mid-stream', async () => {
    upstream.handle(async (_req, res) => {
      sseHead(res);
      res.write('event: token\ndata: {"content":"a"}\n\n');
      await sleep(50);
      res.socket?.destroy();
    });
    const stream = await openSse(`${gateway.url}${STREAM_PATH}`, key, { message: 'hi' });
    await stream.ended;
    const last = stream.events.at(-1)!;
    expect(last.name).toBe('error');
    expect(JSON.parse(last.data)).toMatchObject({ type: 'upstream_error', request_id: stream.headers['x-request-id'] });
  });

  it('ends with event: error when the upstream goes idle past stream.idle_timeout', async () => {
    upstream.handle((_req, res) => {
      sseHead(res);
      res.write('event: token\ndata: {"content":"a"}\n\n');
    });
    const stream = await openSse(`${gateway.url}${STREAM_PATH}`, key, { message: 'hi' });
    await stream.ended;
    expect(stream.events.at(-1)!.name).toBe('error');
    expect(JSON.parse(stream.events.at(-1)!.data).type).toBe('upstream_timeout');
    expect(stream.text()).toContain(': ping');
  });

  it('ends with event: error at stream.max_duration even while tokens flow', async () => {
    upstream.handle((_req, res) => {
      sseHead(res);
      const timer = setInterval(() => res.write('event: token\ndata: {"content":"."}\n\n'), 100);
      res.on('close', () => clearInterval(timer));
    });
    const stream = await openSse(`${gateway.url}${STREAM_PATH}`, key, { message: 'hi' });
    await stream.ended;
    expect(JSON.parse(stream.events.at(-1)!.data).type).toBe('stream_timeout');
    expect(stream.events.at(-1)!.atMs - stream.startedAtMs).toBeGreaterThanOrEqual(2900);
  });

  it('ends with event: error when the upstream closes without a done event', async () => {
    upstream.handle((_req, res) => {
      sseHead(res);
      res.end('event: token\ndata: {"content":"a"}\n\nevent: tok');
    });
    const stream = await openSse(`${gateway.url}${STREAM_PATH}`, key, { message: 'hi' });
    await stream.ended;
    expect(stream.events.at(-1)!.name).toBe('error');
    expect(JSON.parse(stream.events.at(-1)!.data).type).toBe('upstream_error');
  });

  it('aborts the upstream request within 500 ms when the client disconnects', async () => {
    upstream.handle((_req, res) => {
      sseHead(res);
      const timer = setInterval(() => res.write('event: token\ndata: {"content":"."}\n\n'), 50);
      res.on('close', () => clearInterval(timer));
    });
    const stream = await openSse(`${gateway.url}${STREAM_PATH}`, key, { message: 'hi' });
    await sleep(200);
    const seen = upstream.requests.at(-1)!;
    const abortedAt = performance.now();
    stream.abort();
    const closedAt = await Promise.race([seen.closed, sleep(2000).then(() => Number.POSITIVE_INFINITY)]);
    expect(closedAt - abortedAt).toBeLessThan(500);
    expect(upstream.openRequests()).toBe(0);
  });

  it('answers 503 agent_unavailable when the stream route answers without an event stream', async () => {
    upstream.handle((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html>oops</html>');
    });
    const stream = await openSse(`${gateway.url}${STREAM_PATH}`, key, { message: 'hi' });
    await stream.ended;
    expect(stream.status).toBe(503);
    expect(JSON.parse(stream.text()).error.type).toBe('agent_unavailable');
    expect(stream.headers['retry-after']).toBe('2');
  });

  it('passes an upstream error status on the stream route through unchanged', async () => {
    upstream.handle((_req, res) => {
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '7' });
      res.end('{"error":"runner busy"}');
    });
    const stream = await openSse(`${gateway.url}${STREAM_PATH}`, key, { message: 'hi' });
    await stream.ended;
    expect(stream.status).toBe(429);
    expect(stream.headers['retry-after']).toBe('7');
    expect(stream.text()).toBe('{"error":"runner busy"}');
  });
});
