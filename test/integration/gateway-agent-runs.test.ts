// Agent runs and the account scope through HTTP (docs/policy.md "Agent runs", "The account
// scope"; docs/design.md "Agent runs and nested scopes"), on a real Redis (single and a 3-master
// Cluster) and embedded: a session's turns counted per `context.session_id`, refusals naming
// `context.session_id` or `account`, the `session-`/`account-` policies in the IETF headers, a
// session's `"*"` tool quota, and the hostile ids: oversized, blank, whitespace-only, missing
// where required — each a documented 400 or not counted, never a crash or a shared count.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { postChat, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startRedisCluster, type TestRedisCluster } from '../helpers/redis-cluster.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';

const PREFIX = 'gwruns:';
const CHAT = '/agents/support/api/v1/chat';
const PLANS = {
  runs: { windows: [{ requests: 1000, per: '1m' }], session: { windows: [{ requests: 3, per: '1h' }] } },
  required: { windows: [{ requests: 1000, per: '1m' }], session: { windows: [{ requests: 100, per: '1h' }], require: true } },
  acct: { windows: [{ requests: 1000, per: '1m' }], account: { windows: [{ requests: 4, per: '1h' }] } },
  tools: { windows: [{ requests: 1000, per: '1m' }], session: { tool_calls: { '*': [{ calls: 2, per: '1h' }] } } },
};

let redis: TestRedis;
let redisCluster: TestRedisCluster;
let upstream: FakeUpstream;
const gateways: Record<string, TestGateway> = {};
/** The `tools` each runner call received, by message. */
const received: Array<{ message: string; tools: string[] | undefined }> = [];

beforeAll(async () => {
  [redis, redisCluster, upstream] = await Promise.all([
    startRedis(),
    startRedisCluster({ masters: 3 }),
    startFakeUpstream((_req, res, seen) => {
      const body = JSON.parse(seen.body.toString('utf8')) as { message: string; tools?: string[] };
      received.push({ message: body.message, tools: body.tools });
      // Every answer calls the first tool it was given, or "search" when given no list.
      const tool = body.tools === undefined ? 'search' : body.tools[0];
      const answer = JSON.stringify({ response: 'ok', tool_calls: tool === undefined ? [] : [{ tool, input: {}, output: {} }], metadata: { tokens_used: 5, latency_ms: 1 } });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(answer) });
      res.end(answer);
    }),
  ]);
  const agents = { support: { upstream: upstream.baseUrl, tools: ['search', 'calculator'] } };
  const config = { plans: PLANS, rate_limits: { scope: 'key' } };
  [gateways.redis, gateways.cluster, gateways.embedded] = await Promise.all([
    startTestGateway({ agents, config: { ...config, redis: { prefix: PREFIX, command_timeout: '5s' } }, redisUrl: redis.url }),
    startTestGateway({ agents, config: { ...config, redis: { mode: 'cluster', nodes: redisCluster.seeds, prefix: PREFIX, command_timeout: '5s' } } }),
    startTestGateway({ agents, config }),
  ]);
}, 60_000);

afterAll(async () => {
  await Promise.all(Object.values(gateways).map((gateway) => gateway.close()));
  await Promise.all([upstream?.close(), redis?.close(), redisCluster?.close()]);
});

interface Answer {
  status: number;
  headers: Headers;
  error: { type: string; param?: string; message: string } | undefined;
}

async function send(gateway: TestGateway, key: string, body: Record<string, unknown>): Promise<Answer> {
  const response = await postChat(gateway.url, CHAT, key, { message: 'hi', ...body });
  const text = await response.text();
  return { status: response.status, headers: response.headers, error: response.status === 200 ? undefined : (JSON.parse(text) as { error: Answer['error'] }).error };
}

const session = (id: unknown, extra: Record<string, unknown> = {}): Record<string, unknown> => ({ context: { session_id: id }, ...extra });

describe.each(['redis', 'cluster', 'embedded'])('agent runs and the account scope (%s)', (mode) => {
  it("counts a run's turns per session_id: the 4th turn of a run is 429 naming context.session_id; another run and requests without one go on", async () => {
    const gateway = gateways[mode]!;
    const { rawKey } = await gateway.createKey({ account: `runs-${mode}`, plan: 'runs', agents: ['support'] });
    for (let i = 0; i < 3; i += 1) expect((await send(gateway, rawKey, session('run-1'))).status).toBe(200);
    const refused = await send(gateway, rawKey, session('run-1'));
    expect(refused.status).toBe(429);
    expect(refused.error).toMatchObject({ type: 'rate_limit_exceeded', param: 'context.session_id' });
    expect(refused.headers.get('ratelimit-policy')).toContain('"session-hour";q=3;w=3600');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await send(gateway, rawKey, session('run-2'))).status).toBe(200);
    // No session_id, or a blank one: not counted in any run.
    for (const blank of [undefined, '', '   ', '\t\n']) {
      for (let i = 0; i < 4; i += 1) expect((await send(gateway, rawKey, blank === undefined ? {} : session(blank))).status).toBe(200);
    }
  });

  it('refuses hostile session ids with a documented 400 and counts nothing for them', async () => {
    const gateway = gateways[mode]!;
    const { rawKey } = await gateway.createKey({ account: `req-${mode}`, plan: 'required', agents: ['support'] });
    const runnerCalls = received.length;
    const cases: Array<[Record<string, unknown>, string]> = [
      [{}, 'context.session_id'],
      [session(''), 'context.session_id'],
      [session('  \t '), 'context.session_id'],
      [session('x'.repeat(257)), 'context.session_id'],
      [session(42), 'context.session_id'],
      [session(null), 'context.session_id'],
    ];
    for (const [body, param] of cases) {
      const answer = await send(gateway, rawKey, body);
      expect(answer.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(answer.error).toMatchObject({ type: 'invalid_request', param });
    }
    expect(received.length).toBe(runnerCalls);
    // 256 characters (astral ones count as one) is the longest id taken.
    expect((await send(gateway, rawKey, session('😀'.repeat(256)))).status).toBe(200);
    const ok = await send(gateway, rawKey, session('run-ok'));
    expect(ok.status).toBe(200);
    // Nothing the refused requests sent was counted in a run.
    expect(ok.headers.get('ratelimit')).toContain('"session-hour";r=99;');
  });

  it("counts the account's windows across all of its keys: the 5th request of any key is 429 naming account", async () => {
    const gateway = gateways[mode]!;
    const account = `acct-${mode}`;
    const keys = await Promise.all([0, 1].map(async () => (await gateway.createKey({ account, plan: 'acct', agents: ['support'] })).rawKey));
    for (let i = 0; i < 4; i += 1) {
      const answer = await send(gateway, keys[i % 2]!, {});
      expect(answer.status).toBe(200);
      expect(answer.headers.get('ratelimit-policy')).toContain('"account-hour";q=4;w=3600');
    }
    for (const key of keys) {
      const refused = await send(gateway, key, {});
      expect(refused.status).toBe(429);
      expect(refused.error).toMatchObject({ type: 'rate_limit_exceeded', param: 'account' });
    }
    // Another account has its own.
    const { rawKey: other } = await gateway.createKey({ account: `${account}-other`, plan: 'acct', agents: ['support'] });
    expect((await send(gateway, other, {})).status).toBe(200);
  });

  it('a session\'s "*" quota counts every tool call: spent, naming any tool is 429 naming the run; naming none withholds every tool', async () => {
    const gateway = gateways[mode]!;
    const { rawKey } = await gateway.createKey({ account: `tools-${mode}`, plan: 'tools', agents: ['support'] });
    // Two answers, each calling a different tool: the run's "*" quota of 2 is spent.
    expect((await send(gateway, rawKey, session('run-t', { tools: ['calculator'] }))).status).toBe(200);
    expect((await send(gateway, rawKey, session('run-t', { tools: ['search'] }))).status).toBe(200);
    let named: Answer | undefined;
    // The charge follows the answer (batched): wait for it to count.
    for (let attempt = 0; attempt < 100; attempt += 1) {
      named = await send(gateway, rawKey, session('run-t', { tools: ['search'] }));
      if (named.status === 429) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(named!.status).toBe(429);
    expect(named!.error).toMatchObject({ type: 'tool_budget_exceeded', param: 'context.session_id' });
    expect(named!.error!.message).toContain('tool calls');
    const runnerCalls = received.length;
    const unnamed = await send(gateway, rawKey, { ...session('run-t'), message: 'no tools' });
    expect(unnamed.status).toBe(200);
    expect(unnamed.headers.get('tools-withheld')).toBe('search, calculator');
    expect(received.slice(runnerCalls)).toEqual([{ message: 'no tools', tools: [] }]);
    // Another run of the same key has its own quota.
    expect((await send(gateway, rawKey, session('run-u', { tools: ['search'] }))).status).toBe(200);
  });
});
