// The MCP front door's "on" half (decision 0099's pattern, docs/performance.md "A feature that
// is off loads nothing"): src/gateway.ts imports this file only when mcp_servers names a server
// at start, so a gateway without MCP loads none of src/mcp/ (decision 0112).
import type { RedisClient } from '../redis/redis-client.js';
import type { McpFrontDoorDependencies } from './mcp-door.js';
import { isMcpPath, McpFrontDoor } from './mcp-front-door.js';
import { MemorySessionStore, RedisSessionStore } from './mcp-session-store.js';

/** The front door and the path test the public server routes by. */
export interface OpenMcpFrontDoor {
  frontDoor: McpFrontDoor;
  owns: (url: string | undefined) => boolean;
}

/** Sessions live in Redis when there is one (any instance serves any session), else in this process. */
export function openMcpFrontDoor(deps: Omit<McpFrontDoorDependencies, 'sessions'>, redis: { client: RedisClient; prefix: string } | undefined): OpenMcpFrontDoor {
  const idleMs = () => deps.runtime.current.config.mcp.sessionIdleMs;
  const sessions = redis ? new RedisSessionStore(redis.client, redis.prefix, idleMs) : new MemorySessionStore(idleMs);
  return { frontDoor: new McpFrontDoor({ ...deps, sessions }), owns: isMcpPath };
}
