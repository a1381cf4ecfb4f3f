// The composition root (docs/design.md, "Layout": the only place that chooses implementations):
// builds the Redis connections, stores, limiter, audit log and servers from the config, and
// tears them down.
import { listen } from './http/listen.js';
import { openAuditLog } from './audit/open-audit-log.js';
import { openControlPlane } from './admin/control-plane.js';
import { createAuthenticator } from './auth/create-authenticator.js';
import type { KeyStore } from './keys/key-store.js';
import { openKeyStore } from './keys/open-key-store.js';
import { systemClock, type Clock } from './clock.js';
import type { GatewayConfig } from './config/schema.js';
import type { Logger } from './logger.js';
import { createAdminServer, registryMetrics, type AdminOptions } from './admin/admin-server.js';
import { createGatewayServer, type GatewayServer } from './http/gateway-server.js';
import { startEventProducers } from './http/event-producers.js';
import { GatewayRuntime } from './http/gateway-runtime.js';
import { CertificateReloader, readListenTls, type SecureContextTarget } from './http/tls-certificates.js';
import { registry } from './metrics/metrics.js';
import { FailoverRateLimiter } from './ratelimit/failover-rate-limiter.js';
import { MemoryRateLimiter } from './ratelimit/memory-rate-limiter.js';
import { RedisRateLimiter } from './ratelimit/redis-rate-limiter.js';
import type { RateLimiter } from './ratelimit/rate-limiter.js';
import { openNotifications } from './notifications/open-notifications.js';
import type { Notifier } from './notifications/notifier.js';

/** How long a starting gateway waits for Redis before it serves without it. */
const REDIS_START_WAIT_MS = 2_000;

export interface StartGatewayOptions {
  logger: Logger;
  clock?: Clock;
  /** Serve /metrics, /healthz, /readyz (default true). */
  admin?: boolean;
  /** Tests: where events go instead of the configured webhooks' outbox (a recording double). */
  notifier?: Notifier | undefined;
  /**
   * A cluster's admin worker (`serve --workers`, worker 1): /metrics serves every worker's
   * registry and /readyz also asks the primary about the instance (cli/cluster-ipc-worker.ts).
   */
  instance?: {
    metricsText: AdminOptions['metricsText'];
    readiness(): Promise<{ ready: boolean; reason?: string }>;
    /** On close: resolves once the other workers have stopped, so /readyz answers (503) until the instance is gone. */
    othersStopped(): Promise<void>;
  };
}

export interface RunningGateway {
  port: number;
  adminPort: number | undefined;
  keyStore: KeyStore;
  gateway: GatewayServer;
  runtime: GatewayRuntime;
  /** Publishes webhook events (docs/notifications.md); NO_NOTIFIER when no webhook is configured. */
  notifier: Notifier;
  /**
   * Applies a new config's agents, plans and limits without dropping connections, and reads
   * the listener's certificate files again; throws (changing nothing) when an agent's TLS
   * files cannot be read.
   */
  reload(config: GatewayConfig): void;
  /** Stops accepting, lets requests and streams finish up to the grace period, flushes audit. */
  close(graceMs?: number): Promise<void>;
}


export async function startGateway(config: GatewayConfig, options: StartGatewayOptions): Promise<RunningGateway> {
  const { logger } = options;
  const clock = options.clock ?? systemClock;
  // First: a certificate that cannot be read stops the start before anything is opened.
  const listenTls = config.listen.tls;
  const certificate = listenTls && (await readListenTls(listenTls));
  // The Redis client (ioredis) only when the config names a Redis: an embedded gateway loads
  // none of it (decision 0112).
  const redisModule = config.redis ? await import('./redis/redis-client.js') : undefined;
  const redisClients = config.redis && redisModule?.createRedisClientFactory(config.redis, logger);
  const redis = redisClients ? redisClients.connect('shared', 'agentgw') : undefined;
  if (redis && !(await redisModule!.waitForRedis(redis, REDIS_START_WAIT_MS))) {
    logger.warn({ wait_ms: REDIS_START_WAIT_MS }, 'redis not reachable at start; serving with the store-error fallbacks until it is');
  }

  // Webhooks (docs/notifications.md): an outbox connection of its own, so delivery's reads and
  // lease renewals never queue beside the request path's commands.
  const notificationsRedis = redisClients && config.notifications.webhooks.length > 0 ? redisClients.connect('webhooks', 'agentgw-webhooks') : undefined;
  const notifications = await openNotifications(config.notifications, { redis: notificationsRedis, redisPrefix: config.redis?.prefix ?? 'agentgw:', logger, clock });
  const notifier = options.notifier ?? notifications.notifier;

  const keyStore = await openKeyStore(config, { logger, subscribe: true, redis: redisClients });
  // A token's plan is looked up in the running config (`runtime`, made below, before any request) when it is verified.
  const { authenticator, revocations, mcpAuthorization } = await createAuthenticator(config, { store: keyStore, clock, logger, redisClient: redis, hasPlan: (plan) => runtime.current.config.plans.has(plan) });

  const memoryLimiter = new MemoryRateLimiter({ clock });
  const rateLimiter: RateLimiter = redis
    ? new FailoverRateLimiter({
        primary: new RedisRateLimiter({
          client: redis,
          prefix: config.redis!.prefix,
          commandTimeoutMs: config.redis!.commandTimeoutMs,
          leases: config.rateLimits.lease,
        }),
        fallback: memoryLimiter,
        mode: config.rateLimits.onStoreError,
        logger,
        clock,
      })
    : memoryLimiter;

  // WAIT holds its connection until the replicas answer: the audit sink then gets a
  // connection of its own, so the limiter's commands never queue behind it.
  const auditRedis = redisClients && (config.audit.redisStream || config.audit.adminRedisStream) && config.audit.waitReplicas > 0 ? redisClients.connect('shared', 'agentgw-audit') : redis;
  const auditLog = openAuditLog(config, { redis: auditRedis, logger, clock });
  const producers = startEventProducers(notifier, config.notifications, { keyStore, clock, logger });
  const runtime = new GatewayRuntime(config, { logger, clock, notifier });
  // Off (undefined) unless telemetry names a collector; only then is the OpenTelemetry SDK loaded.
  const tracing = config.telemetry.endpoint === undefined ? undefined : (await import('./telemetry/open-tracing.js')).openTracing(config.telemetry, logger);
  // The MCP front door (docs/mcp.md) only when mcp_servers names a server at start: otherwise no
  // request pays for its path check, and none of src/mcp/ is loaded (decision 0112).
  const mcp = config.mcpServers.size === 0
    ? undefined
    : (await import('./mcp/open-mcp-front-door.js')).openMcpFrontDoor(
        { runtime, authenticator, mcpAuthorization, rateLimiter, auditLog, logger, clock, tracing: tracing?.tracing },
        redis && redisClients && { client: redis, prefix: config.redis!.prefix, subscriber: () => redisClients.connect('subscriber', 'agentgw-mcp-sessions') },
      );
  const mcpFrontDoor = mcp?.frontDoor;
  const gateway = createGatewayServer(
    { runtime, authenticator, rateLimiter, auditLog, logger, clock, tracing: tracing?.tracing, budgetThresholds: producers.budgetThresholds },
    certificate,
    mcp && { owns: mcp.owns, handle: mcp.frontDoor.handle },
  );
  // The certificate files as they change (or on SIGHUP); the paths are the ones started with
  // (listen is a restart-only section).
  const certificates = listenTls && new CertificateReloader(listenTls, gateway.server as SecureContextTarget, logger);

  let draining = false;
  const controlPlane = options.admin === false ? undefined : await openControlPlane(() => runtime.current.config, {
        keyStore,
        redis,
        auditRedis,
        logger,
        clock,
        upstreams: () => runtime.pools.snapshot(),
        a2aCards: () => runtime.a2a?.cards.snapshot() ?? {},
        mcpServers: mcpFrontDoor && (() => mcpFrontDoor.state()),
        notifier,
        events: notifications.events,
        revocations,
      });
  const admin = options.admin === false
    ? undefined
    : createAdminServer({
        api: controlPlane?.api,
        metricsText: options.instance?.metricsText ?? registryMetrics(registry),
        upstreams: () => runtime.pools.snapshot(),
        hosts: () => runtime.current.config.admin.hosts,
        readiness: async () => {
          if (draining) return { ready: false, reason: 'draining' };
          if (redis && !(await redisModule!.redisIsReachable(redis))) return { ready: false, reason: 'redis unreachable' };
          return options.instance ? options.instance.readiness() : { ready: true };
        },
      });

  // An A2A agent's card decides how the gateway speaks to it: read before the first request.
  await runtime.cardsRead;
  const port = await listen(gateway.server, config.listen.port, config.listen.host, { reusePort: config.listen.reusePort, listener: 'gateway' });
  const adminPort = admin ? await listen(admin, config.admin.port, config.admin.host, { listener: 'admin' }) : undefined;

  let closing: Promise<void> | undefined;
  async function close(graceMs = config.shutdownGraceMs): Promise<void> {
    draining = true;
    const server = gateway.server;
    const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
    // server.close() only closes connections idle right now; a keep-alive connection whose
    // request finishes later would hold the drain for keep_alive_timeout. Answers from now on
    // say `Connection: close`, and connections that fall idle are swept.
    server.on('request', (_req, res) => {
      res.shouldKeepAlive = false;
    });
    gateway.closeIdle();
    const idleSweep = setInterval(() => gateway.closeIdle(), 100);
    // Requests and streams in flight get the grace period; streams still open then end with
    // a final `event: error` (shutting_down) rather than a cut connection.
    const graceTimer = setTimeout(() => {
      gateway.activeStreams.endAll('shutting_down');
      setTimeout(() => gateway.closeAll(), 1_000).unref();
    }, graceMs);
    graceTimer.unref();
    await stopped;
    clearTimeout(graceTimer);
    clearInterval(idleSweep);
    certificates?.close();
    await authenticator.close();
    await auditLog.close();
    await tracing?.shutdown();
    await controlPlane?.close();
    await rateLimiter.close();
    await producers.close();
    await keyStore.close();
    await runtime.close();
    await mcpFrontDoor?.close();
    // After everything that publishes has stopped: what they published reaches the outbox.
    await notifications.close();
    if (admin) {
      await options.instance?.othersStopped();
      // A scraper's keep-alive connection must not hold the exit.
      const adminClosed = new Promise<void>((resolve) => admin.close(() => resolve()));
      admin.closeAllConnections();
      await adminClosed;
    }
    if (notificationsRedis) await notificationsRedis.quit().catch(() => notificationsRedis.disconnect());
    if (auditRedis && auditRedis !== redis) await auditRedis.quit().catch(() => auditRedis.disconnect());
    if (redis) await redis.quit().catch(() => redis.disconnect());
  }

  return {
    port,
    adminPort,
    keyStore,
    gateway,
    runtime,
    notifier,
    reload: (next) => {
      runtime.reload(next);
      mcpFrontDoor?.reload(next);
      void certificates?.reload();
    },
    close: (graceMs) => (closing ??= close(graceMs)),
  };
}
