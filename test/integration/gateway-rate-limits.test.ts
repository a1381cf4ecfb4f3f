// Rate limits through HTTP (docs/design.md, "Rate-limit headers" and "Plans and limits"): the
// gateway in process on a real Redis, and in embedded mode. Short windows keep the real-time
// waits to a few seconds.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisClient, type RedisClient } from '../../src/redis/redis-client.js';
import { silentLogger } from '../../src/logger.js';
import { defaultHandler, startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { postChat, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { openSse } from '../helpers/sse-client.js';
import { sleep } from '../helpers/wait.js';
import { countedInRedis } from '../helpers/rate-limit-counts.js';

const PREFIX = 'gwrl:';
const CHAT = '/agents/support/api/v1/chat';
const STREAM = '/agents/support/api/v1/chat/stream';
const RATE_LIMIT_HEADERS = ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'ratelimit-policy', 'ratelimit'];

const PLANS = {
  tiny: { windows: [{ requests: 5, per: '2s' }] },
  duo: { windows: [{ requests: 3, per: '1s' }, { requests: 5, per: '10s' }] },
  scale: { windows: [] },
};

let redis: TestRedis;
let inspect: RedisClient;
let upstream: FakeUpstream;
let failing: FakeUpstream;
/** scope: account (the default), on Redis. */
let gateway: TestGateway;
/** scope: key, on the same Redis. */
let perKey: TestGateway;
/** No redis block: the memory limiter. */
let embedded: TestGateway;

function gatewayConfig(options: { redis: boolean; extra?: Record<string, unknown> }): Record<string, unknown> {
  // Many deliberate 401s below: keep the failed-attempt throttle out of the way.
  const config: Record<string, unknown> = { plans: PLANS, keys: { failed_auth: { max_attempts: 1000 } }, ...options.extra };
  if (options.redis) config.redis = { prefix: PREFIX };
  return config;
}

beforeAll(async () => {
  [redis, upstream, failing] = await Promise.all([
    startRedis(),
    startFakeUpstream(),
    startFakeUpstream((_req, res) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end('{"error":"runner broke"}');
    }),
  ]);
  inspect = createRedisClient({ url: redis.url, prefix: PREFIX, commandTimeoutMs: 2_000 }, silentLogger, 'test-inspect');
  const agents = { support: upstream.baseUrl, sales: upstream.baseUrl, flaky: failing.baseUrl };
  [gateway, perKey, embedded] = await Promise.all([
    startTestGateway({ agents, config: gatewayConfig({ redis: true }), redisUrl: redis.url }),
    startTestGateway({ agents, config: gatewayConfig({ redis: true, extra: { rate_limits: { scope: 'key' } } }), redisUrl: redis.url }),
    startTestGateway({ agents, config: gatewayConfig({ redis: false }) }),
  ]);
});

afterAll(async () => {
  await Promise.all([gateway?.close(), perKey?.close(), embedded?.close()]);
  inspect?.disconnect();
  await Promise.all([upstream?.close(), failing?.close()]);
  await redis?.close();
});

interface Answer {
  status: number;
  headers: Headers;
  body: string;
}

async function send(target: TestGateway, key: string | undefined, body: unknown = { message: 'hi' }, path = CHAT, headers: Record<string, string> = {}): Promise<Answer> {
  const response = await postChat(target.url, path, key, body, headers);
  return { status: response.status, headers: response.headers, body: await response.text() };
}

function remaining(answer: Answer): number {
  return Number(answer.headers.get('x-ratelimit-remaining'));
}

function errorType(answer: Answer): string {
  return (JSON.parse(answer.body) as { error: { type: string } }).error.type;
}

/** Splits `"2s";r=4;t=2` into its parts. */
function parseRateLimit(value: string | null): { name: string; r: number; t: number } {
  const match = /^"([^"]+)";r=(\d+);t=(\d+)$/.exec(value ?? '');
  if (!match) throw new Error(`malformed RateLimit header: ${value}`);
  return { name: match[1]!, r: Number(match[2]), t: Number(match[3]) };
}

function expectNoRateLimitHeaders(answer: Answer): void {
  for (const name of RATE_LIMIT_HEADERS) expect(answer.headers.get(name), name).toBeNull();
}

/** Sum of the bucket counts Redis holds for a subject's window. */
describe('one short window (5 per 2 s) on Redis', () => {
  it('counts remaining down 4..0, answers the 6th 429 with every header, and admits again after Retry-After', async () => {
    const { rawKey } = await gateway.createKey({ account: 'countdown', plan: 'tiny' });
    const answers: Answer[] = [];
    for (let i = 0; i < 5; i += 1) answers.push(await send(gateway, rawKey));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
    expect(answers.map(remaining)).toEqual([4, 3, 2, 1, 0]);
    for (const answer of answers) {
      expect(answer.headers.get('x-ratelimit-limit')).toBe('5');
      expect(answer.headers.get('ratelimit-policy')).toBe('"2s";q=5;w=2');
      const rateLimit = parseRateLimit(answer.headers.get('ratelimit'));
      expect(rateLimit.name).toBe('2s');
      expect(rateLimit.r).toBe(remaining(answer));
      // t: until the oldest counted request leaves the 2 s window — never 0 once one counts.
      expect(rateLimit.t).toBeGreaterThanOrEqual(1);
      expect(rateLimit.t).toBeLessThanOrEqual(2);
    }
    // X-RateLimit-Reset: 0 while a request is left, then the wait for the next slot.
    expect(answers.slice(0, 4).map((a) => a.headers.get('x-ratelimit-reset'))).toEqual(['0', '0', '0', '0']);
    const lastReset = Number(answers[4]!.headers.get('x-ratelimit-reset'));
    expect(lastReset).toBeGreaterThanOrEqual(1);
    expect(parseRateLimit(answers[4]!.headers.get('ratelimit')).t).toBe(lastReset);
    expect(await countedInRedis(inspect, PREFIX, 'account:countdown', '2s')).toBe(5);

    const sixth = await send(gateway, rawKey);
    expect(sixth.status).toBe(429);
    expect(errorType(sixth)).toBe('rate_limit_exceeded');
    const retryAfter = Number(sixth.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(3);
    expect(sixth.headers.get('x-ratelimit-limit')).toBe('5');
    expect(sixth.headers.get('x-ratelimit-remaining')).toBe('0');
    // Reset and t are capped at the window's 2 s; Retry-After stays exact (it may read 3).
    const capped = Math.min(retryAfter, 2);
    expect(sixth.headers.get('x-ratelimit-reset')).toBe(String(capped));
    expect(sixth.headers.get('ratelimit-policy')).toBe('"2s";q=5;w=2');
    expect(sixth.headers.get('ratelimit')).toBe(`"2s";r=0;t=${capped}`);
    // A rejection is counted nowhere.
    expect(await countedInRedis(inspect, PREFIX, 'account:countdown', '2s')).toBe(5);

    await sleep(retryAfter * 1_000);
    const again = await send(gateway, rawKey);
    expect(again.status).toBe(200);
    expect(again.headers.get('x-ratelimit-limit')).toBe('5');
  });

  it('rejects a boundary burst: a full window at the end of one fixed 2 s window and more at the start of the next', async () => {
    const { rawKey } = await gateway.createKey({ account: 'boundary', plan: 'tiny' });
    // 250 ms before an epoch-aligned 2 s boundary, where a fixed-window counter would reset.
    await sleep((4_000 - (Date.now() % 2_000) - 250) % 2_000);
    // The boundary is fixed before the burst: on a loaded machine the burst may end past it,
    // and a boundary taken afterwards would then be the next one, a whole window later.
    const boundary = Math.ceil(Date.now() / 2_000) * 2_000;
    const late = await Promise.all(Array.from({ length: 5 }, () => send(gateway, rawKey)));
    expect(late.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
    await sleep(Math.max(0, boundary + 50 - Date.now()));
    const early = await Promise.all(Array.from({ length: 5 }, () => send(gateway, rawKey)));
    expect(early.map((a) => a.status)).toEqual([429, 429, 429, 429, 429]);
    for (const answer of early) expect(errorType(answer)).toBe('rate_limit_exceeded');
  });
});

describe('a tight short window and a looser long one (3 per 1 s + 5 per 10 s)', () => {
  it('the tighter window answers first, then the longer one', async () => {
    const { rawKey } = await gateway.createKey({ account: 'duo', plan: 'duo' });
    const policy = '"second";q=3;w=1, "10s";q=5;w=10';
    const first = [await send(gateway, rawKey), await send(gateway, rawKey), await send(gateway, rawKey)];
    expect(first.map((a) => a.status)).toEqual([200, 200, 200]);
    // The second window has 2, 1, 0 left; the 10 s window 4, 3, 2: the headers describe the second.
    expect(first.map((a) => a.headers.get('x-ratelimit-limit'))).toEqual(['3', '3', '3']);
    expect(first.map(remaining)).toEqual([2, 1, 0]);
    for (const answer of first) expect(answer.headers.get('ratelimit-policy')).toBe(policy);

    const bySecond = await send(gateway, rawKey);
    expect(bySecond.status).toBe(429);
    expect(bySecond.headers.get('x-ratelimit-limit')).toBe('3');
    expect(parseRateLimit(bySecond.headers.get('ratelimit'))).toMatchObject({ name: 'second', r: 0 });
    const shortWait = Number(bySecond.headers.get('retry-after'));
    expect(shortWait).toBeGreaterThanOrEqual(1);
    expect(shortWait).toBeLessThanOrEqual(2);

    // Past the second window's last bucket (≤ 1099 ms after the newest request), it is empty.
    await sleep(Math.max(shortWait * 1_000, 1_100));
    const fourth = await send(gateway, rawKey);
    const fifth = await send(gateway, rawKey);
    expect([fourth.status, fifth.status]).toEqual([200, 200]);
    // Now the 10 s window is the one running out.
    expect([fourth, fifth].map((a) => a.headers.get('x-ratelimit-limit'))).toEqual(['5', '5']);
    expect([fourth, fifth].map(remaining)).toEqual([1, 0]);
    expect(parseRateLimit(fourth.headers.get('ratelimit'))).toMatchObject({ name: '10s', r: 1 });

    const byTenSeconds = await send(gateway, rawKey);
    expect(byTenSeconds.status).toBe(429);
    expect(errorType(byTenSeconds)).toBe('rate_limit_exceeded');
    expect(byTenSeconds.headers.get('x-ratelimit-limit')).toBe('5');
    expect(byTenSeconds.headers.get('x-ratelimit-remaining')).toBe('0');
    const longWait = Number(byTenSeconds.headers.get('retry-after'));
    // Far longer than the second window could ask for: the 10 s window decides.
    expect(longWait).toBeGreaterThanOrEqual(7);
    expect(longWait).toBeLessThanOrEqual(11);
    expect(byTenSeconds.headers.get('x-ratelimit-reset')).toBe(String(longWait));
    expect(byTenSeconds.headers.get('ratelimit')).toBe(`"10s";r=0;t=${longWait}`);
    expect(byTenSeconds.headers.get('ratelimit-policy')).toBe(policy);
  });
});

describe('which answers carry the headers and which requests count', () => {
  it('sends them on 200s, on 400s and 415s after authentication (which count), on upstream errors, on SSE headers and on 429s', async () => {
    const { rawKey } = await gateway.createKey({ account: 'every-answer', plan: 'tiny' });
    const missingMessage = await send(gateway, rawKey, { context: {} });
    expect(missingMessage.status).toBe(400);
    expect(errorType(missingMessage)).toBe('invalid_request');
    const notJson = await send(gateway, rawKey, '{"message": ');
    expect(notJson.status).toBe(400);
    expect(errorType(notJson)).toBe('invalid_json');
    const wrongType = await send(gateway, rawKey, '{"message":"hi"}', CHAT, { 'content-type': 'text/plain' });
    expect(wrongType.status).toBe(415);
    const upstreamError = await send(gateway, rawKey, { message: 'hi' }, '/agents/flaky/api/v1/chat');
    expect(upstreamError.status).toBe(500);
    expect(upstreamError.body).toBe('{"error":"runner broke"}');
    expect([missingMessage, notJson, wrongType, upstreamError].map(remaining)).toEqual([4, 3, 2, 1]);
    for (const answer of [missingMessage, notJson, wrongType, upstreamError]) {
      expect(answer.headers.get('x-ratelimit-limit')).toBe('5');
      expect(answer.headers.get('ratelimit-policy')).toBe('"2s";q=5;w=2');
      expect(answer.headers.get('ratelimit')).toMatch(/^"2s";r=\d;t=[1-3]$/);
    }

    // The stream's response headers go out before its first event, with the limits in them.
    upstream.handle(async (req, res) => {
      if (!req.url?.endsWith('/chat/stream')) return;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.flushHeaders();
      await sleep(200);
      res.end('event: done\ndata: {"tokens_used":1,"latency_ms":200}\n\n');
    });
    try {
      const stream = await openSse(`${gateway.url}${STREAM}`, rawKey, { message: 'hi' });
      expect(stream.status).toBe(200);
      expect(stream.events).toEqual([]);
      expect(stream.headers['content-type']).toMatch(/^text\/event-stream/);
      expect(stream.headers['x-ratelimit-limit']).toBe('5');
      expect(stream.headers['x-ratelimit-remaining']).toBe('0');
      expect(Number(stream.headers['x-ratelimit-reset'])).toBeGreaterThanOrEqual(1);
      expect(stream.headers['ratelimit-policy']).toBe('"2s";q=5;w=2');
      expect(stream.headers['ratelimit']).toMatch(/^"2s";r=0;t=[1-3]$/);
      await stream.ended;
    } finally {
      upstream.handle(defaultHandler);
    }

    const limited = await send(gateway, rawKey);
    expect(limited.status).toBe(429);
    for (const name of RATE_LIMIT_HEADERS) expect(limited.headers.get(name), name).not.toBeNull();
    expect(await countedInRedis(inspect, PREFIX, 'account:every-answer', '2s')).toBe(5);
  });

  it('sends none of them for a plan without windows', async () => {
    const { rawKey } = await gateway.createKey({ account: 'unlimited', plan: 'scale' });
    for (let i = 0; i < 3; i += 1) {
      const answer = await send(gateway, rawKey);
      expect(answer.status).toBe(200);
      expectNoRateLimitHeaders(answer);
    }
    expect(await inspect.keys(`${PREFIX}rl:{account:unlimited}*`)).toEqual([]);
  });

  it("an upstream's own rate-limit headers give way to the gateway's (sent once), and pass through on a plan without windows", async () => {
    const upstreamLimits = { 'x-ratelimit-limit': '999', 'x-ratelimit-remaining': '998', ratelimit: '"runner";r=998;t=1', 'x-runner': 'kept' };
    upstream.handle((req, res) => {
      if (req.url?.endsWith('/chat/stream')) {
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'max-age=60', 'x-accel-buffering': 'yes', ...upstreamLimits });
        res.end('event: done\ndata: {"tokens_used":1,"latency_ms":1}\n\n');
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json', ...upstreamLimits });
      res.end(JSON.stringify({ response: 'hi', tool_calls: [], metadata: { tokens_used: 1 } }));
    });
    try {
      const { rawKey } = await gateway.createKey({ account: 'runner-limits', plan: 'tiny' });
      const answer = await send(gateway, rawKey);
      expect(answer.status).toBe(200);
      // Two copies would arrive joined ("4, 999").
      expect(answer.headers.get('x-ratelimit-limit')).toBe('5');
      expect(answer.headers.get('x-ratelimit-remaining')).toBe('4');
      expect(answer.headers.get('ratelimit')).toMatch(/^"2s";r=4;t=[1-3]$/);
      expect(answer.headers.get('x-runner')).toBe('kept');

      const stream = await openSse(`${gateway.url}${STREAM}`, rawKey, { message: 'hi' });
      await stream.ended;
      expect(stream.headers['x-ratelimit-limit']).toBe('5');
      expect(stream.headers['x-ratelimit-remaining']).toBe('3');
      expect(stream.headers['cache-control']).toBe('no-cache');
      expect(stream.headers['x-accel-buffering']).toBe('no');
      expect(stream.headers['x-runner']).toBe('kept');

      const { rawKey: unlimitedKey } = await gateway.createKey({ account: 'runner-limits-unlimited', plan: 'scale' });
      const unlimited = await send(gateway, unlimitedKey);
      expect(unlimited.headers.get('x-ratelimit-limit')).toBe('999');
      expect(unlimited.headers.get('ratelimit')).toBe('"runner";r=998;t=1');
    } finally {
      upstream.handle(defaultHandler);
    }
  });

  it('does not count 401s (nor 404s, rejected before the key), and sends no limits on them', async () => {
    const { rawKey } = await gateway.createKey({ account: 'unauthorized', plan: 'tiny', agents: ['support'] });
    const rejected: Answer[] = [];
    // The key is genuine but not allowed on this agent: 401 agent_not_allowed, before the limiter.
    for (let i = 0; i < 6; i += 1) rejected.push(await send(gateway, rawKey, { message: 'hi' }, '/agents/sales/api/v1/chat'));
    rejected.push(await send(gateway, undefined));
    rejected.push(await send(gateway, 'ha_not_a_real_key'));
    expect(rejected.map((a) => a.status)).toEqual([401, 401, 401, 401, 401, 401, 401, 401]);
    expect(rejected.slice(0, 6).map(errorType)).toEqual(Array(6).fill('agent_not_allowed'));
    for (const answer of rejected) expectNoRateLimitHeaders(answer);
    const notFound = await send(gateway, rawKey, { message: 'hi' }, '/agents/nobody/api/v1/chat');
    expect(notFound.status).toBe(404);
    expectNoRateLimitHeaders(notFound);

    const first = await send(gateway, rawKey);
    expect(first.status).toBe(200);
    expect(remaining(first)).toBe(4);
    expect(await countedInRedis(inspect, PREFIX, 'account:unauthorized', '2s')).toBe(1);
  });
});

describe('rate_limits.scope', () => {
  it('account: two keys of one account share one count', async () => {
    const one = await gateway.createKey({ account: 'shared', plan: 'tiny' });
    const two = await gateway.createKey({ account: 'shared', plan: 'tiny' });
    const answers: Answer[] = [];
    for (let i = 0; i < 5; i += 1) answers.push(await send(gateway, i % 2 === 0 ? one.rawKey : two.rawKey));
    expect(answers.map(remaining)).toEqual([4, 3, 2, 1, 0]);
    expect((await send(gateway, one.rawKey)).status).toBe(429);
    expect((await send(gateway, two.rawKey)).status).toBe(429);
    expect(await countedInRedis(inspect, PREFIX, 'account:shared', '2s')).toBe(5);
  });

  it('key: each key of the account has its own count', async () => {
    const one = await perKey.createKey({ account: 'split', plan: 'tiny' });
    const two = await perKey.createKey({ account: 'split', plan: 'tiny' });
    const byOne: Answer[] = [];
    for (let i = 0; i < 5; i += 1) byOne.push(await send(perKey, one.rawKey));
    expect(byOne.map(remaining)).toEqual([4, 3, 2, 1, 0]);
    expect((await send(perKey, one.rawKey)).status).toBe(429);
    // The other key of the same account still has its whole window.
    const byTwo = await send(perKey, two.rawKey);
    expect(byTwo.status).toBe(200);
    expect(remaining(byTwo)).toBe(4);
    expect(await countedInRedis(inspect, PREFIX, `key:${one.keyId}`, '2s')).toBe(5);
    expect(await countedInRedis(inspect, PREFIX, `key:${two.keyId}`, '2s')).toBe(1);
    expect(await inspect.keys(`${PREFIX}rl:{account:split}*`)).toEqual([]);
  });
});

describe('embedded mode (no Redis: the memory limiter)', () => {
  it('counts down 4..0 and answers the 6th 429 with the same headers', async () => {
    const { rawKey } = await embedded.createKey({ account: 'embedded', plan: 'tiny' });
    const answers: Answer[] = [];
    for (let i = 0; i < 5; i += 1) answers.push(await send(embedded, rawKey));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
    expect(answers.map(remaining)).toEqual([4, 3, 2, 1, 0]);
    expect(answers.slice(0, 4).map((a) => a.headers.get('x-ratelimit-reset'))).toEqual(['0', '0', '0', '0']);
    for (const answer of answers) expect(parseRateLimit(answer.headers.get('ratelimit')).t).toBeGreaterThanOrEqual(1);

    const sixth = await send(embedded, rawKey);
    expect(sixth.status).toBe(429);
    expect(errorType(sixth)).toBe('rate_limit_exceeded');
    const retryAfter = Number(sixth.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(sixth.headers.get('x-ratelimit-remaining')).toBe('0');
    // Reset and t are capped at the window's 2 s; Retry-After stays exact (it may read 3).
    const capped = Math.min(retryAfter, 2);
    expect(sixth.headers.get('x-ratelimit-reset')).toBe(String(capped));
    expect(sixth.headers.get('ratelimit-policy')).toBe('"2s";q=5;w=2');
    expect(sixth.headers.get('ratelimit')).toBe(`"2s";r=0;t=${capped}`);
    // Nothing of it reaches the Redis the other gateways use.
    expect(await inspect.keys(`${PREFIX}rl:{account:embedded}*`)).toEqual([]);
  });
});
