// Session and account scopes exact across two gateway PROCESSES on one Redis and on a 3-master
// Redis Cluster (docs/design.md, "Agent runs and nested scopes"): 200 requests at once, spread
// over both gateways, admit exactly what each run's and the account's windows allow; and a
// request with all four scopes (the key, its account, an end user, a run) is decided in ONE
// admit call, counted with Redis's MONITOR.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openCliKeyStore } from '../../src/cli/keys.js';
import { parseConfig } from '../../src/config/load-config.js';
import { KeyService } from '../../src/keys/key-service.js';
import { chatResponse, startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { startGatewayProcess, type GatewayProcess } from '../helpers/gateway-process.js';
import { startRedisCluster, type TestRedisCluster } from '../helpers/redis-cluster.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { waitFor } from '../helpers/wait.js';
import { startMonitor } from '../helpers/redis-monitor.js';

const PREFIX = 'gwrunp:';
const PLANS = {
  runs: { windows: [{ requests: 100_000, per: '1m' }], session: { windows: [{ requests: 30, per: '1m' }] } },
  acct: { windows: [{ requests: 100_000, per: '1m' }], account: { windows: [{ requests: 45, per: '1m' }] } },
  all4: {
    windows: [{ requests: 100_000, per: '1m' }],
    account: { windows: [{ requests: 100_000, per: '1m' }] },
    end_user: { windows: [{ requests: 100_000, per: '1m' }] },
    session: { windows: [{ requests: 100_000, per: '1m' }] },
  },
};

interface Topology {
  redisConfig: Record<string, unknown>;
  close(): Promise<void>;
}

let upstream: FakeUpstream;
let dir: string;
let dispatcher: Agent;
let runnerCalls = 0;

beforeAll(async () => {
  [upstream, dir] = await Promise.all([
    startFakeUpstream((_req, res) => {
      runnerCalls += 1;
      const body = JSON.stringify(chatResponse('hi', 1));
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    }),
    mkdtemp(join(tmpdir(), 'agentgw-runs-processes-')),
  ]);
  dispatcher = new Agent({ connections: 256, pipelining: 1 });
});

afterAll(async () => {
  await dispatcher?.close();
  await upstream?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

function configOf(topology: Topology, name: string, lease = true): Record<string, unknown> {
  return {
    redis: { ...topology.redisConfig, prefix: PREFIX, command_timeout: '5s' },
    plans: PLANS,
    rate_limits: { scope: 'key', lease },
    agents: { support: { upstream: upstream.baseUrl } },
    keys: { store: 'redis', cache_ttl: '10m' },
    audit: { file: join(dir, `${name}-audit.jsonl`), spool: join(dir, `${name}-spool.jsonl`) },
    log: { level: 'warn' },
    shutdown_grace: '1s',
  };
}

async function createKey(topology: Topology, tag: string, account: string, plan: string): Promise<string> {
  const parsed = parseConfig(configOf(topology, `cli-${tag}`), 'test', {});
  const store = await openCliKeyStore(parsed);
  try {
    return (await new KeyService({ store, config: parsed }).createKey({ account, plan, agents: ['support'] })).rawKey;
  } finally {
    await store.close();
  }
}

/** `count` requests at once, alternately on gateway a and b; the body of request i from `body(i)`. */
async function burst(gateways: GatewayProcess[], count: number, key: (i: number) => string, body: (i: number) => unknown, group: (i: number) => number, groups: number) {
  const admitted = new Array<number>(groups).fill(0);
  const refusals = new Set<string>();
  await Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const response = await request(`${gateways[i % 2]!.url}/agents/support/api/v1/chat`, {
        method: 'POST',
        dispatcher,
        headers: { authorization: `Bearer ${key(i)}`, 'content-type': 'application/json' },
        body: JSON.stringify(body(i)),
      });
      const text = await response.body.text();
      if (response.statusCode === 200) admitted[group(i)]! += 1;
      else {
        const { error } = JSON.parse(text) as { error: { type: string; param?: string } };
        refusals.add(`${response.statusCode} ${error.type} ${error.param ?? '-'}`);
      }
    }),
  );
  return { admitted, refusals };
}

const TOPOLOGIES: Array<[string, () => Promise<Topology>]> = [
  [
    'one Redis',
    async () => {
      const redis: TestRedis = await startRedis();
      return { redisConfig: { url: redis.url }, close: () => redis.close() };
    },
  ],
  [
    'a 3-master Redis Cluster',
    async () => {
      const cluster: TestRedisCluster = await startRedisCluster({ masters: 3 });
      return { redisConfig: { mode: 'cluster', nodes: cluster.seeds }, close: () => cluster.close() };
    },
  ],
];

describe.each(TOPOLOGIES)('session and account scopes across two gateway processes on %s', (name, start) => {
  let topology: Topology;
  const gateways: GatewayProcess[] = [];

  beforeAll(async () => {
    topology = await start();
    // Leases off: a lease's units not used when the burst ends stay reserved on its instance for
    // up to a bucket (docs/rate-limits.md "Leases"), so with leases two instances admit at most
    // the limit, not exactly it; exact counts are the limiter's own, asked per request. Leases
    // beside the account scope are tested below (never over the limit, every unused unit back).
    for (const process of ['a', 'b']) gateways.push(await startGatewayProcess(dir, `${name.length}-${process}`, configOf(topology, `${name.length}-${process}`, false)));
  }, 90_000);

  afterAll(async () => {
    await Promise.all(gateways.map((gateway) => gateway.stop('SIGKILL')));
    await topology?.close();
  });

  it('200 concurrent requests of four runs of one key: exactly 30 each (their windows), 120 at the runner', async () => {
    const key = await createKey(topology, 'runs', `runs-${name.length}`, 'runs');
    const calls = runnerCalls;
    const { admitted, refusals } = await burst(gateways, 200, () => key, (i) => ({ message: 'hi', context: { session_id: `run-${i % 4}` } }), (i) => i % 4, 4);
    expect(admitted).toEqual([30, 30, 30, 30]);
    expect([...refusals]).toEqual(['429 rate_limit_exceeded context.session_id']);
    expect(runnerCalls - calls).toBe(120);
  });

  it("200 concurrent requests of two keys of one account: exactly the account's 45, refused naming account", async () => {
    const account = `acct-${name.length}`;
    const keys = [await createKey(topology, 'acct1', account, 'acct'), await createKey(topology, 'acct2', account, 'acct')];
    const calls = runnerCalls;
    const { admitted, refusals } = await burst(gateways, 200, (i) => keys[(i >> 1) % 2]!, () => ({ message: 'hi' }), (i) => (i >> 1) % 2, 2);
    expect(admitted[0]! + admitted[1]!).toBe(45);
    expect([...refusals]).toEqual(['429 rate_limit_exceeded account']);
    expect(runnerCalls - calls).toBe(45);
  });
});

describe('the account scope with leases across two gateway processes (one Redis)', () => {
  let topology: Topology;
  const gateways: GatewayProcess[] = [];

  beforeAll(async () => {
    const redis = await startRedis();
    topology = { redisConfig: { url: redis.url }, close: () => redis.close() };
    for (const process of ['a', 'b']) gateways.push(await startGatewayProcess(dir, `leased-${process}`, configOf(topology, `leased-${process}`, true)));
  }, 90_000);

  afterAll(async () => {
    await Promise.all(gateways.map((gateway) => gateway.stop('SIGKILL')));
    await topology?.close();
  });

  it("never admits more than the account's 45, and every unit a lease held comes back: 45 in the window, not one more", async () => {
    const keys = [await createKey(topology, 'leased1', 'acct-leased', 'acct'), await createKey(topology, 'leased2', 'acct-leased', 'acct')];
    const { admitted, refusals } = await burst(gateways, 200, (i) => keys[(i >> 1) % 2]!, () => ({ message: 'hi' }), (i) => (i >> 1) % 2, 2);
    let total = admitted[0]! + admitted[1]!;
    expect(total).toBeLessThanOrEqual(45);
    expect([...refusals]).toEqual(['429 rate_limit_exceeded account']);
    // The units still reserved in a lease when the burst ended go back when it ends: one gateway
    // alone then admits exactly the rest, whatever the other held.
    await waitFor(
      'the units the leases held to come back',
      async () => {
        const response = await request(`${gateways[0]!.url}/agents/support/api/v1/chat`, {
          method: 'POST',
          dispatcher,
          headers: { authorization: `Bearer ${keys[0]}`, 'content-type': 'application/json' },
          body: JSON.stringify({ message: 'hi' }),
        });
        await response.body.text();
        if (response.statusCode === 200) total += 1;
        return total === 45;
      },
      30_000,
      100,
    );
    const more = await request(`${gateways[1]!.url}/agents/support/api/v1/chat`, { method: 'POST', dispatcher, headers: { authorization: `Bearer ${keys[1]}`, 'content-type': 'application/json' }, body: JSON.stringify({ message: 'hi' }) });
    await more.body.text();
    expect([total, more.statusCode]).toEqual([45, 429]);
  });
});

describe('one admit call per request with all four scopes (MONITOR on one Redis)', () => {
  let topology: Topology;
  let redisUrl: string;
  let gateway: GatewayProcess | undefined;

  beforeAll(async () => {
    const redis = await startRedis();
    redisUrl = redis.url;
    topology = { redisConfig: { url: redis.url }, close: () => redis.close() };
    // Leases off: each request then makes its own call (with leases a busy run's requests make
    // fewer, never more), so the count shows every scope decided in one call, not one per scope.
    gateway = await startGatewayProcess(dir, 'monitor', configOf(topology, 'monitor', false));
  }, 60_000);

  afterAll(async () => {
    await gateway?.stop('SIGKILL');
    await topology?.close();
  });

  it('each request (key, account, end user, run) is one script call whose keys span every scope, in one hash tag', async () => {
    const key = await createKey(topology, 'all4', 'all4', 'all4');
    const post = async (i: number): Promise<number> => {
      const response = await request(`${gateway!.url}/agents/support/api/v1/chat`, {
        method: 'POST',
        dispatcher,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ message: 'hi', context: { user_id: `user-${i % 3}`, session_id: `run-${i % 2}` } }),
      });
      await response.body.text();
      return response.statusCode;
    };
    // The key's record and the scripts loaded first: the counted requests then make only their admit calls.
    expect(await post(0)).toBe(200);
    const monitor = await startMonitor(redisUrl);
    const scriptCalls: string[][] = [];
    let markerSeen = false;
    monitor.on('monitor', (_time: string, args: string[]) => {
      if (/^eval(sha)?$/i.test(args[0] ?? '')) scriptCalls.push(args);
      if (args[0]?.toLowerCase() === 'echo' && args[1] === 'all4-done') markerSeen = true;
    });
    const marker = new Redis(redisUrl);
    try {
      const requests = 20;
      for (let i = 1; i <= requests; i += 1) expect(await post(i)).toBe(200);
      // Every admit call went out before its answer; a command sent after the last answer is seen after them.
      await marker.echo('all4-done');
      await waitFor('MONITOR to see the marker', () => markerSeen, 10_000);
      expect(scriptCalls).toHaveLength(requests);
      for (const call of scriptCalls) {
        const keys = call.slice(3, 3 + Number(call[2]));
        expect(keys.every((k) => k.startsWith(`${PREFIX}rl:{account:all4}:`))).toBe(true);
        expect(keys.map((k) => k.slice(`${PREFIX}rl:{account:all4}:`.length).replace(/:[^:]+:/, ':…:'))).toEqual(['k:…:minute', 'account-minute', 'u:…:user-minute', 's:…:session-minute']);
      }
    } finally {
      marker.disconnect();
      monitor.disconnect();
    }
  });
});
