// redis.mode: cluster against a real Redis Cluster (3 masters, each with a replica): every
// Redis feature of a gateway in process works on it, and a master SIGKILLed under load costs
// what rate_limits.on_store_error says, no 500, no hang, no audit record, and the gateway
// recovers by itself once the replica has taken over (docs/operations.md, "Redis Cluster and
// Sentinel"; docs/reliability.md).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyStoreKeyHead } from '../../src/keys/redis-key-store.js';
import { rateLimitKey } from '../../src/ratelimit/redis-rate-limiter.js';
import type { Cluster, RedisClient } from '../../src/redis/redis-client.js';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { postChat, type TestGateway } from '../helpers/gateway.js';
import { startRedisCluster, type TestRedisCluster } from '../helpers/redis-cluster.js';
import { redisCli, waitFor } from '../helpers/redis-process.js';
import {
  CHAT,
  checkAuditStream,
  checkExactLimits,
  checkFailedAuthThrottle,
  checkKeysAndRevocation,
  checkRevocationReachesGateway,
  TOPOLOGY_MAX_FAILED_ATTEMPTS,
  topologyGateways,
} from '../helpers/redis-topology-scenarios.js';
import { runMasterFailover } from '../helpers/redis-failover-scenario.js';

const PREFIX = 'gwcl:';

let cluster: TestRedisCluster;
let upstream: FakeUpstream;

beforeAll(async () => {
  [cluster, upstream] = await Promise.all([startRedisCluster({ masters: 3, replicasPerMaster: 1, nodeTimeoutMs: 2_000 }), startFakeUpstream()]);
});

afterAll(async () => {
  await topology.close();
  await upstream?.close();
  await cluster?.close();
});

const topology = topologyGateways(() => ({ mode: 'cluster', nodes: cluster.seeds, prefix: PREFIX }), () => upstream.baseUrl);
const startGateway = topology.start;
const inspect = topology.inspect;

/** Every key on every master (SCAN per master: a cluster has no single keyspace to scan). */
async function allKeys(client: RedisClient): Promise<string[]> {
  const names: string[] = [];
  for (const node of (client as Cluster).nodes('master')) {
    let cursor = '0';
    do {
      const [next, batch] = await node.scan(cursor, 'COUNT', 500);
      cursor = next;
      names.push(...batch);
    } while (cursor !== '0');
  }
  return names;
}

describe('redis.mode: cluster, every feature', () => {
  let gateway: TestGateway;
  let client: RedisClient;

  beforeAll(async () => {
    // A generous command timeout: on a busy machine a 100 ms one can fail a limiter call over
    // to the per-instance fallback, and these tests are about what Redis holds.
    gateway = await startGateway({}, 'gwcl:audit');
    client = inspect(gateway);
  });

  it('keeps the key store in one slot, and a key revoked through the CLI is refused (the invalidation reaches the gateway)', async () => {
    await checkKeysAndRevocation(gateway);
    const names = (await allKeys(client)).filter((name) => name.startsWith(keyStoreKeyHead(PREFIX)));
    expect(names.length).toBeGreaterThanOrEqual(4); // key hash, id index, account set, all set
    const slots = new Set(await Promise.all(names.map((name) => (client as Cluster).cluster('KEYSLOT', name))));
    expect(slots.size).toBe(1);
  });

  it('admits exactly the limit, for accounts whose counters live on different masters', async () => {
    const byMaster = new Map<number, string>();
    for (let i = 0; byMaster.size < 2 && i < 200; i += 1) {
      const account = `limit-${i}`;
      byMaster.set(await cluster.masterFor(rateLimitKey(PREFIX, `account:${account}`, 'minute')), account);
    }
    expect(byMaster.size).toBe(2);
    for (const account of byMaster.values()) await checkExactLimits(gateway, client, account, 6);
  });

  it('shares the failed-attempt throttle through the cluster', async () => {
    await checkFailedAuthThrottle(gateway, '198.51.100.7', TOPOLOGY_MAX_FAILED_ATTEMPTS, () => allKeys(client));
  });

  it('writes audit records to the stream, and audit tail reads them from the cluster', async () => {
    await checkAuditStream(gateway, client);
  });
});

describe('redis.mode: cluster, the node of the invalidation subscriber SIGKILLed', () => {
  it('subscribes again on another node, and a revocation reaches the gateway', { timeout: 60_000 }, async () => {
    // The feature block's gateway has a subscriber too: this one's is the one that appears.
    const earlier = new Set(await subscribers());
    const gateway = await startGateway({}, 'gwcl:audit-subscriber');
    const { rawKey, keyId } = await gateway.createKey({ account: 'subscriber-acct', plan: 'roomy' });
    const ok = await postChat(gateway.url, CHAT, rawKey, { message: 'hi' });
    expect(ok.status, await ok.text()).toBe(200);
    const ours = (await subscribers()).filter((entry) => !earlier.has(entry));
    expect(ours).toHaveLength(1);
    const victim = Number(ours[0]!.split('#')[0]);
    await cluster.kill(victim);
    await cluster.waitUntilHealthy(30_000);
    await waitFor('both subscribers to be on running nodes again', async () => (await subscribers()).length === earlier.size + 1, 30_000);
    await checkRevocationReachesGateway(gateway, rawKey, keyId);
  });
});

describe.each(['allow', 'deny'] as const)('redis.mode: cluster, a master SIGKILLed under load (on_store_error: %s)', (mode) => {
  it('answers as on_store_error says, loses no audit record, and recovers once the replica is promoted', { timeout: 120_000 }, async () => {
    // A master that still has a replica (the first run leaves one master without); this
    // run's rate-limit counter and audit stream both live on it.
    const victim = await masterWithReplica();
    const account = await nameOn(victim, (i) => `failover-${mode}-${i}`, (name) => rateLimitKey(PREFIX, `account:${name}`, 'minute'));
    const streamKey = await nameOn(victim, (i) => `gwcl:failover-audit-${mode}-${i}`, (name) => name);
    const gateway = await startGateway({ rate_limits: { on_store_error: mode, lease: false } }, streamKey, '100ms');
    await runMasterFailover({
      topology: 'cluster',
      gateway,
      inspect: inspect(gateway),
      mode,
      account,
      commandTimeoutMs: 100,
      kill: () => cluster.kill(victim),
      waitForNewMaster: () => cluster.waitUntilHealthy(30_000),
    });
  });
});

/** Key-store subscribers (client name agentgw-keys, subscribed) on running nodes, as `<node port>#<client id>`. */
async function subscribers(): Promise<string[]> {
  const found: string[] = [];
  for (const [port, process] of cluster.processes) {
    if (!process.alive) continue;
    const clients = await redisCli(port, 'client', 'list').catch(() => '');
    for (const line of clients.split('\n')) {
      if (line.includes('name=agentgw-keys') && /\bsub=[1-9]/.test(line)) found.push(`${port}#${/\bid=(\d+)/.exec(line)![1]}`);
    }
  }
  return found;
}

async function masterWithReplica(): Promise<number> {
  for (const port of await cluster.masterPorts()) {
    if (/connected_slaves:[1-9]/.test(await redisCli(port, 'info', 'replication'))) return port;
  }
  throw new Error('no master with a replica is left');
}

/** The first name from `nameAt(0..)` whose key (`keyOf`) the master on `port` serves. */
async function nameOn(port: number, nameAt: (i: number) => string, keyOf: (name: string) => string): Promise<string> {
  for (let i = 0; i < 500; i += 1) {
    const name = nameAt(i);
    if ((await cluster.masterFor(keyOf(name))) === port) return name;
  }
  throw new Error(`no name found on the master at ${port}`);
}
