// A real Redis Cluster on 127.0.0.1 for tests: `masters` redis-server processes with
// --cluster-enabled (plus `replicasPerMaster` replicas each), joined with
// `redis-cli --cluster create`. Every process is killed by close(), also when the start
// itself failed half-way.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { distinctFreePorts, killAll, redisCli, startRedisProcess, waitFor, type RedisProcess } from './redis-process.js';

export interface RedisClusterOptions {
  masters?: number;
  replicasPerMaster?: number;
  /** cluster-node-timeout: how long a silent node takes to be declared failed (and its replica promoted). */
  nodeTimeoutMs?: number;
}

export interface TestRedisCluster {
  /** Every node's address, for redis.nodes. */
  readonly seeds: Array<{ host: string; port: number }>;
  readonly processes: ReadonlyMap<number, RedisProcess>;
  /** The port of the master serving `key`'s slot now. */
  masterFor(key: string): Promise<number>;
  /** The ports of the masters serving slots now. */
  masterPorts(): Promise<number[]>;
  /** SIGKILLs the node on `port`. */
  kill(port: number): Promise<void>;
  /** Until every slot is served by a running master and every running node says cluster_state:ok. */
  waitUntilHealthy(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

type SlotRange = [start: number, end: number, master: [host: string, port: number, ...rest: unknown[]], ...replicas: unknown[]];

export async function startRedisCluster(options: RedisClusterOptions = {}): Promise<TestRedisCluster> {
  const masters = options.masters ?? 3;
  const replicas = options.replicasPerMaster ?? 0;
  const count = masters * (1 + replicas);
  const dir = await mkdtemp(join(tmpdir(), 'agentgw-redis-cluster-'));
  const processes = new Map<number, RedisProcess>();
  const close = async (): Promise<void> => {
    await killAll(processes.values());
    await rm(dir, { recursive: true, force: true });
  };
  try {
    // Data and cluster-bus ports picked explicitly: port + 10000 may be taken or out of range.
    const free = await distinctFreePorts(count * 2);
    const ports = free.slice(0, count);
    await Promise.all(
      ports.map(async (port, i) => {
        const args = [
          '--port', String(port), '--cluster-port', String(free[count + i]), '--bind', '127.0.0.1', '--protected-mode', 'no',
          '--cluster-enabled', 'yes', '--cluster-config-file', join(dir, `nodes-${port}.conf`),
          '--cluster-node-timeout', String(options.nodeTimeoutMs ?? 1_000), '--dir', dir, '--save', '', '--appendonly', 'no',
          // No diskless-sync delay: replicas hold their master's data seconds sooner.
          '--repl-diskless-sync-delay', '0',
        ];
        processes.set(port, await startRedisProcess('redis-server', port, args));
      }),
    );
    await redisCli(ports[0]!, '--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', String(replicas), '--cluster-yes');
    const cluster = makeCluster(ports, processes, close);
    await cluster.waitUntilHealthy(30_000);
    if (replicas > 0) {
      await waitFor('every replica to be in sync with its master', async () => {
        const infos = await Promise.all(ports.map((port) => redisCli(port, 'info', 'replication')));
        return infos.filter((info) => info.includes('master_link_status:up')).length === masters * replicas;
      }, 30_000);
    }
    return cluster;
  } catch (error) {
    await close();
    throw error;
  }
}

function makeCluster(ports: number[], processes: Map<number, RedisProcess>, close: () => Promise<void>): TestRedisCluster {
  const living = (): number[] => ports.filter((port) => processes.get(port)?.alive);
  /** One command on a running node, through a short-lived connection. */
  const ask = async <T>(work: (client: Redis) => Promise<T>): Promise<T> => {
    const port = living()[0];
    if (port === undefined) throw new Error('no node of the cluster is running');
    const client = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    client.on('error', () => {});
    try {
      await client.connect();
      return await work(client);
    } finally {
      client.disconnect();
    }
  };
  const slots = (): Promise<SlotRange[]> => ask(async (client) => (await client.cluster('SLOTS')) as unknown as SlotRange[]);
  return {
    seeds: ports.map((port) => ({ host: '127.0.0.1', port })),
    processes,
    async masterFor(key) {
      const slot = await ask((client) => client.cluster('KEYSLOT', key));
      const range = (await slots()).find(([start, end]) => slot >= start && slot <= end);
      if (!range) throw new Error(`no master serves slot ${slot}`);
      return Number(range[2][1]);
    },
    async masterPorts() {
      return [...new Set((await slots()).map((range) => Number(range[2][1])))].sort((a, b) => a - b);
    },
    async kill(port) {
      await processes.get(port)?.kill('SIGKILL');
    },
    async waitUntilHealthy(timeoutMs = 30_000) {
      await waitFor('a healthy cluster (every slot on a running master, cluster_state:ok everywhere)', async () => {
        const running = living();
        const infos = await Promise.all(running.map((port) => redisCli(port, 'cluster', 'info')));
        if (!infos.every((info) => info.includes('cluster_state:ok'))) return false;
        const ranges = await slots();
        const covered = ranges.reduce((sum, [start, end]) => sum + (end - start + 1), 0);
        return covered === 16_384 && ranges.every((range) => running.includes(Number(range[2][1])));
      }, timeoutMs);
    },
    close,
  };
}
