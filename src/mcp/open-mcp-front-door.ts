// The MCP front door's "on" half (decision 0099's pattern, docs/performance.md "A feature that
// is off loads nothing"): src/gateway.ts imports this file only when mcp_servers names a server
// at start, so a gateway without MCP loads none of src/mcp/ (decision 0112).
import type { Logger } from '../logger.js';
import type { RedisClient } from '../redis/redis-client.js';
import type { McpFrontDoorDependencies } from './mcp-door.js';
import { McpFrontDoor } from './mcp-front-door.js';
import { MemorySessionStore, RedisSessionStore } from './mcp-session-store.js';

/** Where Redis-held sessions live, and the connection their ends are heard on (any instance may end one). */
export interface McpRedis {
  client: RedisClient;
  prefix: string;
  /** A new `subscriber` connection of the Redis client factory (the store closes it). */
  subscriber: () => RedisClient;
}

function redisSessions(redis: McpRedis, idleMs: () => number, logger: Logger): RedisSessionStore {
  const store = new RedisSessionStore(redis.client, redis.prefix, idleMs);
  // Without the subscription every read goes to Redis, as before it: slower, never wrong.
  store.listen(redis.subscriber(), (error) => logger.warn({ err: error instanceof Error ? error.message : String(error) }, 'cannot subscribe to MCP session ends; sessions are read from redis on every message'));
  return store;
}

/** The front door and the path test the public server routes by. */
export interface OpenMcpFrontDoor {
  frontDoor: McpFrontDoor;
  owns: (url: string | undefined) => boolean;
}

/** Sessions live in Redis when there is one (any instance serves any session), else in this process. */
export function openMcpFrontDoor(deps: Omit<McpFrontDoorDependencies, 'sessions'>, redis: McpRedis | undefined): OpenMcpFrontDoor {
  const idleMs = () => deps.runtime.current.config.mcp.sessionIdleMs;
  const sessions = redis ? redisSessions(redis, idleMs, deps.logger) : new MemorySessionStore(idleMs);
  const frontDoor = new McpFrontDoor({ ...deps, sessions });
  // Its own test: `/mcp` paths and, with token issuers, their protected resource metadata.
  return { frontDoor, owns: frontDoor.owns };
}
