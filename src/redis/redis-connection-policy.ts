// What every Redis connection of the process does when it loses Redis: count each
// connection error, say so once per outage at warn and once at recovery at info. A down
// Redis makes ioredis emit an error per reconnect attempt; the count keeps them all, the
// log keeps one line per connection and outage.
import type { Logger } from '../logger.js';
import { metrics } from '../metrics/metrics.js';

/** The events of an ioredis connection this policy listens to (a single server's or a cluster's). */
interface ConnectionEvents {
  on(event: 'error', listener: (error: Error) => void): unknown;
  on(event: 'ready' | 'refresh', listener: () => void): unknown;
  on(event: 'node error', listener: (error: Error, node: string) => void): unknown;
}

export interface WatchedConnection {
  /** The connection's CLIENT SETNAME and what it is for: a log line says which connection lost Redis. */
  name: string;
  use: string;
  /** The server's address with any password hidden (redactRedisUrl). */
  address: string;
}

export function watchConnection(client: ConnectionEvents, logger: Logger, connection: WatchedConnection): void {
  const fields = { redis: connection.address, connection: connection.name, use: connection.use };
  let down = false;
  const failed = (error: Error, node?: string): void => {
    metrics.redisErrors.inc({ op: 'connection' });
    if (down) return;
    down = true;
    // The message tells refused from timed out or refused credentials; a reconnect attempt's
    // stack says nothing more. A cluster names the node too.
    logger.warn({ ...fields, ...(node === undefined ? {} : { node }), err: { message: redisErrorMessage(error) } }, 'redis connection error');
  };
  const answered = (): void => {
    if (!down) return;
    down = false;
    logger.info(fields, 'redis connection restored');
  };
  client.on('error', (error: Error) => failed(error));
  client.on('ready', answered);
  // A cluster stays `ready` while one node is lost: its errors come per node, and a slot map
  // read again afterwards (after a failover, without the lost node) is the recovery.
  client.on('node error', failed);
  client.on('refresh', answered);
}

/** A cluster's "Failed to refresh slots cache" says why only in its last node's error. */
export function redisErrorMessage(error: Error): string {
  const last = (error as Error & { lastNodeError?: Error }).lastNodeError;
  return last ? `${error.message} (${last.message})` : error.message;
}

/** A redis:// URL for messages and logs: the password (if any) replaced by `***`. */
export function redactRedisUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    // An unparsable URL may still hold a password: name no part of it.
    return 'redis';
  }
}
