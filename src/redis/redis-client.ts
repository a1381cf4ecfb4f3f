// The one place the gateway process creates its shared ioredis client (DESIGN.md 7: only
// *redis* files import ioredis). Commands fail fast while disconnected instead of queueing,
// so a dead Redis costs a request at most `redis.command_timeout`.
import { Redis } from 'ioredis';
import { backstopTimeoutMs } from '../deadline.js';
import type { GatewayConfig } from '../config/schema.js';
import type { Logger } from '../logger.js';
import { metrics } from '../metrics/metrics.js';

export type { Redis };

export function createRedisClient(redisConfig: NonNullable<GatewayConfig['redis']>, logger: Logger, name = 'agentgw'): Redis {
  let down = false;
  const client = new Redis(redisConfig.url, {
    connectionName: name,
    // The request path bounds its own calls (src/deadline.ts); this only catches a connection
    // that never answers.
    commandTimeout: backstopTimeoutMs(redisConfig.commandTimeoutMs),
    connectTimeout: Math.max(1_000, redisConfig.commandTimeoutMs * 5),
    enableOfflineQueue: false,
    // Concurrent requests' limiter scripts (and audit batches) share one socket write per
    // event-loop turn instead of one write each.
    enableAutoPipelining: true,
    maxRetriesPerRequest: 0,
    // Reconnect quickly at first, then back off to at most 1 s between attempts.
    retryStrategy: (attempt) => Math.min(50 * attempt, 1_000),
    lazyConnect: false,
  });
  client.on('error', (error: Error) => {
    metrics.redisErrors.inc({ op: 'connection' });
    if (!down) logger.warn({ err: { message: error.message } }, 'redis connection error');
    down = true;
  });
  client.on('ready', () => {
    if (down) logger.info('redis connection restored');
    down = false;
  });
  return client;
}

/** Whether Redis answers PING within the command timeout (for /readyz). */
export async function redisIsReachable(client: Redis): Promise<boolean> {
  try {
    return (await client.ping()) === 'PONG';
  } catch {
    return false;
  }
}

/**
 * Resolves once the client is connected, or after `waitMs` (then the gateway starts
 * degraded and the store-error modes apply). Taking traffic before the connection is up
 * would fail every first request over to the per-instance fallbacks.
 */
export function waitForRedis(client: Redis, waitMs: number): Promise<boolean> {
  if (client.status === 'ready') return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (ready: boolean): void => {
      clearTimeout(timer);
      client.off('ready', onReady);
      resolve(ready);
    };
    const onReady = (): void => done(true);
    const timer = setTimeout(() => done(false), waitMs);
    client.once('ready', onReady);
  });
}
