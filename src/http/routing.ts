// Route matching (docs/design.md, "Routes"): path-based `/agents/{agent}/api/v1/chat[/stream]`,
// and `/api/v1/chat[/stream]` on an agent's configured host.
import type { AgentConfig } from '../config/schema.js';
import { GatewayError } from '../errors.js';
import type { ChatRoute } from '../request/chat-route.js';


export interface MatchedRoute {
  agent: AgentConfig;
  route: ChatRoute;
}

export interface RouteTable {
  byId: ReadonlyMap<string, AgentConfig>;
  byHost: ReadonlyMap<string, AgentConfig>;
}

export function buildRouteTable(agents: ReadonlyMap<string, AgentConfig>): RouteTable {
  const byHost = new Map<string, AgentConfig>();
  for (const agent of agents.values()) if (agent.host) byHost.set(agent.host, agent);
  return { byId: agents, byHost };
}

const AGENTS_PREFIX = '/agents/';
const API_PREFIX = '/api/v1/';

function routeFromSuffix(suffix: string): ChatRoute | undefined {
  if (suffix === 'chat') return 'chat';
  if (suffix === 'chat/stream') return 'chat/stream';
  return undefined;
}

function hostWithoutPort(host: string | undefined): string | undefined {
  if (!host) return undefined;
  const lower = host.toLowerCase();
  if (lower.startsWith('[')) return lower.slice(0, lower.indexOf(']') + 1);
  const colon = lower.indexOf(':');
  return colon === -1 ? lower : lower.slice(0, colon);
}

/** Resolves the agent and route, or throws not_found / method_not_allowed. */
export function matchRoute(table: RouteTable, method: string | undefined, rawUrl: string | undefined, host: string | undefined): MatchedRoute {
  const url = rawUrl ?? '/';
  const query = url.indexOf('?');
  const path = query === -1 ? url : url.slice(0, query);
  let agent: AgentConfig | undefined;
  let route: ChatRoute | undefined;
  if (path.startsWith(AGENTS_PREFIX)) {
    const slash = path.indexOf('/', AGENTS_PREFIX.length);
    if (slash !== -1 && path.startsWith(API_PREFIX, slash)) {
      route = routeFromSuffix(path.slice(slash + API_PREFIX.length));
      if (route) agent = table.byId.get(decodeAgentId(path.slice(AGENTS_PREFIX.length, slash)));
    }
  } else if (path.startsWith(API_PREFIX) && table.byHost.size > 0) {
    route = routeFromSuffix(path.slice(API_PREFIX.length));
    const name = hostWithoutPort(host);
    if (route && name) agent = table.byHost.get(name);
  }
  if (!agent || !route) throw new GatewayError('not_found');
  if (method !== 'POST') throw new GatewayError('method_not_allowed', { headers: { Allow: 'POST' } });
  return { agent, route };
}

function decodeAgentId(segment: string): string {
  if (!segment.includes('%')) return segment;
  try {
    return decodeURIComponent(segment);
  } catch {
    return '';
  }
}
