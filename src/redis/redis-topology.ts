// Where `redis.mode` chooses the ioredis class (docs/operations.md, "Redis Cluster and
// Sentinel"). The caller hands over one connection's options written for a single server
// (redis-client.ts decides them by what the connection is for); this file spreads them over
// what each topology has:
// - single: `Redis` on the URL.
// - sentinel: `Redis` that asks the sentinels for the master, at start and after every
//   reconnect (and reconnects when a demoted master answers READONLY).
// - cluster: `Cluster`; queueing and retry options belong to the cluster, timeouts and
//   credentials to each node's connection. A subscriber is a plain connection to one node
//   that moves on at every reconnect (cluster-node-connector.ts).
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import type { ConnectionOptions } from 'node:tls';
import type { GatewayConfig } from '../config/schema.js';
import { clusterNodeConnector, type ClusterNodeAddress } from './cluster-node-connector.js';
import { redactRedisUrl } from './redis-connection-policy.js';

type SchemaRedisConfig = NonNullable<GatewayConfig['redis']>;
type SingleRedisConfig = Extract<SchemaRedisConfig, { mode: 'single' }>;

/** `config.redis` as parsed, or (tests, tools) a single server's settings without `mode`. */
export type RedisConfig = SchemaRedisConfig | (Omit<SingleRedisConfig, 'mode'> & { mode?: 'single' | undefined });

/** Reads and writes always go to masters: a replica may not have a revocation yet. */
const SCALE_READS = 'master';

/** How often a cluster client reads the slot map unasked. */
const SLOTS_REFRESH_INTERVAL_MS = 2_000;

/** What every connection of one factory shares: the config, its TLS options, and the clusters it has open. */
export interface Topology {
  config: RedisConfig;
  tls: ConnectionOptions | undefined;
  /** Open Cluster connections, whose current node list a cluster subscriber may move to. */
  clusters: Set<Cluster>;
}

export function openConnection(topology: Topology, options: RedisOptions, subscriber: boolean): Redis | Cluster {
  const { config, tls } = topology;
  const credentials = { username: config.username, password: config.password };
  switch (config.mode) {
    case 'sentinel':
      return new Redis({
        ...options,
        ...credentials,
        sentinels: config.sentinels,
        name: config.name,
        sentinelPassword: config.sentinelPassword,
        // The sentinels get the same TLS settings as the master and replicas.
        ...(tls ? { tls, enableTLSForSentinelMode: true, sentinelTLS: tls } : {}),
        // Ask every sentinel in turn; when none answers, wait as a reconnect would.
        sentinelRetryStrategy: options.retryStrategy ?? ((attempt) => Math.min(attempt * 50, 2_000)),
        sentinelCommandTimeout: options.connectTimeout,
        // ioredis' failoverDetector stays off: each sentinel announces +switch-master in its
        // own time (the one that led the failover last, a second after the others), and
        // every announcement would drop a connection already made to the new master.
        // A lost master closes its sockets; a demoted one answers READONLY, handled below.
        reconnectOnError: reconnectWhenDemoted,
      });
    case 'cluster': {
      if (subscriber) return openClusterSubscriber(topology, options);
      const cluster = new Cluster(config.nodes, clusterOptions(options, credentials, tls));
      connectMastersEagerly(cluster);
      topology.clusters.add(cluster);
      cluster.once('end', () => topology.clusters.delete(cluster));
      return cluster;
    }
    default:
      return new Redis(config.url, { ...options, ...credentials, ...(tls ? { tls } : {}), reconnectOnError: reconnectWhenDemoted });
  }
}

/**
 * A server that was master and is now a replica (Sentinel demoted it; a managed Redis behind
 * one DNS name failed over) keeps the connection and refuses writes with READONLY:
 * reconnect, which finds the master again (through the sentinels, or the name).
 */
function reconnectWhenDemoted(error: Error): boolean {
  return error.message.startsWith('READONLY');
}

function clusterOptions(options: RedisOptions, credentials: Pick<RedisOptions, 'username' | 'password'>, tls: ConnectionOptions | undefined): ClusterOptions {
  const { enableOfflineQueue, enableAutoPipelining, retryStrategy, connectTimeout, ...nodeOptions } = options;
  return {
    enableOfflineQueue: enableOfflineQueue ?? true,
    enableAutoPipelining: enableAutoPipelining ?? false,
    // `null` ends the client when no seed node answers (the CLI's one-shot reads).
    clusterRetryStrategy: retryStrategy ? (attempt) => retryStrategy(attempt) ?? null : retryStrategy === null ? () => null : (attempt) => Math.min(100 + attempt * 2, 2_000),
    scaleReads: SCALE_READS,
    // CLUSTER SLOTS is asked again after a MOVED or a lost node; bound how long one asking may take.
    slotsRefreshTimeout: Math.max(1_000, connectTimeout ?? 0),
    // And every few seconds regardless (ioredis does not by default): a promoted replica is
    // found even by a client whose only traffic (a pipeline, a blocked read) triggers no
    // refresh of its own.
    slotsRefreshInterval: SLOTS_REFRESH_INTERVAL_MS,
    redisOptions: { ...nodeOptions, ...credentials, ...(connectTimeout === undefined ? {} : { connectTimeout }), ...(tls ? { tls } : {}) },
  };
}

/**
 * A cluster opens a node's socket on that node's first command, which then waits for the
 * connection (and without the offline queue, commands sent meanwhile fail: a promoted
 * replica's first burst of limiter calls would all fall back). Masters are connected as soon
 * as they join the client's pool instead: at start, and when a slot map read after a
 * failover names a new one.
 */
function connectMastersEagerly(cluster: Cluster): void {
  cluster.on('+node', (node: Redis) => {
    if (node.options.readOnly || node.status !== 'wait') return;
    node.connect().catch(() => {
      // Counted and logged through the cluster's `node error`.
    });
  });
}

function openClusterSubscriber(topology: Topology, options: RedisOptions): Redis {
  const { config, tls } = topology;
  if (config.mode !== 'cluster') throw new Error('a cluster subscriber needs redis.mode: cluster');
  const seeds = config.nodes;
  const candidates = (): ClusterNodeAddress[] => {
    const known = new Map<string, ClusterNodeAddress>();
    for (const cluster of topology.clusters) {
      for (const node of cluster.nodes('all')) known.set(`${node.options.host}:${node.options.port}`, { host: node.options.host!, port: node.options.port! });
    }
    for (const seed of seeds) known.set(`${seed.host}:${seed.port}`, seed);
    return [...known.values()];
  };
  return new Redis({
    ...options,
    username: config.username,
    password: config.password,
    // ioredis waits for `secureConnect` rather than `connect` when `tls` is set.
    ...(tls ? { tls } : {}),
    Connector: clusterNodeConnector(candidates, tls),
  });
}

/** The configured servers for messages and logs, with any password hidden. */
export function describeRedis(config: RedisConfig): string {
  switch (config.mode) {
    case 'cluster':
      return `cluster ${config.nodes.map((node) => `${node.host}:${node.port}`).join(',')}`;
    case 'sentinel':
      return `master "${config.name}" via sentinels ${config.sentinels.map((node) => `${node.host}:${node.port}`).join(',')}`;
    default:
      return redactRedisUrl(config.url);
  }
}
