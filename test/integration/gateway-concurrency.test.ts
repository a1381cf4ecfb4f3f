// Concurrency caps through HTTP (docs/rate-limits.md "Concurrency caps"), on a real Redis and
// in embedded mode: a cap of N admits N open streams and refuses the next with 429
// concurrency_limit_exceeded; the slot is freed however the stream ends (its done event, the
// client leaving, the runner failing, the runner's deadline); JSON requests never take one;
// a key's own `limits.concurrency` applies to that key only.
import { join } from 'node:path';
import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metrics } from '../../src/metrics/metrics.js';
import { createRedisClient, type RedisClient } from '../../src/redis/redis-client.js';
import { silentLogger } from '../../src/logger.js';
import { chatResponse, startFakeUpstream, type FakeUpstream, type UpstreamHandler } from '../helpers/fake-upstream.js';
import { postChat, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { openSse, type SseResponse } from '../helpers/sse-client.js';
import { readAuditFile } from '../helpers/audit-records.js';
import { sleep } from '../helpers/wait.js';

const PREFIX = 'gwcc:';
const STREAM = '/agents/support/api/v1/chat/stream';
const SLOW_STREAM = '/agents/slow/api/v1/chat/stream';
const CHAT = '/agents/support/api/v1/chat';

const PLANS = {
  // A request window beside the cap: the refusal must be the cap's, not the window's.
  capped: { windows: [{ requests: 1000, per: '1m' }], concurrency: { streams: 2 } },
  single: { concurrency: { streams: 1 } },
  roomy: { windows: [{ requests: 1000, per: '1m' }], concurrency: { streams: 3 } },
};

/** Streams the runner holds open, by the message the client sent: ended by the test. */
const open = new Map<string, ServerResponse>();
const runner: UpstreamHandler = (req, res, seen) => {
  const message = (JSON.parse(seen.body.toString('utf8')) as { message: string }).message;
  if (message === 'silent') return; // never answers: the agent's timeout ends it
  if (!req.url?.endsWith('/chat/stream')) {
    const json = JSON.stringify(chatResponse('hi', 1));
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(json) });
    res.end(json);
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.write('event: token\ndata: {"content":"Hi"}\n\n');
  open.set(message, res);
};

function endStream(message: string): void {
  const res = open.get(message)!;
  open.delete(message);
  res.end('event: done\ndata: {"tokens_used":1,"latency_ms":1}\n\n');
}

function failStream(message: string): void {
  const res = open.get(message)!;
  open.delete(message);
  res.socket?.destroy();
}

let redis: TestRedis;
let inspect: RedisClient;
let upstream: FakeUpstream;
let onRedis: TestGateway;
let embedded: TestGateway;

beforeAll(async () => {
  [redis, upstream] = await Promise.all([startRedis(), startFakeUpstream(runner)]);
  inspect = createRedisClient({ url: redis.url, prefix: PREFIX, commandTimeoutMs: 2_000 }, silentLogger, 'test-inspect');
  // `slow`: the same runner behind a 1 s headers deadline.
  const agents = { support: upstream.baseUrl, slow: { upstream: upstream.baseUrl, timeout: '1s' } };
  [onRedis, embedded] = await Promise.all([
    // A roomy command timeout: on a loaded machine a 100 ms one fails calls over to the
    // memory limiter (on_store_error: allow), whose slots the Redis checks here cannot see.
    startTestGateway({ agents, config: { plans: PLANS, redis: { prefix: PREFIX, command_timeout: '2s' }, keys: { store: 'redis' } }, redisUrl: redis.url }),
    startTestGateway({ agents, config: { plans: PLANS } }),
  ]);
});

afterAll(async () => {
  for (const message of [...open.keys()]) endStream(message);
  await Promise.all([onRedis?.close(), embedded?.close()]);
  inspect?.disconnect();
  await upstream?.close();
  await redis?.close();
});

async function stream(gateway: TestGateway, key: string, message: string, path = STREAM): Promise<SseResponse> {
  return openSse(`${gateway.url}${path}`, key, { message });
}

async function refusal(response: SseResponse): Promise<{ status: number; type: string; retryAfter: string | undefined }> {
  await response.ended;
  const type = (JSON.parse(response.text()) as { error: { type: string } }).error.type;
  return { status: response.status, type, retryAfter: response.headers['retry-after'] as string | undefined };
}

/** Until the runner holds `message`'s stream open (it registers after reading the body). */
async function runnerHolds(message: string): Promise<void> {
  for (let i = 0; i < 500 && !open.has(message); i += 1) await sleep(10);
  expect(open.has(message)).toBe(true);
}

/** Slots held in Redis for an account (what every instance counts). */
function slotsInRedis(account: string): Promise<number> {
  return inspect.zcard(`${PREFIX}streams:{account:${account}}`);
}

/**
 * Opens streams until one is admitted (the freed slot); a refusal meanwhile is the cap's. A
 * released slot is given back within a turn or two; the 30 s lease is far beyond this loop,
 * so an admission here proves the release, not the lease's expiry.
 */
async function admittedAgain(gateway: TestGateway, key: string, message: string): Promise<SseResponse> {
  for (let i = 0; i < 100; i += 1) {
    const response = await stream(gateway, key, message);
    if (response.status === 200) return response;
    expect(await refusal(response)).toMatchObject({ status: 429, type: 'concurrency_limit_exceeded' });
    await sleep(50);
  }
  throw new Error('the slot was never freed');
}

describe.each([
  ['on Redis', () => onRedis, 'redis'],
  ['embedded (memory)', () => embedded, 'mem'],
])('a cap of 2 streams, %s', (_mode, gatewayOf, tag) => {
  it('admits 2 streams, refuses the 3rd with 429 concurrency_limit_exceeded and Retry-After: 1; JSON requests take no slot', async () => {
    const gateway = gatewayOf();
    const account = `cap2-${tag}`;
    const { rawKey } = await gateway.createKey({ account, plan: 'capped' });
    const before = (await metrics.concurrencyLimited.get()).values.find((v) => v.labels.plan === 'capped')?.value ?? 0;
    const first = await stream(gateway, rawKey, `${account}-1`);
    const second = await stream(gateway, rawKey, `${account}-2`);
    expect([first.status, second.status]).toEqual([200, 200]);
    if (tag === 'redis') expect(await slotsInRedis(account)).toBe(2);

    const third = await stream(gateway, rawKey, `${account}-3`);
    expect(await refusal(third)).toEqual({ status: 429, type: 'concurrency_limit_exceeded', retryAfter: '1' });
    // The window's headers still describe the request window (the refused stream was not counted).
    expect(third.headers['x-ratelimit-remaining']).toBe('998');
    expect(third.headers['ratelimit-policy']).toBe('"minute";q=1000;w=60');
    const after = (await metrics.concurrencyLimited.get()).values.find((v) => v.labels.plan === 'capped')?.value ?? 0;
    expect(after - before).toBe(1);

    // A JSON request of the same key needs no slot.
    const json = await postChat(gateway.url, CHAT, rawKey, { message: 'json' });
    expect(json.status).toBe(200);
    await json.text();

    await runnerHolds(`${account}-1`);
    await runnerHolds(`${account}-2`);
    endStream(`${account}-1`);
    endStream(`${account}-2`);
    await Promise.all([first.ended, second.ended]);
    let outcomes: string[] = [];
    for (let i = 0; i < 100 && outcomes.length < 4; i += 1) {
      outcomes = (await readAuditFile(join(gateway.dir, 'audit.jsonl'))).filter((r) => r.account === account).map((r) => r.outcome);
      if (outcomes.length < 4) await sleep(20);
    }
    expect(outcomes.sort()).toEqual(['concurrency_limit_exceeded', 'ok', 'ok', 'ok']);
  });

  it.each([
    ['its done event', 'done'],
    ['the client leaving', 'abort'],
    ['the runner failing mid-stream', 'upstream'],
    ["the runner's headers deadline (the agent's timeout)", 'deadline'],
  ])('frees the slot on %s', async (_end, kind) => {
    const gateway = gatewayOf();
    const account = `free-${kind}-${tag}`;
    const { rawKey } = await gateway.createKey({ account, plan: 'single' });
    let holder: SseResponse;
    if (kind === 'deadline') {
      // Holds its slot while it waits for the runner's headers, which never come.
      const pending = stream(gateway, rawKey, 'silent', SLOW_STREAM);
      if (tag === 'redis') for (let i = 0; i < 200 && (await slotsInRedis(account)) === 0; i += 1) await sleep(10);
      const refused = await stream(gateway, rawKey, `${account}-refused`);
      expect(await refusal(refused)).toMatchObject({ status: 429, type: 'concurrency_limit_exceeded' });
      holder = await pending;
      // The agent's timeout passed without the runner's headers.
      expect(holder.status).toBe(503);
    } else {
      holder = await stream(gateway, rawKey, `${account}-held`);
      expect(holder.status).toBe(200);
      await runnerHolds(`${account}-held`);
      const refused = await stream(gateway, rawKey, `${account}-refused`);
      expect(await refusal(refused)).toMatchObject({ status: 429, type: 'concurrency_limit_exceeded' });
      if (kind === 'done') endStream(`${account}-held`);
      else if (kind === 'abort') holder.abort();
      else failStream(`${account}-held`);
    }
    await holder.ended;
    const next = await admittedAgain(gateway, rawKey, `${account}-next`);
    if (tag === 'redis') expect(await slotsInRedis(account)).toBe(1);
    await runnerHolds(`${account}-next`);
    endStream(`${account}-next`);
    await next.ended;
    if (tag === 'redis') {
      for (let i = 0; i < 100 && (await slotsInRedis(account)) !== 0; i += 1) await sleep(10);
      expect(await slotsInRedis(account)).toBe(0);
    }
  });

  it("a key's own limits.concurrency applies to that key only", async () => {
    const gateway = gatewayOf();
    const own = await gateway.createKey({ account: `own-${tag}`, plan: 'roomy', limits: { concurrency: { streams: 1, lease: '10s' } } });
    const plain = await gateway.createKey({ account: `plain-${tag}`, plan: 'roomy' });
    const ownFirst = await stream(gateway, own.rawKey, `own-${tag}-1`);
    expect(ownFirst.status).toBe(200);
    expect(await refusal(await stream(gateway, own.rawKey, `own-${tag}-2`))).toMatchObject({ status: 429, type: 'concurrency_limit_exceeded' });
    const plainStreams: SseResponse[] = [];
    for (let i = 1; i <= 3; i += 1) plainStreams.push(await stream(gateway, plain.rawKey, `plain-${tag}-${i}`));
    expect(plainStreams.map((s) => s.status)).toEqual([200, 200, 200]);
    expect(await refusal(await stream(gateway, plain.rawKey, `plain-${tag}-4`))).toMatchObject({ status: 429, type: 'concurrency_limit_exceeded' });
    for (const message of [`own-${tag}-1`, `plain-${tag}-1`, `plain-${tag}-2`, `plain-${tag}-3`]) {
      await runnerHolds(message);
      endStream(message);
    }
    await Promise.all([ownFirst.ended, ...plainStreams.map((s) => s.ended)]);
  });
});

describe('the slot set on Redis', () => {
  it("is the subject's hash-tagged sorted set: member per stream, score = expiry within the lease", async () => {
    const account = 'layout';
    const { rawKey } = await onRedis.createKey({ account, plan: 'capped' });
    const held = await stream(onRedis, rawKey, 'layout-1');
    expect(held.status).toBe(200);
    const [time] = await Promise.all([inspect.time()]);
    const serverNowMs = Number(time[0]) * 1000 + Math.floor(Number(time[1]) / 1000);
    const entries = await inspect.zrange(`${PREFIX}streams:{account:${account}}`, 0, -1, 'WITHSCORES');
    expect(entries).toHaveLength(2);
    const expiry = Number(entries[1]);
    // Default lease 30 s: the expiry lies ahead of now, and not past now + lease.
    expect(expiry).toBeGreaterThan(serverNowMs);
    expect(expiry).toBeLessThanOrEqual(serverNowMs + 30_000);
    const ttl = await inspect.pttl(`${PREFIX}streams:{account:${account}}`);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(30_000);
    await runnerHolds('layout-1');
    endStream('layout-1');
    await held.ended;
  });
});
