// The one place that constructs ioredis clients (only src/redis/ and *redis* files import
// ioredis). Everything else is handed a client, or this factory, by the composition root
// (src/gateway.ts) or a CLI command. Every connection gets the same error policy
// (redis-connection-policy.ts); what differs between them is what they are for, which
// decides how commands queue and retry while Redis is away, and `redis.mode` (single,
// cluster, sentinel), which decides the ioredis class (redis-topology.ts).
import type { Cluster, Redis, RedisOptions } from 'ioredis';
import { backstopTimeoutMs } from '../deadline.js';
import type { Logger } from '../logger.js';
import { redisErrorMessage, watchConnection } from './redis-connection-policy.js';
import { readRedisTls } from './redis-tls.js';
import { describeRedis, openConnection, type RedisConfig, type Topology } from './redis-topology.js';

export type { Cluster, Redis, RedisConfig };
export { describeRedis };

/**
 * A connection the factory hands out: a single server's (`single`, `sentinel`, and a
 * cluster's subscriber) or a whole cluster's. Both take the same commands; keys a command
 * or script uses together must share a hash tag (docs/operations.md, "Key layout").
 */
export type RedisClient = Redis | Cluster;

/**
 * What a connection is for:
 * - `shared`: the gateway's request path (limiter, failed-auth throttle), audit sink and
 *   readiness probe. Fails fast while disconnected instead of queueing, so a dead Redis
 *   costs a request at most `redis.command_timeout`.
 * - `key-store`: key lookups and administration. A command issued while reconnecting
 *   waits for the connection, within the store's own deadline.
 * - `webhooks`: the webhook outbox and its delivery workers. As `key-store`, and
 *   auto-pipelined: the commands one batch or one lease round issues together leave in one
 *   write (docs/decisions/0075-idle-webhook-delivery.md).
 * - `subscriber`: key invalidations (pub/sub). Waits for Redis as long as it takes.
 * - `cli-read`: one CLI read. No reconnect: an outage fails the command.
 * - `cli-follow`: a CLI read that follows (`audit tail --follow`). Keeps reconnecting
 *   while Redis restarts.
 */
export type RedisConnectionUse = 'shared' | 'key-store' | 'webhooks' | 'subscriber' | 'cli-read' | 'cli-follow';

export interface RedisClientFactory {
  /** The configured server with any password hidden, for messages. */
  readonly address: string;
  /** A new connection, named `name` (CLIENT SETNAME); whoever asks for it closes it. */
  connect(use: RedisConnectionUse, name: string): RedisClient;
  /**
   * Resolves once `client` is connected; rejects with "cannot reach redis at <address>:
   * <why>" on its first connection error, when it gives up, or after `waitMs`. For the CLI,
   * which fails fast rather than wait out an outage.
   */
  whenReady(client: RedisClient, waitMs: number): Promise<void>;
}

/** Reads `redis.tls`'s PEM files now: an unreadable one throws here, naming the key and the file. */
export function createRedisClientFactory(config: RedisConfig, logger: Logger): RedisClientFactory {
  const address = describeRedis(config);
  const topology: Topology = { config, tls: readRedisTls(config.tls, config.mode === 'cluster' || config.mode === 'sentinel' ? undefined : config.url), clusters: new Set() };
  return {
    address,
    connect(use, name) {
      const client = openConnection(topology, { ...connectionOptions(use, config.commandTimeoutMs), connectionName: name }, use === 'subscriber');
      watchConnection(client, logger, { name, use, address });
      return client;
    },
    async whenReady(client, waitMs) {
      const failure = await readyWithin(client, waitMs, true);
      if (failure !== undefined) throw new Error(`cannot reach redis at ${address}: ${redisErrorMessage(failure)}`, { cause: failure });
    },
  };
}

/** The gateway's shared connection (`shared` use), for code that needs just that one. */
export function createRedisClient(config: RedisConfig, logger: Logger, name = 'agentgw'): RedisClient {
  return createRedisClientFactory(config, logger).connect('shared', name);
}

function connectionOptions(use: RedisConnectionUse, commandTimeoutMs: number): RedisOptions {
  switch (use) {
    case 'shared':
      return {
        // The request path bounds its own calls (src/deadline.ts); this only catches a
        // connection that never answers.
        commandTimeout: backstopTimeoutMs(commandTimeoutMs),
        connectTimeout: Math.max(1_000, commandTimeoutMs * 5),
        enableOfflineQueue: false,
        // Concurrent requests' limiter scripts (and audit batches) share one socket write
        // per event-loop turn instead of one write each.
        enableAutoPipelining: true,
        maxRetriesPerRequest: 0,
        // Reconnect quickly at first, then back off to at most 1 s between attempts.
        retryStrategy: (attempt) => Math.min(50 * attempt, 1_000),
      };
    case 'key-store':
      return { commandTimeout: backstopTimeoutMs(commandTimeoutMs), connectTimeout: Math.max(1_000, commandTimeoutMs * 10), maxRetriesPerRequest: 1 };
    case 'webhooks':
      return { ...connectionOptions('key-store', commandTimeoutMs), enableAutoPipelining: true };
    case 'subscriber':
      // No command timeout and no retry cap. Subscriptions are renewed by the subscriber
      // itself on every reconnect, because a reconnect also means clearing caches.
      return { connectTimeout: Math.max(1_000, commandTimeoutMs * 10), maxRetriesPerRequest: null, autoResubscribe: false, enableOfflineQueue: true };
    case 'cli-read':
      return { connectTimeout: 5_000, maxRetriesPerRequest: 1, retryStrategy: () => null };
    case 'cli-follow':
      return { connectTimeout: 5_000, maxRetriesPerRequest: 20, retryStrategy: (attempt) => Math.min(attempt * 200, 2_000) };
  }
}

/** Whether Redis answers PING within the command timeout (for /readyz). */
export async function redisIsReachable(client: RedisClient): Promise<boolean> {
  try {
    return (await client.ping()) === 'PONG';
  } catch {
    return false;
  }
}

/**
 * Resolves true once the client is connected, false after `waitMs` (then the gateway
 * starts degraded and the store-error modes apply). Taking traffic before the connection
 * is up would fail every first request over to the per-instance fallbacks.
 */
export async function waitForRedis(client: RedisClient, waitMs: number): Promise<boolean> {
  return (await readyWithin(client, waitMs, false)) === undefined;
}

/** Undefined once connected; otherwise why not: the connection ended, `waitMs` passed, or (with `failOnError`) its first error. */
function readyWithin(client: RedisClient, waitMs: number, failOnError: boolean): Promise<Error | undefined> {
  if (client.status === 'ready') return Promise.resolve(undefined);
  if (client.status === 'end') return Promise.resolve(new Error('connection closed'));
  return new Promise((resolve) => {
    const done = (failure: Error | undefined): void => {
      clearTimeout(timer);
      client.off('ready', onReady);
      client.off('error', onError);
      client.off('end', onEnd);
      resolve(failure);
    };
    const onReady = (): void => done(undefined);
    const onError = (error: Error): void => done(error);
    const onEnd = (): void => done(new Error('connection closed'));
    const timer = setTimeout(() => done(new Error(`no answer within ${waitMs} ms`)), waitMs);
    client.once('ready', onReady);
    if (failOnError) client.once('error', onError);
    client.once('end', onEnd);
  });
}
