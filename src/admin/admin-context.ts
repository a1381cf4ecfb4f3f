// What every admin API handler gets: the exchange, its request id, the caller, and the
// gateway's parts it may use.
import type { AgentUpstreamsSnapshot } from '../proxy/upstream-pools.js';
import type { A2aCard } from '../proxy/a2a/a2a-card.js';
import type { McpServerState } from '../mcp/mcp-server-state.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AdminAuditLog, AdminWriteOrigin } from '../audit/admin-audit-log.js';
import type { UsageSource } from '../audit/usage-report.js';
import type { Clock } from '../clock.js';
import type { GatewayConfig } from '../config/schema.js';
import { KeyService } from '../keys/key-service.js';
import { keyEventsOf } from '../keys/key-events.js';
import type { KeyStore } from '../keys/key-store.js';
import type { Logger } from '../logger.js';
import type { AdminActor } from './admin-auth.js';
import type { Notifier } from '../notifications/notifier.js';
import type { EventsView } from '../notifications/open-notifications.js';
import type { TokenRevocations } from '../auth/jwt/token-revocations.js';

export interface AdminApiDeps {
  /** The running config (a reload changes plans, agents and admin tokens). */
  config(): GatewayConfig;
  keyStore: KeyStore;
  usage: UsageSource;
  adminAudit: AdminAuditLog;
  clock: Clock;
  logger: Logger;
  /**
   * This process's view of every agent's runners (state, outstanding requests); absent where
   * the process holds no pools (a --workers primary: each worker keeps its own).
   */
  upstreams?: () => Record<string, AgentUpstreamsSnapshot>;
  /** The A2A agents' cards this process read (docs/a2a.md); absent where it reads none (a --workers primary). */
  a2aCards?: () => Record<string, A2aCard>;
  /**
   * Each MCP server this process fronts: its upstreams' state, the tools it last listed, its
   * counts (docs/mcp.md "Dashboard"); absent where the process has no MCP front door (no
   * mcp_servers at start, or a --workers primary: each worker keeps its own).
   */
  mcpServers?: () => Promise<Record<string, McpServerState>>;
  /** Publishes key lifecycle events (docs/notifications.md); absent or NO_NOTIFIER when no webhook is configured. */
  notifier?: Notifier | undefined;
  /** The webhook events and their delivery state (docs/admin-api.md "Events"); undefined when notifications are off. */
  events?: EventsView | undefined;
  /** Revoked JWT access tokens (docs/identity.md); undefined when auth.jwt names no issuer. */
  revocations?: TokenRevocations | undefined;
}

export interface AdminExchange {
  req: IncomingMessage;
  res: ServerResponse;
  url: URL;
  requestId: string;
  actor: AdminActor;
  deps: AdminApiDeps;
}

/**
 * The admin trail's request id and actor of this request: the admin token's name, or for a
 * person signed in through the identity provider `oidc:<email or sub>` with their `sub` and email.
 */
export function originOf(x: AdminExchange): AdminWriteOrigin {
  const { actor } = x;
  if (actor.sub === undefined) return { request_id: x.requestId, actor: actor.name };
  return { request_id: x.requestId, actor: actor.name, actor_sub: actor.sub, actor_email: actor.email ?? null };
}

/** A KeyService over the running config's plans and agents. */
export function keyServiceOf(exchange: AdminExchange): KeyService {
  const config = exchange.deps.config();
  return new KeyService({ store: exchange.deps.keyStore, config, clock: exchange.deps.clock, events: keyEventsOf(exchange.deps.notifier, config.notifications.keyExpiryWarningMs) });
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = `${JSON.stringify(body)}\n`;
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.setHeader('Cache-Control', 'no-store');
  res.end(text);
}
