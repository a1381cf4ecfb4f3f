// Two gateway PROCESSES on one Redis share one token budget (docs/rate-limits.md "Token
// budgets"): under 200 concurrent requests split across both, every answered request is
// charged exactly once in the one shared count, at least the budget's worth of answers is
// admitted, every refusal is token_budget_exceeded, and afterwards both refuse.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeyService } from '../../src/keys/key-service.js';
import { openCliKeyStore } from '../../src/cli/keys.js';
import { createRedisClient, type RedisClient } from '../../src/redis/redis-client.js';
import { parseConfig } from '../../src/config/load-config.js';
import { silentLogger } from '../../src/logger.js';
import { chatResponse, startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { sharedRedisGatewayConfig, startGatewayProcess, type GatewayProcess } from '../helpers/gateway-process.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { countedInRedis } from '../helpers/rate-limit-counts.js';

const PREFIX = 'gwtbproc:';
const CHAT = '/agents/support/api/v1/chat';
const TOKENS_PER_ANSWER = 10;
const BUDGET = 1_000;
const REQUESTS = 200;
const PLANS = { metered: { tokens: [{ tokens: BUDGET, per: '1h' }] } };

let redis: TestRedis;
let inspect: RedisClient;
let upstream: FakeUpstream;
let dir: string;
let dispatcher: Agent;
const gateways: GatewayProcess[] = [];

function processConfig(name: string): Record<string, unknown> {
  return sharedRedisGatewayConfig({ redisUrl: redis.url, prefix: PREFIX, plans: PLANS, upstreamBaseUrl: upstream.baseUrl, dir, name });
}

beforeAll(async () => {
  [redis, dir] = await Promise.all([startRedis(), mkdtemp(join(tmpdir(), 'agentgw-tb-proc-'))]);
  upstream = await startFakeUpstream((_req, res) => {
    const body = JSON.stringify(chatResponse('hi', TOKENS_PER_ANSWER));
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
  inspect = createRedisClient({ url: redis.url, prefix: PREFIX, commandTimeoutMs: 2_000 }, silentLogger, 'test-inspect');
  dispatcher = new Agent({ connections: 256, pipelining: 1 });
  for (const name of ['a', 'b']) gateways.push(await startGatewayProcess(dir, name, processConfig(name)));
}, 60_000);

afterAll(async () => {
  await Promise.all(gateways.map((gateway) => gateway.stop('SIGKILL')));
  inspect?.disconnect();
  await dispatcher?.close();
  await upstream?.close();
  await redis?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function createKey(account: string): Promise<string> {
  const config = parseConfig(processConfig('cli'), 'test', {});
  const store = await openCliKeyStore(config);
  try {
    return (await new KeyService({ store, config }).createKey({ account, plan: 'metered', agents: ['support'] })).rawKey;
  } finally {
    await store.close();
  }
}

async function post(gateway: GatewayProcess, key: string): Promise<{ status: number; type: string | undefined }> {
  const response = await request(`${gateway.url}${CHAT}`, {
    method: 'POST',
    dispatcher,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: '{"message":"hi"}',
  });
  const text = await response.body.text();
  const type = response.statusCode === 200 ? undefined : (JSON.parse(text) as { error: { type: string } }).error.type;
  return { status: response.statusCode, type };
}

describe('two gateway processes, one token budget (1000 tokens per hour, 10 per answer)', () => {
  it(`share it exactly under ${REQUESTS} concurrent requests`, async () => {
    const key = await createKey('shared-proc');
    const answers = await Promise.all(Array.from({ length: REQUESTS }, (_, i) => post(gateways[i % 2]!, key)));
    const admitted = answers.filter((a) => a.status === 200).length;
    // Admission while tokens are left: at least the budget's worth of answers gets through.
    expect(admitted).toBeGreaterThanOrEqual(BUDGET / TOKENS_PER_ANSWER);
    // Every refusal is the budget's.
    expect(new Set(answers.filter((a) => a.status !== 200).map((a) => `${a.status} ${a.type}`))).toEqual(admitted === REQUESTS ? new Set() : new Set(['429 token_budget_exceeded']));
    // Charged exactly once each, in the one shared count (charges are batched off the request path: wait for them).
    const expected = admitted * TOKENS_PER_ANSWER;
    let charged = 0;
    for (let i = 0; i < 100 && charged !== expected; i += 1) {
      charged = await countedInRedis(inspect, PREFIX, 'account:shared-proc', 'tokens-hour');
      if (charged !== expected) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(charged).toBe(expected);
    // The overshoot is bounded by the answers in flight: at most all of them.
    expect(charged - BUDGET).toBeLessThanOrEqual(REQUESTS * TOKENS_PER_ANSWER);
    const after = await Promise.all([post(gateways[0]!, key), post(gateways[1]!, key)]);
    expect(after).toEqual([
      { status: 429, type: 'token_budget_exceeded' },
      { status: 429, type: 'token_budget_exceeded' },
    ]);
  });
});
