// One gateway process of `agent-gateway serve` (serve-command.ts): the whole instance, or one
// cluster worker; worker 1, the admin worker, also serves the admin listener for the whole
// instance (decision 0112), the others have none. A worker validates the config itself (the
// primary reads none) and tells the primary what it needs over IPC (cluster-ipc-worker.ts). SIGHUP reloads the config file (an invalid file is
// refused, the old config kept) and the TLS certificate files; SIGTERM/SIGINT drain and stop.
import type { Server } from 'node:http';
import { ConfigError, loadConfig } from '../config/load-config.js';
import type { GatewayConfig } from '../config/schema.js';
import { createLogger, flushLogger, wantsPrettyLogs, type Logger } from '../logger.js';
import { answerMetricsRequests, askPrimary, reportListening, reportSettings, reportStartFailure } from './cluster-ipc-worker.js';
import { withWorkerPaths } from './cluster-workers.js';
import { DEMO_ADMIN_TOKEN_FILE, ensureDemoAdminToken, withDemoAdminToken } from './demo-admin-token.js';
import { createDemoKeyIfEmpty, dashboardBanner, startDemoUpstream } from './demo-setup.js';
import { startGateway, type RunningGateway } from '../gateway.js';
import { applyHeapFlags } from './v8-heap-flags.js';
import type { WorkerSettings } from './cluster-messages.js';

export interface ServeOptions {
  config: string;
  demo?: boolean;
  workers: string;
}

/** Config sections a reload cannot apply: their listeners, clients and files are already open. */
const RESTART_ONLY_SECTIONS = ['listen', 'admin', 'redis', 'keys', 'audit', 'telemetry', 'notifications', 'auth'] as const;

/** One gateway process: the whole instance, or one cluster worker (no admin listener). */
export async function runGatewayProcess(options: ServeOptions, workerIndex: number | undefined): Promise<void> {
  // Before any request has run, so V8 never pretenures the request path (decision 0010).
  const v8Flags = applyHeapFlags();
  if (workerIndex !== undefined) answerMetricsRequests(workerIndex);
  // Signal handlers go in before anything slow: SIGHUP's default action kills the process,
  // and a signal that arrives while starting is acted on once the gateway is up.
  let gateway: RunningGateway | undefined;
  let logger: Logger | undefined;
  let demoAgent: Server | undefined;
  let pendingReload = false;
  let pendingStop: NodeJS.Signals | undefined;
  let reloading = Promise.resolve();
  const onReload = (): void => {
    if (!gateway || !logger) {
      pendingReload = true;
      return;
    }
    // One reload at a time, in signal order, so a slow read cannot overwrite a newer one.
    const [running, log] = [gateway, logger];
    reloading = reloading.then(() => reloadConfig(options.config, workerIndex, running, log, prepare));
  };
  const onStop = (signal: NodeJS.Signals): void => {
    if (!gateway || !logger) {
      pendingStop ??= signal;
      return;
    }
    stopGateway(signal, gateway, logger, demoAgent);
  };
  process.on('SIGHUP', onReload);
  process.on('SIGTERM', () => onStop('SIGTERM'));
  process.on('SIGINT', () => onStop('SIGINT'));

  let config: GatewayConfig;
  try {
    config = withWorkerPaths(await loadConfig(options.config), workerIndex);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    return refuseToStart(error.message, workerIndex);
  }
  const refusal = workerIndex === undefined ? undefined : clusterRefusal(config);
  if (refusal !== undefined) return refuseToStart(refusal, workerIndex);
  // The process that serves the admin listener: the single gateway, or a cluster's admin worker.
  const servesAdmin = (workerIndex ?? 1) === 1;
  // The demo's dashboard sign-in (demo-admin-token.ts), also applied to every reload.
  const demoAdminToken = options.demo && servesAdmin && config.admin.tokens.length === 0 ? await ensureDemoAdminToken() : undefined;
  const prepare = (loaded: GatewayConfig): GatewayConfig => (demoAdminToken === undefined ? loaded : withDemoAdminToken(loaded, demoAdminToken));
  config = prepare(config);
  logger = createLogger({
    level: config.log.level,
    file: config.log.file,
    pretty: wantsPrettyLogs(process.stdout.isTTY),
    base: workerIndex === undefined ? undefined : { worker: workerIndex },
  });
  // In a cluster the admin worker runs the demo agent (one port); each worker only talks to it.
  demoAgent = options.demo && servesAdmin ? await startDemoUpstream(config) : undefined;
  const instance = workerIndex === 1 ? askPrimary() : undefined;
  const running = await startGateway(config, {
    logger,
    admin: servesAdmin,
    instance: instance && {
      metricsText: instance.metricsText,
      readiness: async () => {
        const { listening, stopping } = await instance.status();
        if (stopping) return { ready: false, reason: 'draining' };
        return listening > 0 ? { ready: true } : { ready: false, reason: 'no worker listening' };
      },
      othersStopped: instance.othersStopped,
    },
  });
  gateway = running;
  const mode = config.redis ? 'redis' : 'embedded';
  if (workerIndex === undefined) {
    logger.info({ port: running.port, admin_port: running.adminPort, mode, agents: [...config.agents.keys()], v8_flags: v8Flags }, 'gateway listening');
    process.stderr.write(`agent-gateway listening on ${config.listen.tls ? 'https' : 'http'}://${config.listen.host}:${running.port} (admin :${running.adminPort}, ${mode} mode)\n`);
    if (demoAgent) process.stderr.write(`demo agent listening on ${config.agents.get('demo')?.upstream}\n`);
  } else {
    logger.info({ port: running.port, mode, agents: [...config.agents.keys()], v8_flags: v8Flags, node_args: process.execArgv, malloc_arena_max: process.env.MALLOC_ARENA_MAX ?? null }, 'worker listening');
    reportListening({
      ...settingsOf(config),
      port: running.port,
      adminPort: running.adminPort ?? null,
      host: config.listen.host,
      tls: config.listen.tls !== undefined,
      mode,
      demoAgentUrl: demoAgent ? (config.agents.get('demo')?.upstream ?? null) : null,
    });
  }
  if (pendingStop) return onStop(pendingStop);
  if (pendingReload) onReload();
  if (options.demo && (workerIndex ?? 1) === 1) {
    const banner = await createDemoKeyIfEmpty(config, running.keyStore, running.port);
    if (banner) process.stdout.write(`${banner}\n`);
    if (running.adminPort !== undefined) {
      process.stdout.write(`${dashboardBanner({ config, configPath: options.config, adminPort: running.adminPort, demoAdminToken, demoAdminTokenFile: DEMO_ADMIN_TOKEN_FILE })}\n`);
    }
  }
}

/** What a cluster's primary needs of the config a worker runs (it reads none itself). */
function settingsOf(config: GatewayConfig): WorkerSettings {
  return { shutdownGraceMs: config.shutdownGraceMs, logLevel: config.log.level, logFile: config.log.file ?? null };
}

/** What only a cluster refuses; undefined when the config can run as a cluster's worker. */
function clusterRefusal(config: GatewayConfig): string | undefined {
  // Two ways of sharing a port in one deployment: the primary hands its workers one socket
  // anyway, so reuse_port would only mislead (docs/operations.md).
  if (config.listen.reusePort) return 'listen.reuse_port runs several standalone instances on one port; it cannot be combined with serve --workers (set one or the other)';
  // Embedded limits live in one process's memory: N workers would each allow the full limit.
  if (!config.redis) return 'serve --workers needs a redis block (or REDIS_URL): embedded-mode rate limits are per process';
  return undefined;
}

/** A config that cannot run: said on stderr, or by a worker to the primary, which says it and exits 1. */
async function refuseToStart(text: string, workerIndex: number | undefined): Promise<never> {
  if (workerIndex === undefined) process.stderr.write(`${text}\n`);
  else await reportStartFailure(text);
  process.exit(1);
}

async function reloadConfig(
  path: string,
  workerIndex: number | undefined,
  gateway: RunningGateway,
  logger: Logger,
  prepare: (config: GatewayConfig) => GatewayConfig,
): Promise<void> {
  let next: GatewayConfig;
  try {
    next = prepare(withWorkerPaths(await loadConfig(path), workerIndex));
  } catch (error) {
    const problems = error instanceof ConfigError ? error.problems : [error instanceof Error ? error.message : String(error)];
    logger.error({ config: path, problems }, 'config reload refused; keeping the running config');
    return;
  }
  const current = gateway.runtime.current.config;
  // Admin tokens apply on reload (the admin API reads the running config); its address does not.
  const restartPart = (config: GatewayConfig, section: (typeof RESTART_ONLY_SECTIONS)[number]) =>
    JSON.stringify(section === 'admin' ? { host: config.admin.host, port: config.admin.port } : config[section]);
  const needRestart: string[] = RESTART_ONLY_SECTIONS.filter((section) => restartPart(current, section) !== restartPart(next, section));
  if (current.log.file !== next.log.file) needRestart.push('log.file');
  try {
    gateway.reload(next);
  } catch (error) {
    // An agent's TLS files that cannot be read: nothing was swapped.
    logger.error({ config: path, problems: [error instanceof Error ? error.message : String(error)] }, 'config reload refused; keeping the running config');
    return;
  }
  logger.level = next.log.level;
  if (workerIndex !== undefined) reportSettings(settingsOf(next));
  logger.info(
    { config: path, agents: [...next.agents.keys()], plans: [...next.plans.keys()], ...(needRestart.length > 0 ? { restart_needed_for: needRestart } : {}) },
    'config reloaded',
  );
}

let stopping = false;

function stopGateway(signal: NodeJS.Signals, gateway: RunningGateway, logger: Logger, demoAgent: Server | undefined): void {
  if (stopping) return;
  stopping = true;
  // shutdown_grace is read from the running config, so a reload can change it.
  const graceMs = gateway.runtime.current.config.shutdownGraceMs;
  logger.info({ signal, grace_ms: graceMs }, 'shutting down');
  void gateway
    .close(graceMs)
    .then(
      () => 0,
      (error: unknown) => {
        logger.error({ err: error instanceof Error ? { message: error.message } : error }, 'error while shutting down');
        return 1;
      },
    )
    .then(async (code) => {
      // The demo agent goes last: the gateway's streams in flight are still reading from it.
      if (demoAgent) {
        const closed = new Promise<void>((resolve) => demoAgent.close(() => resolve()));
        demoAgent.closeAllConnections();
        await closed;
      }
      logger.info({ exit_code: code }, 'stopped');
      await flushLogger(logger);
      process.exit(code);
    });
}
