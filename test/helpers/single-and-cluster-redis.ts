// A test file's two Redis topologies side by side: a throwaway single server and a 3-master
// Cluster, each with a client of the test's own, started before the file's tests and stopped
// after them. For tests that run the same cases on both (`for (const topology of TOPOLOGIES)`).
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { startRedisCluster, type TestRedisCluster } from './redis-cluster.js';
import { waitFor } from './redis-process.js';
import { startRedis, type TestRedis } from './redis.js';

export const TOPOLOGIES = ['single', 'cluster'] as const;
export type Topology = (typeof TOPOLOGIES)[number];

export interface SingleAndClusterRedis {
  /** The client of a topology (set in beforeAll). */
  client(topology: Topology): Redis | Cluster;
  /** The Cluster's client, for KEYSLOT and the like (set in beforeAll). */
  readonly cluster: Cluster;
  /** Every key under `prefix`, on every master of a Cluster. */
  allKeys(client: Redis | Cluster, prefix: string): Promise<string[]>;
}

export function useSingleAndClusterRedis(): SingleAndClusterRedis {
  let redis: TestRedis | undefined;
  let redisCluster: TestRedisCluster | undefined;
  let single: Redis | undefined;
  let cluster: Cluster | undefined;
  beforeAll(async () => {
    [redis, redisCluster] = await Promise.all([startRedis(), startRedisCluster({ masters: 3 })]);
    single = new Redis(redis.url, { maxRetriesPerRequest: 1 });
    const clusterClient = new Cluster([redisCluster.seeds[0]!], { redisOptions: { maxRetriesPerRequest: 1 } });
    cluster = clusterClient;
    await waitFor('the ioredis cluster client', async () => (await clusterClient.ping()) === 'PONG');
  }, 60_000);
  afterAll(async () => {
    single?.disconnect();
    cluster?.disconnect();
    await Promise.all([redis?.close(), redisCluster?.close()]);
  });
  return {
    client: (topology) => (topology === 'single' ? single! : cluster!),
    get cluster() {
      return cluster!;
    },
    async allKeys(client, prefix) {
      const nodes = client instanceof Cluster ? client.nodes('master') : [client];
      return (await Promise.all(nodes.map((node) => node.keys(`${prefix}*`)))).flat();
    },
  };
}
