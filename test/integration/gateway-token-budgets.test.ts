// Token budgets through HTTP (docs/rate-limits.md "Token budgets"): on a real Redis and in
// embedded mode, for JSON answers and streams; two gateways on one Redis share one budget.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisClient, type RedisClient } from '../../src/redis/redis-client.js';
import { silentLogger } from '../../src/logger.js';
import { chatResponse, startFakeUpstream, type FakeUpstream, type UpstreamHandler } from '../helpers/fake-upstream.js';
import { postChat, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { countedInRedis } from '../helpers/rate-limit-counts.js';
import { readAuditFile } from '../helpers/audit-records.js';
import { join } from 'node:path';

const PREFIX = 'gwtb:';
const CHAT = '/agents/support/api/v1/chat';
const STREAM = '/agents/support/api/v1/chat/stream';
/** Every answer of the runner below uses this many tokens. */
const TOKENS_PER_ANSWER = 40;

const PLANS = {
  // A request window beside the budget: the X-RateLimit-* trio describes it, the budget rides RateLimit.
  budget: { windows: [{ requests: 1000, per: '1m' }], tokens: [{ tokens: 100, per: '1h' }] },
  tokensonly: { tokens: [{ tokens: 100, per: '1h' }] },
  shared: { tokens: [{ tokens: 100, per: '1h' }] },
};

/** Runner: JSON answers and streams that report TOKENS_PER_ANSWER; `hold` keeps answers in flight until released. */
let held: Array<() => void> = [];
let hold = false;
const runner: UpstreamHandler = (req, res) => {
  const answer = (): void => {
    if (req.url?.endsWith('/chat/stream')) {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('event: token\ndata: {"content":"Hi"}\n\n');
      res.end(`event: done\ndata: {"tokens_used":${TOKENS_PER_ANSWER},"latency_ms":1}\n\n`);
      return;
    }
    const body = JSON.stringify(chatResponse('hi', TOKENS_PER_ANSWER));
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  };
  if (hold) held.push(answer);
  else answer();
};

let redis: TestRedis;
let inspect: RedisClient;
let upstream: FakeUpstream;
let onRedis: TestGateway;
let secondOnRedis: TestGateway;
let embedded: TestGateway;

beforeAll(async () => {
  [redis, upstream] = await Promise.all([startRedis(), startFakeUpstream(runner)]);
  inspect = createRedisClient({ url: redis.url, prefix: PREFIX, commandTimeoutMs: 2_000 }, silentLogger, 'test-inspect');
  const agents = { support: upstream.baseUrl };
  // Keys in Redis: a key created through one gateway is known to the other. A generous
  // command timeout: on a loaded machine a 100 ms one fails the limiter over to per-instance
  // counts (on_store_error: allow), which admit what the shared budget would refuse.
  const config = { plans: PLANS, redis: { prefix: PREFIX, command_timeout: '5s' }, keys: { store: 'redis' } };
  [onRedis, secondOnRedis, embedded] = await Promise.all([
    startTestGateway({ agents, config, redisUrl: redis.url }),
    startTestGateway({ agents, config, redisUrl: redis.url }),
    startTestGateway({ agents, config: { plans: PLANS } }),
  ]);
});

afterAll(async () => {
  await Promise.all([onRedis?.close(), secondOnRedis?.close(), embedded?.close()]);
  inspect?.disconnect();
  await upstream?.close();
  await redis?.close();
});

interface Answer {
  status: number;
  headers: Headers;
  body: string;
}

async function send(target: TestGateway, key: string, path = CHAT): Promise<Answer> {
  const response = await postChat(target.url, path, key, { message: 'hi' });
  return { status: response.status, headers: response.headers, body: await response.text() };
}

function errorType(answer: Answer): string {
  return (JSON.parse(answer.body) as { error: { type: string } }).error.type;
}

describe.each([
  ['on Redis', () => onRedis],
  ['embedded (memory)', () => embedded],
])('a budget of 100 tokens per hour, %s', (_mode, gatewayOf) => {
  it.each([
    ['JSON answers', CHAT],
    ['streams (tokens from the done event)', STREAM],
  ])('%s: admits while tokens are left (0, 40, 80 used), refuses at 120 with token_budget_exceeded', async (_kind, path) => {
    const gateway = gatewayOf();
    const account = `acct-${path === CHAT ? 'json' : 'sse'}-${gateway === embedded ? 'mem' : 'redis'}`;
    const { rawKey } = await gateway.createKey({ account, plan: 'budget' });
    const answers: Answer[] = [];
    for (let i = 0; i < 3; i += 1) answers.push(await send(gateway, rawKey, path));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
    // Tokens left as each request was admitted: 100, 60, 20 (charged after each answer).
    expect(answers.map((a) => a.headers.get('ratelimit'))).toEqual([
      '"minute";r=999;t=60, "tokens-hour";r=100;t=0',
      expect.stringMatching(/^"minute";r=998;t=\d+, "tokens-hour";r=60;t=3600$/),
      expect.stringMatching(/^"minute";r=997;t=\d+, "tokens-hour";r=20;t=3600$/),
    ]);
    for (const answer of answers) {
      expect(answer.headers.get('ratelimit-policy')).toBe('"minute";q=1000;w=60, "tokens-hour";q=100;w=3600');
      // The trio stays on the request window.
      expect(answer.headers.get('x-ratelimit-limit')).toBe('1000');
    }

    const refused = await send(gateway, rawKey, path);
    expect(refused.status).toBe(429);
    expect(errorType(refused)).toBe('token_budget_exceeded');
    // 120 used of 100: the first answer's 40 must leave the hour before one token is free.
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(3_500);
    expect(retryAfter).toBeLessThanOrEqual(3_600 + 60);
    expect(refused.headers.get('ratelimit')).toMatch(/^"minute";r=997;t=\d+, "tokens-hour";r=0;t=3600$/);
    expect(refused.headers.get('x-ratelimit-remaining')).toBe('997');
    if (gateway !== embedded) expect(await countedInRedis(inspect, PREFIX, `account:${account}`, 'tokens-hour')).toBe(120);

    // The audit batch is written off the request path: wait for all four records.
    let outcomes: string[] = [];
    for (let i = 0; i < 100 && outcomes.length < 4; i += 1) {
      outcomes = (await readAuditFile(join(gateway.dir, 'audit.jsonl'))).filter((r) => r.account === account).map((r) => r.outcome);
      if (outcomes.length < 4) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(outcomes).toEqual(['ok', 'ok', 'ok', 'token_budget_exceeded']);
  });

  it('a plan with token budgets only: RateLimit-Policy and RateLimit, no X-RateLimit-* trio', async () => {
    const gateway = gatewayOf();
    const { rawKey } = await gateway.createKey({ account: `only-${gateway === embedded ? 'mem' : 'redis'}`, plan: 'tokensonly' });
    const first = await send(gateway, rawKey);
    expect(first.status).toBe(200);
    expect(first.headers.get('ratelimit-policy')).toBe('"tokens-hour";q=100;w=3600');
    expect(first.headers.get('ratelimit')).toBe('"tokens-hour";r=100;t=0');
    expect(first.headers.get('x-ratelimit-limit')).toBeNull();
    const second = await send(gateway, rawKey);
    expect(second.headers.get('ratelimit')).toBe('"tokens-hour";r=60;t=3600');
  });
});

describe('per-key limits', () => {
  it.each([
    ['on Redis', () => onRedis],
    ['embedded (memory)', () => embedded],
  ])('%s: a key with its own budget (50 tokens) is refused after 2 answers; a key of the same plan without one keeps the plan (100)', async (_mode, gatewayOf) => {
    const gateway = gatewayOf();
    const tag = gateway === embedded ? 'mem' : 'redis';
    const own = await gateway.createKey({ account: `override-own-${tag}`, plan: 'budget', limits: { tokens: [{ tokens: 50, per: '1h' }] } });
    const plain = await gateway.createKey({ account: `override-plain-${tag}`, plan: 'budget' });
    const ownAnswers: Answer[] = [];
    for (let i = 0; i < 3; i += 1) ownAnswers.push(await send(gateway, own.rawKey));
    expect(ownAnswers.map((a) => a.status)).toEqual([200, 200, 429]);
    expect(errorType(ownAnswers[2]!)).toBe('token_budget_exceeded');
    // Its request window is still the plan's (limits.windows not given).
    expect(ownAnswers[0]!.headers.get('ratelimit-policy')).toBe('"minute";q=1000;w=60, "tokens-hour";q=50;w=3600');
    const plainAnswers: Answer[] = [];
    for (let i = 0; i < 3; i += 1) plainAnswers.push(await send(gateway, plain.rawKey));
    expect(plainAnswers.map((a) => a.status)).toEqual([200, 200, 200]);
    expect(plainAnswers[0]!.headers.get('ratelimit-policy')).toBe('"minute";q=1000;w=60, "tokens-hour";q=100;w=3600');
  });

  it('a key whose limits replace the request windows and drop the budget (tokens: [])', async () => {
    const { rawKey } = await embedded.createKey({ account: 'override-windows', plan: 'budget', limits: { windows: [{ requests: 2, per: '1m' }], tokens: [] } });
    const answers: Answer[] = [];
    for (let i = 0; i < 4; i += 1) answers.push(await send(embedded, rawKey));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 429, 429]);
    expect(errorType(answers[2]!)).toBe('rate_limit_exceeded');
    expect(answers[0]!.headers.get('ratelimit-policy')).toBe('"minute";q=2;w=60');
  });
});

describe('two gateways on one Redis share one budget', () => {
  it('admit every request while the budget had tokens at admission (bounded overshoot), charge exactly, then both refuse', async () => {
    const { rawKey } = await onRedis.createKey({ account: 'shared', plan: 'shared' });
    // 10 answers in flight at once across both instances: each was admitted with 100 tokens left.
    hold = true;
    const inFlight: Array<Promise<Answer>> = [];
    for (let i = 0; i < 10; i += 1) inFlight.push(send(i % 2 === 0 ? onRedis : secondOnRedis, rawKey));
    for (let i = 0; i < 500 && held.length < 10; i += 1) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(held.length).toBe(10);
    hold = false;
    for (const answer of held) answer();
    held = [];
    const answers = await Promise.all(inFlight);
    expect(answers.map((a) => a.status)).toEqual(new Array(10).fill(200));
    // Charged exactly: 10 × 40 = 400 against 100. The overshoot (300) is below what the
    // answers in flight when the budget ran out used (10 × 40): the stated bound.
    let charged = 0;
    for (let i = 0; i < 50 && charged !== 400; i += 1) {
      charged = await countedInRedis(inspect, PREFIX, 'account:shared', 'tokens-hour');
      if (charged !== 400) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(charged).toBe(400);
    const [a, b] = await Promise.all([send(onRedis, rawKey), send(secondOnRedis, rawKey)]);
    expect([a.status, b.status]).toEqual([429, 429]);
    expect([errorType(a), errorType(b)]).toEqual(['token_budget_exceeded', 'token_budget_exceeded']);
  });
});
