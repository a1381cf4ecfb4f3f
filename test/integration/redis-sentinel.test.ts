// redis.mode: sentinel against real processes (a master, two replicas, three redis-sentinel):
// every Redis feature of a gateway in process works through the sentinels, and a master
// SIGKILLed under load costs what rate_limits.on_store_error says, no 500, no hang, no audit
// record, and the gateway follows the sentinels to the promoted replica by itself
// (docs/operations.md, "Redis Cluster and Sentinel"; docs/reliability.md).
import { afterAll, beforeAll, describe, it } from 'vitest';
import type { Redis, RedisClient } from '../../src/redis/redis-client.js';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import type { TestGateway } from '../helpers/gateway.js';
import { runMasterFailover } from '../helpers/redis-failover-scenario.js';
import { startRedisSentinel, type TestRedisSentinel } from '../helpers/redis-sentinel.js';
import {
  checkAuditStream,
  checkExactLimits,
  checkFailedAuthThrottle,
  checkKeysAndRevocation,
  TOPOLOGY_MAX_FAILED_ATTEMPTS,
  topologyGateways,
} from '../helpers/redis-topology-scenarios.js';

const PREFIX = 'gwsn:';

let sentinel: TestRedisSentinel;
let upstream: FakeUpstream;

beforeAll(async () => {
  // Two replicas: one for each failover below.
  [sentinel, upstream] = await Promise.all([startRedisSentinel({ replicas: 2, downAfterMs: 2_000, failoverTimeoutMs: 4_000 }), startFakeUpstream()]);
});

afterAll(async () => {
  await topology.close();
  await upstream?.close();
  await sentinel?.close();
});

const topology = topologyGateways(() => ({ mode: 'sentinel', sentinels: sentinel.sentinels, name: sentinel.name, prefix: PREFIX }), () => upstream.baseUrl);
const startGateway = topology.start;
const inspect = topology.inspect;

/** Every key on the master. */
async function allKeys(client: RedisClient): Promise<string[]> {
  const names: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await (client as Redis).scan(cursor, 'COUNT', 500);
    cursor = next;
    names.push(...batch);
  } while (cursor !== '0');
  return names;
}

describe('redis.mode: sentinel, every feature', () => {
  let gateway: TestGateway;
  let client: RedisClient;

  beforeAll(async () => {
    // A generous command timeout: on a busy machine a 100 ms one can fail a limiter call over
    // to the per-instance fallback, and these tests are about what Redis holds.
    gateway = await startGateway({}, 'gwsn:audit');
    client = inspect(gateway);
  });

  it('finds keys through the sentinels, and a key revoked through the CLI is refused (the invalidation reaches the gateway)', async () => {
    await checkKeysAndRevocation(gateway);
  });

  it('admits exactly the limit', async () => {
    await checkExactLimits(gateway, client, 'limit-acct', 6);
  });

  it('shares the failed-attempt throttle through the master', async () => {
    await checkFailedAuthThrottle(gateway, '198.51.100.9', TOPOLOGY_MAX_FAILED_ATTEMPTS, () => allKeys(client));
  });

  it('writes audit records to the stream, and audit tail reads them through the sentinels', async () => {
    await checkAuditStream(gateway, client);
  });
});

describe.each(['allow', 'deny'] as const)('redis.mode: sentinel, the master SIGKILLed under load (on_store_error: %s)', (mode) => {
  it('answers as on_store_error says, loses no audit record, and follows the sentinels to the new master', { timeout: 120_000 }, async () => {
    const gateway = await startGateway({ rate_limits: { on_store_error: mode, lease: false } }, `gwsn:failover-audit-${mode}`, '100ms');
    const master = await sentinel.masterPort();
    await runMasterFailover({
      topology: 'sentinel',
      gateway,
      inspect: inspect(gateway),
      mode,
      account: `failover-${mode}`,
      commandTimeoutMs: 100,
      kill: () => sentinel.kill(master),
      waitForNewMaster: () => sentinel.waitForNewMaster(master, 30_000),
    });
  });
});
