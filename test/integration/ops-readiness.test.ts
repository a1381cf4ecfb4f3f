// /readyz flips when Redis goes away (refused or hung) and back when it returns; during a
// drain it answers 503 while in-flight requests and streams finish, new connections are
// refused, streams still open at the grace period end with `event: error` (shutting_down),
// and the audit log is flushed before close() resolves.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { postChat, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { openSse } from '../helpers/sse-client.js';
import { sleep } from '../helpers/wait.js';

const cleanups: (() => Promise<void>)[] = [];

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
});

async function readiness(gateway: TestGateway): Promise<{ status: number; body: { status: string; reason?: string } }> {
  const res = await fetch(`${gateway.adminUrl}/readyz`);
  return { status: res.status, body: (await res.json()) as { status: string; reason?: string } };
}

async function waitForReadiness(gateway: TestGateway, status: number, timeoutMs = 8_000): Promise<{ status: string; reason?: string }> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const answer = await readiness(gateway);
    if (answer.status === status) return answer.body;
    if (Date.now() > deadline) throw new Error(`/readyz stayed ${answer.status} ${JSON.stringify(answer.body)}; expected ${status}`);
    await sleep(50);
  }
}

describe('readiness and Redis', () => {
  let redis: TestRedis;
  let gateway: TestGateway;
  let upstream: FakeUpstream;

  it('is ready with Redis up, 503 while it is stopped or hung, and ready again when it returns; /healthz stays 200', async () => {
    redis = await startRedis({ controllable: true });
    cleanups.push(() => redis.close());
    upstream = await startFakeUpstream();
    cleanups.push(() => upstream.close());
    gateway = await startTestGateway({ agents: { support: upstream.baseUrl }, redisUrl: redis.url });
    cleanups.push(() => gateway.close());

    expect(await waitForReadiness(gateway, 200)).toEqual({ status: 'ready' });

    await redis.stop();
    expect(await waitForReadiness(gateway, 503)).toEqual({ status: 'not_ready', reason: 'redis unreachable' });
    expect((await fetch(`${gateway.adminUrl}/healthz`)).status).toBe(200);

    await redis.start();
    expect(await waitForReadiness(gateway, 200)).toEqual({ status: 'ready' });

    // A hung server (SIGSTOP) answers nothing: the PING times out after redis.command_timeout.
    redis.pause();
    try {
      expect(await waitForReadiness(gateway, 503)).toEqual({ status: 'not_ready', reason: 'redis unreachable' });
    } finally {
      redis.resume();
    }
    expect(await waitForReadiness(gateway, 200)).toEqual({ status: 'ready' });
  });
});

describe('drain', () => {
  it('answers 503 while draining, refuses new connections, finishes in-flight work and ends open streams at the grace period', async () => {
    let streamWritten!: () => void;
    const streamStarted = new Promise<void>((resolve) => (streamWritten = resolve));
    const upstream = await startFakeUpstream(async (req, res) => {
      if (req.url?.endsWith('/chat/stream')) {
        // A long answer: still streaming when the grace period runs out.
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('event: token\ndata: {"content":"still "}\n\n');
        streamWritten();
        return;
      }
      await sleep(600);
      const body = JSON.stringify({ response: 'slow but whole', tool_calls: [], metadata: { tokens_used: 3 } });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    });
    cleanups.push(() => upstream.close());
    const gateway = await startTestGateway({ agents: { support: upstream.baseUrl }, config: { stream: { heartbeat: '10s', idle_timeout: '30s' } } });
    cleanups.push(() => gateway.close());
    const { rawKey } = await gateway.createKey();
    expect((await readiness(gateway)).status).toBe(200);

    const stream = await openSse(`${gateway.url}/agents/support/api/v1/chat/stream`, rawKey, { message: 'long' }, { 'x-request-id': 'drain-stream-1' });
    await streamStarted;
    const slow = postChat(gateway.url, '/agents/support/api/v1/chat', rawKey, { message: 'slow' }, { 'x-request-id': 'drain-json-1' });
    await sleep(100);

    const graceMs = 1_500;
    const drainStartedAt = performance.now();
    const closed = gateway.running.close(graceMs);

    expect(await readiness(gateway)).toEqual({ status: 503, body: { status: 'not_ready', reason: 'draining' } });
    expect((await fetch(`${gateway.adminUrl}/healthz`)).status).toBe(200);
    await expect(fetch(`${gateway.url}/agents/support/api/v1/chat`, { method: 'POST' })).rejects.toThrow();

    const slowAnswer = await slow;
    expect(slowAnswer.status).toBe(200);
    expect(await slowAnswer.json()).toMatchObject({ response: 'slow but whole' });

    await stream.ended;
    const endedAfterMs = performance.now() - drainStartedAt;
    expect(endedAfterMs).toBeGreaterThanOrEqual(graceMs - 100);
    expect(stream.events[0]).toMatchObject({ name: 'token' });
    const last = stream.events.at(-1)!;
    expect(last.name).toBe('error');
    expect(JSON.parse(last.data)).toMatchObject({ type: 'shutting_down', request_id: 'drain-stream-1' });

    await closed;
    // Flushed before close() resolved: both requests have their audit record on disk.
    const records = (await readFile(join(gateway.dir, 'audit.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { request_id: string; status: number; outcome: string });
    expect(records.find((r) => r.request_id === 'drain-json-1')).toMatchObject({ status: 200, outcome: 'ok' });
    expect(records.find((r) => r.request_id === 'drain-stream-1')).toMatchObject({ status: 200 });
    // The admin listener goes last.
    await expect(fetch(`${gateway.adminUrl}/healthz`)).rejects.toThrow();
  });

  it('does not wait out the grace period for keep-alive connections whose requests finished during the drain', async () => {
    const upstream = await startFakeUpstream(async (_req, res) => {
      await sleep(400);
      const body = JSON.stringify({ response: 'ok', tool_calls: [], metadata: { tokens_used: 1 } });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    });
    cleanups.push(() => upstream.close());
    const gateway = await startTestGateway({ agents: { support: upstream.baseUrl } });
    cleanups.push(() => gateway.close());
    const { rawKey } = await gateway.createKey();
    // fetch keeps its connection alive for reuse once the answer is in.
    const inFlight = postChat(gateway.url, '/agents/support/api/v1/chat', rawKey, { message: 'hi' });
    await sleep(100);
    // A grace of an hour, far beyond the test's timeout: that close() resolves at all shows
    // the connection, idle after its answer, was closed rather than waited for.
    const closed = gateway.running.close(3_600_000);
    expect((await inFlight).status).toBe(200);
    await closed;
  });
});
