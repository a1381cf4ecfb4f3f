// What the POST stages and the upstream call need of the front door (mcp-front-door.ts
// implements it): its transports, labels, dependencies and session stage. An interface of its
// own so those files do not import the front door that imports them.
import type { McpServerConfig } from '../config/schema.js';
import type { AuditLog } from '../audit/audit-record.js';
import type { Authenticator } from '../auth/authenticator.js';
import type { Clock } from '../clock.js';
import type { GatewayRuntime } from '../http/gateway-runtime.js';
import type { Logger } from '../logger.js';
import type { RateLimiter } from '../ratelimit/rate-limiter.js';
import type { RequestTracing } from '../telemetry/request-tracing.js';
import type { JsonRpcId } from './json-rpc.js';
import type { McpExchange } from './mcp-exchange.js';
import type { ToolLabels } from './mcp-labels.js';
import type { ListedTools } from './listed-tools.js';
import type { SessionGauge } from './session-gauge.js';
import type { McpSessionStore } from './mcp-session-store.js';
import type { McpTransport } from './mcp-transport.js';
import type { McpUpstreams } from './mcp-upstreams.js';

export interface McpFrontDoorDependencies {
  runtime: GatewayRuntime;
  authenticator: Authenticator;
  rateLimiter: RateLimiter;
  auditLog: AuditLog;
  logger: Logger;
  clock: Clock;
  sessions: McpSessionStore;
  /** Present only while telemetry is on. */
  tracing?: RequestTracing | undefined;
}

export interface McpDoor {
  readonly deps: McpFrontDoorDependencies;
  /** The Streamable HTTP servers' targets (the aggregated endpoint opens its upstream sessions on them). */
  readonly upstreams: McpUpstreams;
  /** The server's transport: Streamable HTTP, or stdio child processes (loaded on first need). */
  transportFor(server: McpServerConfig): Promise<McpTransport>;
  readonly toolLabels: ToolLabels;
  /** What each server last listed (the MCP page, docs/mcp.md "Dashboard"). */
  readonly listedTools: ListedTools;
  readonly sessionGauge: SessionGauge;
  /** The exchange's session from the store (400 without the header, 404 unknown, expired or not the caller's). */
  session(exchange: McpExchange, header: string | string[] | undefined): Promise<void>;
  /** The upstream session is gone: the gateway's ends too, and the client is answered 404. */
  sessionLost(exchange: McpExchange): Promise<never>;
  /** A client gone mid-call: notifications/cancelled to the server. */
  cancel(exchange: McpExchange, requestId: JsonRpcId): void;
}
