// Closing a Redis connection the caller owns, whatever state it is in, from the key store's
// close and the MCP session copies' (a module of its own, with a type import only: the MCP front
// door in embedded mode loads it without loading ioredis).
import type { RedisClient } from './redis-client.js';

/** QUIT when the connection is up, else a plain disconnect; never throws. */
export async function closeQuietly(client: RedisClient | undefined): Promise<void> {
  if (!client || client.status === 'end') return;
  try {
    if (client.status === 'ready') await client.quit();
    else client.disconnect();
  } catch {
    client.disconnect();
  }
}
