// The control plane of the admin listener (docs/admin-api.md): the admin API over a key store,
// its admin audit trail and the usage rollups' reader. Built by the process that serves the
// admin listener: a single gateway (src/gateway.ts) or a cluster's primary (cli/cluster-primary.ts),
// which must not load the request path to build it, so it is a file of its own.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { AdminAuditLog } from '../audit/admin-audit-log.js';
import { openAdminAuditBatches, openUsageSource } from '../audit/open-audit-log.js';
import type { Clock } from '../clock.js';
import type { GatewayConfig } from '../config/schema.js';
import type { KeyStore } from '../keys/key-store.js';
import type { Logger } from '../logger.js';
import type { EventsView } from '../notifications/open-notifications.js';
import type { Notifier } from '../notifications/notifier.js';
import type { RedisClient } from '../redis/redis-client.js';
import { openTokenRevocations } from '../auth/create-authenticator.js';
import type { TokenRevocations } from '../auth/jwt/token-revocations.js';
import { createAdminApi } from './admin-api.js';
import type { AdminApiDeps } from './admin-context.js';

export interface ControlPlane {
  /** The admin listener's handler for /admin/v1, /openapi and /dashboard. */
  api: (req: IncomingMessage, res: ServerResponse, url: URL) => Promise<void>;
  /** Flushes the admin audit trail. */
  close(): Promise<void>;
}

/** The admin API over `keyStore`, reading the config `currentConfig` returns (a reload changes it). */
export function openControlPlane(
  currentConfig: () => GatewayConfig,
  deps: {
    keyStore: KeyStore;
    redis: RedisClient | undefined;
    /** The audit sinks' own connection when audit.wait_replicas holds it in WAIT; default `redis`. */
    auditRedis?: RedisClient | undefined;
    logger: Logger;
    clock: Clock;
    upstreams?: AdminApiDeps['upstreams'];
    a2aCards?: AdminApiDeps['a2aCards'];
    mcpServers?: AdminApiDeps['mcpServers'];
    notifier?: Notifier;
    events?: EventsView | undefined;
    /** The revocations the request path reads; opened here (and closed with the control plane) when not given. */
    revocations?: TokenRevocations | undefined;
  },
): ControlPlane {
  const config = currentConfig();
  const ownRevocations = deps.revocations === undefined && config.auth.jwt.length > 0 ? openTokenRevocations(config, { clock: deps.clock, logger: deps.logger, redisClient: deps.redis }) : undefined;
  const revocations = deps.revocations ?? ownRevocations;
  const adminAudit = new AdminAuditLog(openAdminAuditBatches(config, { redis: deps.auditRedis ?? deps.redis, logger: deps.logger, clock: deps.clock }), deps.clock);
  const api = createAdminApi({
    config: currentConfig,
    keyStore: deps.keyStore,
    usage: openUsageSource(config, deps.redis),
    adminAudit,
    clock: deps.clock,
    logger: deps.logger,
    upstreams: deps.upstreams,
    a2aCards: deps.a2aCards,
    mcpServers: deps.mcpServers,
    notifier: deps.notifier,
    events: deps.events,
    revocations,
  });
  return {
    api,
    close: async () => {
      await ownRevocations?.close();
      await adminAudit.close();
    },
  };
}
