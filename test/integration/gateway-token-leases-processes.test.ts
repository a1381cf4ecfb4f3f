// Two gateway PROCESSES on one Redis, leases on, one busy key on a plan with a token budget
// (docs/rate-limits.md "Leases", decision 0026): the busy key is served from leases that
// reserve tokens, yet once the leases have ended Redis holds exactly the tokens of the
// admitted answers, the overshoot stays within the bound, and when the budget is spent both
// gateways refuse with token_budget_exceeded.
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
import { MAX_LEASE_MS } from '../../src/ratelimit/rate-limit-leases.js';
import { chatResponse, startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { sharedRedisGatewayConfig, startGatewayProcess, type GatewayProcess } from '../helpers/gateway-process.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { countedInRedis } from '../helpers/rate-limit-counts.js';

const PREFIX = 'gwtlproc:';
const CHAT = '/agents/support/api/v1/chat';
const TOKENS_PER_ANSWER = 10;
const BUDGET = 20_000;
const WORKERS_PER_GATEWAY = 8;
const PLANS = { metered: { windows: [{ requests: 1_000_000, per: '1m' }], tokens: [{ tokens: BUDGET, per: '1h' }] } };
const SUBJECT = 'account:busy-leased';

let redis: TestRedis;
let inspect: RedisClient;
let upstream: FakeUpstream;
let dir: string;
let dispatcher: Agent;
const gateways: GatewayProcess[] = [];

function processConfig(name: string): Record<string, unknown> {
  return { ...sharedRedisGatewayConfig({ redisUrl: redis.url, prefix: PREFIX, plans: PLANS, upstreamBaseUrl: upstream.baseUrl, dir, name }), rate_limits: { lease: true } };
}

beforeAll(async () => {
  [redis, dir] = await Promise.all([startRedis(), mkdtemp(join(tmpdir(), 'agentgw-tl-proc-'))]);
  upstream = await startFakeUpstream((_req, res) => {
    const body = JSON.stringify(chatResponse('hi', TOKENS_PER_ANSWER));
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
  inspect = createRedisClient({ url: redis.url, prefix: PREFIX, commandTimeoutMs: 2_000 }, silentLogger, 'test-inspect');
  dispatcher = new Agent({ connections: 64, pipelining: 1 });
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

/** Script calls Redis has run (the limiter's EVALSHA, and EVAL for a connection's first call). */
async function scriptCalls(): Promise<number> {
  const stats = await inspect.info('commandstats');
  const calls = (command: string): number => Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
  return calls('evalsha') + calls('eval');
}

/** Long enough for every lease to end and for the sweep after it to give its units and tokens back. */
const leasesOver = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 2 * MAX_LEASE_MS + 300));

describe(`two gateway processes, leases on, one busy key on a budget of ${BUDGET} tokens per hour (${TOKENS_PER_ANSWER} per answer)`, () => {
  it('serve it from token leases, exact once they end, and both refuse when it is spent', async () => {
    const key = await createKey('busy-leased');
    let admitted = 0;
    const refusals = new Set<string>();
    /** One answer; false when refused. */
    const post = async (gateway: GatewayProcess): Promise<boolean> => {
      const response = await request(`${gateway.url}${CHAT}`, {
        method: 'POST',
        dispatcher,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: '{"message":"hi"}',
      });
      const text = await response.body.text();
      if (response.statusCode === 200) {
        admitted += 1;
        return true;
      }
      refusals.add(`${response.statusCode} ${(JSON.parse(text) as { error: { type: string } }).error.type}`);
      return false;
    };
    const before = await scriptCalls();
    // Each worker sends one request at a time until refused.
    await Promise.all(
      gateways.flatMap((gateway) =>
        Array.from({ length: WORKERS_PER_GATEWAY }, async () => {
          while (await post(gateway));
        }),
      ),
    );
    const calls = (await scriptCalls()) - before;
    expect(admitted).toBeGreaterThan(BUDGET / TOKENS_PER_ANSWER / 2);
    // Served from leases: without token leases every answer costs an admission call
    // (coalesced at most with the gateway's other 7 workers) and a charge call.
    expect(calls).toBeLessThan(admitted / 4);
    // A refusal may have come while the other gateway held a reserve: once leases have
    // ended, Redis holds exactly the admitted answers' tokens, and the rest is admitted.
    for (let round = 0; round < 20; round += 1) {
      await leasesOver();
      expect(await countedInRedis(inspect, PREFIX, SUBJECT, 'tokens-hour')).toBe(admitted * TOKENS_PER_ANSWER);
      const refusedBy = await Promise.all(gateways.map(async (gateway) => !(await post(gateway))));
      if (refusedBy.every(Boolean)) break;
      while ((await post(gateways[0]!)) || (await post(gateways[1]!)));
    }
    await leasesOver();
    const charged = await countedInRedis(inspect, PREFIX, SUBJECT, 'tokens-hour');
    expect(charged).toBe(admitted * TOKENS_PER_ANSWER);
    expect(charged).toBeGreaterThanOrEqual(BUDGET);
    // The overshoot bound (docs/rate-limits.md): limit − 1 + at most twice the answers in
    // flight at once; a worker has at most two (its last, charged as it closes, and its next).
    const inFlightAtOnce = gateways.length * WORKERS_PER_GATEWAY * 2;
    expect(charged).toBeLessThanOrEqual(BUDGET - 1 + 2 * inFlightAtOnce * TOKENS_PER_ANSWER);
    expect(refusals).toEqual(new Set(['429 token_budget_exceeded']));
    // Spent: both refuse.
    expect(await Promise.all(gateways.map((gateway) => post(gateway)))).toEqual([false, false]);
  });
});
