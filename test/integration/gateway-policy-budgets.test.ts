// Tool-call quotas and cost budgets through HTTP (docs/policy.md "Tool-call quotas", "Cost
// budgets"; docs/rate-limits.md), on a real Redis (single and a 3-master Cluster) and in embedded
// mode. A spent tool named by the request is 429 tool_budget_exceeded and never reaches the
// runner; not named, it is withheld from the list the runner receives (Tools-Withheld, audit
// tools_withheld); a spent cost budget is 429 cost_budget_exceeded; neither is in the RateLimit headers.
import { join } from 'node:path';
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readAuditFile } from '../helpers/audit-records.js';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { postChat, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { metricsText, parseMetrics, sumSamples } from '../helpers/metrics-text.js';
import { startRedisCluster, type TestRedisCluster } from '../helpers/redis-cluster.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { waitFor } from '../helpers/wait.js';

const PREFIX = 'gwpb:';
const CHAT = '/agents/support/api/v1/chat';
// 5 tokens an answer at 0.002 USD per 1,000: 10 micro-dollars each.
const PRICING = { default: 0.002 };
const PLANS = {
  quota: { windows: [{ requests: 100, per: '1m' }], tool_calls: { calculator: [{ calls: 2, per: '1h' }] } },
  cost: { windows: [{ requests: 100, per: '1m' }], cost: [{ usd: 0.00003, per: '1d' }] },
  // Policies without any window of the subject's own: still limited (after the body).
  users: { end_user: { windows: [{ requests: 1, per: '1m' }] } },
  tools: { tool_calls: { calculator: [{ calls: 1, per: '1h' }] } },
};

let redis: TestRedis;
let redisCluster: TestRedisCluster;
let single: Redis;
let cluster: Cluster;
let upstream: FakeUpstream;
const gateways: Record<string, TestGateway> = {};
/** The `tools` each runner call received, by the message sent (undefined: the body had none). */
const received: Array<{ message: string; tools: string[] | undefined }> = [];

beforeAll(async () => {
  [redis, redisCluster, upstream] = await Promise.all([
    startRedis(),
    startRedisCluster({ masters: 3 }),
    startFakeUpstream((_req, res, seen) => {
      const body = JSON.parse(seen.body.toString('utf8')) as { message: string; tools?: string[] };
      received.push({ message: body.message, tools: body.tools });
      // A sum is worked out with the calculator, when the runner may use it (as the demo agent does).
      const calls = body.message.includes('+') && (body.tools === undefined || body.tools.includes('calculator')) ? [{ tool: 'calculator', input: {}, output: {} }] : [];
      if (seen.path.endsWith('/chat/stream')) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        for (const call of calls) res.write(`event: tool_call\ndata: ${JSON.stringify(call)}\n\n`);
        res.end('event: token\ndata: {"content":"ok"}\n\nevent: done\ndata: {"tokens_used":5,"latency_ms":1}\n\n');
        return;
      }
      const answer = JSON.stringify({ response: 'ok', tool_calls: calls, metadata: { tokens_used: 5, latency_ms: 1, model: 'm' } });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(answer) });
      res.end(answer);
    }),
  ]);
  single = new Redis(redis.url, { maxRetriesPerRequest: 1 });
  cluster = new Cluster([redisCluster.seeds[0]!], { redisOptions: { maxRetriesPerRequest: 1 } });
  const agents = { support: { upstream: upstream.baseUrl, tools: ['search', 'calculator'] } };
  const config = { plans: PLANS, pricing: PRICING };
  [gateways.redis, gateways.cluster, gateways.embedded] = await Promise.all([
    startTestGateway({ agents, config: { ...config, redis: { prefix: PREFIX, command_timeout: '5s' } }, redisUrl: redis.url }),
    startTestGateway({ agents, config: { ...config, redis: { mode: 'cluster', nodes: redisCluster.seeds, prefix: PREFIX, command_timeout: '5s' } } }),
    startTestGateway({ agents, config }),
  ]);
}, 60_000);

afterAll(async () => {
  await Promise.all(Object.values(gateways).map((gateway) => gateway.close()));
  single?.disconnect();
  cluster?.disconnect();
  await Promise.all([upstream?.close(), redis?.close(), redisCluster?.close()]);
});

interface Answer {
  status: number;
  headers: Headers;
  error: { type: string; param?: string; message: string } | undefined;
}

async function send(gateway: TestGateway, key: string, message: string, tools?: string[]): Promise<Answer> {
  const response = await postChat(gateway.url, CHAT, key, tools === undefined ? { message } : { message, tools });
  const text = await response.text();
  return { status: response.status, headers: response.headers, error: response.status === 200 ? undefined : (JSON.parse(text) as { error: Answer['error'] }).error };
}

/** What a budget window holds for a subject: Redis's hash (either topology), or the embedded gateway's metrics. */
async function charged(mode: string, gateway: TestGateway, account: string, window: string, metric: () => Promise<number>): Promise<number> {
  if (mode === 'embedded') return metric();
  const fields = await (mode === 'redis' ? single : cluster).hgetall(`${PREFIX}rl:{account:${account}}:${window}`);
  return Object.entries(fields).reduce((sum, [field, value]) => (field === 'bw' ? sum : sum + Number(value)), 0);
}

async function metricSum(gateway: TestGateway, name: string, labels: Record<string, string>): Promise<number> {
  return sumSamples(parseMetrics(await metricsText(gateway.adminUrl)), name, labels);
}

describe.each(['redis', 'cluster', 'embedded'])('tool-call quotas and cost budgets (%s)', (mode) => {
  it('a spent tool: named → 429 tool_budget_exceeded, never forwarded; not named → withheld from the list the runner gets, with Tools-Withheld', async () => {
    const gateway = gateways[mode]!;
    const account = `quota-${mode}`;
    const { rawKey } = await gateway.createKey({ account, plan: 'quota', agents: ['support'] });
    const callsBefore = await metricSum(gateway, 'agentgw_tool_calls_total', { agent: 'support', tool: 'calculator' });
    const calculatorCalls = async (): Promise<number> =>
      charged(mode, gateway, account, 'tool-calculator-hour', async () => (await metricSum(gateway, 'agentgw_tool_calls_total', { agent: 'support', tool: 'calculator' })) - callsBefore);
    for (let i = 1; i <= 2; i += 1) {
      const answer = await send(gateway, rawKey, `What is ${i} + 1?`);
      expect(answer.status).toBe(200);
      expect(answer.headers.get('tools-withheld')).toBeNull();
      await waitFor('the tool call charged', async () => (await calculatorCalls()) === i, 10_000);
    }
    // Neither quota window is in the IETF headers.
    const runnerCallsBefore = received.length;
    const named = await send(gateway, rawKey, 'What is 3 + 1?', ['calculator']);
    expect(named.status).toBe(429);
    expect(named.error).toMatchObject({ type: 'tool_budget_exceeded', param: 'tools' });
    expect(named.error!.message).toContain('"calculator"');
    expect(Number(named.headers.get('retry-after'))).toBeGreaterThan(3_000);
    expect(named.headers.get('ratelimit-policy')).toBe('"minute";q=100;w=60');
    expect(received.length).toBe(runnerCallsBefore);

    const unnamed = await send(gateway, rawKey, 'What is 4 + 1?');
    expect(unnamed.status).toBe(200);
    expect(unnamed.headers.get('tools-withheld')).toBe('calculator');
    expect(unnamed.headers.get('ratelimit-policy')).toBe('"minute";q=100;w=60');
    expect(received.at(-1)).toEqual({ message: 'What is 4 + 1?', tools: ['search'] });
    // Naming only tools with room: forwarded as named, nothing withheld.
    const other = await send(gateway, rawKey, 'What is 5 + 1?', ['search']);
    expect(other.status).toBe(200);
    expect(other.headers.get('tools-withheld')).toBeNull();
    expect(received.at(-1)).toEqual({ message: 'What is 5 + 1?', tools: ['search'] });
    expect(await calculatorCalls()).toBe(2);

    let records: Awaited<ReturnType<typeof readAuditFile>> = [];
    await waitFor('the audit records', async () => {
      records = (await readAuditFile(join(gateway.dir, 'audit.jsonl'))).filter((r) => r.account === account);
      return records.length === 5;
    }, 10_000);
    expect(records.map((r) => [r.status, r.outcome, r.tools_withheld])).toEqual([
      [200, 'ok', null],
      [200, 'ok', null],
      [429, 'tool_budget_exceeded', null],
      [200, 'ok', ['calculator']],
      [200, 'ok', null],
    ]);
  });

  it('a spent cost budget: 429 cost_budget_exceeded, not in the headers', async () => {
    const gateway = gateways[mode]!;
    const account = `cost-${mode}`;
    const { rawKey } = await gateway.createKey({ account, plan: 'cost', agents: ['support'] });
    const costBefore = await metricSum(gateway, 'agentgw_cost_usd_total', { agent: 'support' });
    const spentMicro = async (): Promise<number> =>
      charged(mode, gateway, account, 'cost-day', async () => Math.round(((await metricSum(gateway, 'agentgw_cost_usd_total', { agent: 'support' })) - costBefore) * 1e6));
    // 30 micro-dollars, 10 an answer: three answers, each admitted while something was left.
    for (let i = 1; i <= 3; i += 1) {
      const answer = await send(gateway, rawKey, 'hello');
      expect(answer.status).toBe(200);
      expect(answer.headers.get('ratelimit-policy')).toBe('"minute";q=100;w=60');
      await waitFor('the cost charged', async () => (await spentMicro()) === 10 * i, 10_000);
    }
    const runnerCallsBefore = received.length;
    const refused = await send(gateway, rawKey, 'hello');
    expect(refused.status).toBe(429);
    expect(refused.error).toMatchObject({ type: 'cost_budget_exceeded' });
    expect(refused.error!.param).toBeUndefined();
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(60);
    expect(received.length).toBe(runnerCallsBefore);
    await waitFor(
      'the refusal audited',
      async () => (await readAuditFile(join(gateway.dir, 'audit.jsonl'))).some((r) => r.account === account && r.outcome === 'cost_budget_exceeded'),
      10_000,
    );
  });

  it('a plan with only an end-user policy or only tool quotas is limited all the same', async () => {
    const gateway = gateways[mode]!;
    const users = await gateway.createKey({ account: `users-${mode}`, plan: 'users', agents: ['support'] });
    const first = await send(gateway, users.rawKey, 'hello');
    expect(first.status).toBe(200);
    expect((await send(gateway, users.rawKey, 'hello')).error).toMatchObject({ type: 'rate_limit_exceeded', param: 'context.user_id' });
    const tools = await gateway.createKey({ account: `tools-${mode}`, plan: 'tools', agents: ['support'] });
    expect((await send(gateway, tools.rawKey, 'What is 1 + 1?', ['calculator'])).status).toBe(200);
    await waitFor(
      'the tool call charged',
      async () => (await send(gateway, tools.rawKey, 'hello')).headers.get('tools-withheld') === 'calculator',
      10_000,
    );
    expect((await send(gateway, tools.rawKey, 'What is 1 + 1?', ['calculator'])).error).toMatchObject({ type: 'tool_budget_exceeded', param: 'tools' });
  });

  it("a stream's tool_call events are charged to the tool's quota", async () => {
    const gateway = gateways[mode]!;
    const { rawKey } = await gateway.createKey({ account: `stream-${mode}`, plan: 'tools', agents: ['support'] });
    const streamed = await postChat(gateway.url, '/agents/support/api/v1/chat/stream', rawKey, { message: 'What is 1 + 1?' });
    expect(streamed.status).toBe(200);
    expect(await streamed.text()).toContain('event: tool_call');
    await waitFor(
      'the streamed tool call charged',
      async () => (await send(gateway, rawKey, 'hello')).headers.get('tools-withheld') === 'calculator',
      10_000,
    );
    const refused = await postChat(gateway.url, '/agents/support/api/v1/chat/stream', rawKey, { message: 'What is 1 + 1?', tools: ['calculator'] });
    expect(refused.status).toBe(429);
    expect(((await refused.json()) as { error: { type: string } }).error.type).toBe('tool_budget_exceeded');
  });
});
