// End-user limits through HTTP (docs/design.md, "Agent-aware policy"; docs/policy.md): on a real Redis and in
// embedded mode. Each end user of a key gets its own allowance, requests without
// `context.user_id` share the anonymous one, `require` refuses them, and a refusal by an end
// user's window names `context.user_id` in its error, its headers, its metric and its audit record.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readAuditFile } from '../helpers/audit-records.js';
import { chatResponse, startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { postChat, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { metricsText, parseMetrics, sumSamples } from '../helpers/metrics-text.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { waitFor } from '../helpers/wait.js';

const PREFIX = 'gweu:';
const CHAT = '/agents/support/api/v1/chat';
const PLANS = {
  widget: { windows: [{ requests: 100, per: '1m' }], end_user: { windows: [{ requests: 3, per: '1m' }] } },
  strict: { windows: [{ requests: 100, per: '1m' }], end_user: { windows: [{ requests: 3, per: '1m' }], require: true } },
  // Every answer uses 5 tokens: an end user's 10 an hour last two answers.
  budget: { windows: [{ requests: 100, per: '1m' }], end_user: { tokens: [{ tokens: 10, per: '1h' }] } },
  streams: { windows: [{ requests: 100, per: '1m' }], concurrency: { streams: 50 }, end_user: { windows: [{ requests: 2, per: '1m' }] } },
};

let redis: TestRedis;
let upstream: FakeUpstream;
let onRedis: TestGateway;
let embedded: TestGateway;
let runnerCalls = 0;

beforeAll(async () => {
  [redis, upstream] = await Promise.all([
    startRedis(),
    startFakeUpstream((req, res) => {
      runnerCalls += 1;
      if (req.url?.endsWith('/chat/stream')) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end('event: token\ndata: {"content":"Hi"}\n\nevent: done\ndata: {"tokens_used":5,"latency_ms":1}\n\n');
        return;
      }
      const body = JSON.stringify(chatResponse('hi', 5));
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    }),
  ]);
  const agents = { support: upstream.baseUrl };
  [onRedis, embedded] = await Promise.all([
    startTestGateway({ agents, config: { plans: PLANS, redis: { prefix: PREFIX, command_timeout: '5s' }, keys: { store: 'redis' } }, redisUrl: redis.url }),
    startTestGateway({ agents, config: { plans: PLANS } }),
  ]);
});

afterAll(async () => {
  await Promise.all([onRedis?.close(), embedded?.close()]);
  await upstream?.close();
  await redis?.close();
});

interface Answer {
  status: number;
  headers: Headers;
  error: { type: string; param?: string } | undefined;
}

async function send(gateway: TestGateway, key: string, userId?: string, path = CHAT): Promise<Answer> {
  const body = userId === undefined ? { message: 'hi' } : { message: 'hi', context: { user_id: userId } };
  const response = await postChat(gateway.url, path, key, body);
  const text = await response.text();
  return { status: response.status, headers: response.headers, error: response.status === 200 ? undefined : (JSON.parse(text) as { error: Answer['error'] }).error };
}

async function endUserLimited(gateway: TestGateway, plan: string): Promise<number> {
  return sumSamples(parseMetrics(await metricsText(gateway.adminUrl)), 'agentgw_end_user_limited_total', { plan });
}

describe.each([
  ['on Redis', () => onRedis],
  ['embedded (memory)', () => embedded],
])('a key limited to 3 requests a minute per end user, %s', (mode, gatewayOf) => {
  it('gives two end users their own allowance, and the requests without a user_id one more', async () => {
    const gateway = gatewayOf();
    const account = `widget-${mode.length}`;
    const { rawKey } = await gateway.createKey({ account, plan: 'widget', agents: ['support'] });
    const limitedBefore = await endUserLimited(gateway, 'widget');

    const alice = [];
    for (let i = 0; i < 4; i += 1) alice.push(await send(gateway, rawKey, 'alice@example.com'));
    expect(alice.map((a) => a.status)).toEqual([200, 200, 200, 429]);
    expect(alice[3]!.error).toMatchObject({ type: 'rate_limit_exceeded', param: 'context.user_id' });
    expect(alice[0]!.headers.get('ratelimit-policy')).toBe('"minute";q=100;w=60, "user-minute";q=3;w=60');
    // The trio follows the window closest to exhaustion: the end user's.
    expect(alice[2]!.headers.get('x-ratelimit-limit')).toBe('3');
    expect(alice[2]!.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(alice[3]!.headers.get('ratelimit')).toMatch(/^"user-minute";r=0;t=\d+$/);
    expect(Number(alice[3]!.headers.get('retry-after'))).toBeGreaterThan(0);

    const bob = [];
    for (let i = 0; i < 4; i += 1) bob.push(await send(gateway, rawKey, 'bob'));
    expect(bob.map((a) => a.status)).toEqual([200, 200, 200, 429]);
    const anonymous = [];
    for (let i = 0; i < 4; i += 1) anonymous.push(await send(gateway, rawKey));
    expect(anonymous.map((a) => a.status)).toEqual([200, 200, 200, 429]);
    expect(anonymous[3]!.error).toMatchObject({ type: 'rate_limit_exceeded', param: 'context.user_id' });
    expect(await endUserLimited(gateway, 'widget')).toBe(limitedBefore + 3);

    // The refused requests' audit records: outcome rate_limited, the end user named as sent.
    let refused: Array<{ outcome: string; user_id: string | null }> = [];
    await waitFor('the audit records', async () => {
      refused = (await readAuditFile(join(gateway.dir, 'audit.jsonl'))).filter((r) => r.account === account && r.status === 429);
      return refused.length === 3;
    }, 10_000);
    expect(refused.map((r) => [r.outcome, r.user_id])).toEqual([
      ['rate_limited', 'alice@example.com'],
      ['rate_limited', 'bob'],
      ['rate_limited', null],
    ]);
  });

  it('require: a request without context.user_id is 400 and never reaches the runner', async () => {
    const gateway = gatewayOf();
    const { rawKey } = await gateway.createKey({ account: `strict-${mode.length}`, plan: 'strict', agents: ['support'] });
    const calls = runnerCalls;
    const refused = await send(gateway, rawKey);
    expect(refused.status).toBe(400);
    expect(refused.error).toMatchObject({ type: 'invalid_request', param: 'context.user_id' });
    expect(runnerCalls).toBe(calls);
    expect((await send(gateway, rawKey, 'carol')).status).toBe(200);
  });

  it('with require, a blank user_id ("", whitespace only) is refused like a missing one, and counts nothing', async () => {
    const gateway = gatewayOf();
    const { rawKey } = await gateway.createKey({ account: `blank-${mode.length}`, plan: 'strict', agents: ['support'] });
    const calls = runnerCalls;
    for (const blank of ['', '   ', '\t\n ']) {
      const refused = await send(gateway, rawKey, blank);
      expect(refused.status).toBe(400);
      expect(refused.error).toMatchObject({ type: 'invalid_request', param: 'context.user_id' });
    }
    expect(runnerCalls).toBe(calls);
    // A real id still has its whole allowance: the refused requests counted nothing.
    const answers = [];
    for (let i = 0; i < 3; i += 1) answers.push((await send(gateway, rawKey, ' dave ')).status);
    expect(answers).toEqual([200, 200, 200]);
  });

  it('a user_id over 256 characters is 400 on any plan, and counts nothing', async () => {
    const gateway = gatewayOf();
    const { rawKey } = await gateway.createKey({ account: `long-${mode.length}`, plan: 'widget', agents: ['support'] });
    const calls = runnerCalls;
    for (let i = 0; i < 4; i += 1) {
      const refused = await send(gateway, rawKey, 'x'.repeat(257));
      expect(refused.status).toBe(400);
      expect(refused.error).toMatchObject({ type: 'invalid_request', param: 'context.user_id' });
    }
    expect(runnerCalls).toBe(calls);
    // 256 is accepted, and its allowance is whole: the refused requests were not counted.
    const answers = [];
    for (let i = 0; i < 3; i += 1) answers.push((await send(gateway, rawKey, 'x'.repeat(256))).status);
    expect(answers).toEqual([200, 200, 200]);
  });

  it("an end user's token budget: charged after each answer, refused with token_budget_exceeded naming the field", async () => {
    const gateway = gatewayOf();
    const { rawKey } = await gateway.createKey({ account: `budget-${mode.length}`, plan: 'budget', agents: ['support'] });
    const alice = [];
    // Each answer is charged when its response closes, before the next request is decided
    // (on Redis the charge goes out on the same connection ahead of the next admit).
    for (let i = 0; i < 3; i += 1) alice.push(await send(gateway, rawKey, 'alice'));
    expect(alice.map((a) => a.status)).toEqual([200, 200, 429]);
    expect(alice[2]!.error).toMatchObject({ type: 'token_budget_exceeded', param: 'context.user_id' });
    expect(alice[0]!.headers.get('ratelimit-policy')).toBe('"minute";q=100;w=60, "user-tokens-hour";q=10;w=3600');
    expect((await send(gateway, rawKey, 'bob')).status).toBe(200);
  });

  it('streams on a capped plan: the end user window and the slot decided together', async () => {
    const gateway = gatewayOf();
    const { rawKey } = await gateway.createKey({ account: `streams-${mode.length}`, plan: 'streams', agents: ['support'] });
    const statuses = [];
    for (let i = 0; i < 3; i += 1) statuses.push((await send(gateway, rawKey, 'alice', `${CHAT}/stream`)).status);
    expect(statuses).toEqual([200, 200, 429]);
    expect((await send(gateway, rawKey, 'bob', `${CHAT}/stream`)).status).toBe(200);
  });

  it("a key's own limits.end_user replaces the plan's", async () => {
    const gateway = gatewayOf();
    const { rawKey } = await gateway.createKey({ account: `own-${mode.length}`, plan: 'widget', agents: ['support'], limits: { end_user: { windows: [{ requests: 1, per: '1m' }] } } });
    expect((await send(gateway, rawKey, 'dave')).status).toBe(200);
    expect((await send(gateway, rawKey, 'dave')).status).toBe(429);
    expect((await send(gateway, rawKey, 'erin')).status).toBe(200);
  });
});
