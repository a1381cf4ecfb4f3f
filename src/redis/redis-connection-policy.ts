// What every Redis connection of the process does when it loses Redis: count each
// connection error, say so once per outage at warn and once at recovery at info. A down
// Redis makes ioredis emit an error per reconnect attempt; the count keeps them all, the
// log keeps one line per connection and outage.
import type { Logger } from '../logger.js';
import { metrics } from '../metrics/metrics.js';

/** The events of an ioredis connection this policy listens to (a single node or, later, a cluster). */
interface ConnectionEvents {
  on(event: 'error', listener: (error: Error) => void): unknown;
  on(event: 'ready', listener: () => void): unknown;
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
  client.on('error', (error: Error) => {
    metrics.redisErrors.inc({ op: 'connection' });
    if (down) return;
    down = true;
    // The message tells refused from timed out or refused credentials; a reconnect attempt's
    // stack says nothing more.
    logger.warn({ ...fields, err: { message: error.message } }, 'redis connection error');
  });
  client.on('ready', () => {
    if (!down) return;
    down = false;
    logger.info(fields, 'redis connection restored');
  });
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
