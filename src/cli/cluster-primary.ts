// `serve --workers N` (N > 1): the primary process. It forks N gateway workers that share the
// public port (node:cluster hands out connections), owns the admin listener (/metrics gathers
// every worker, /readyz answers for the instance), replaces workers that die, and forwards
// SIGHUP (reload) and SIGTERM/SIGINT (graceful stop) to them. It serves no traffic itself.
import { listen } from '../http/listen.js';
import cluster, { type Worker } from 'node:cluster';
import type { AddressInfo } from 'node:net';
import { ConfigError, loadConfig } from '../config/load-config.js';
import type { GatewayConfig } from '../config/schema.js';
import { createAdminServer } from '../admin/admin-server.js';
import { createLogger, flushLogger, wantsPrettyLogs, type Logger } from '../logger.js';
import { clusterMetricsSource } from '../metrics/cluster-metrics.js';
import { WORKER_INDEX_ENV } from './cluster-workers.js';
import { primaryHeapFlagsToSet, workerEnvironment, workerExecArgv } from './worker-runtime.js';
import { setFlagsFromString } from 'node:v8';
import { startDemoUpstream } from './demo-setup.js';
import { createRedisClient, createRedisClientFactory, redisIsReachable } from '../redis/redis-client.js';
import { openControlPlane } from '../admin/control-plane.js';
import { openKeyStore } from '../keys/open-key-store.js';
import { openNotifications } from '../notifications/open-notifications.js';
import { systemClock } from '../clock.js';

export interface ClusterPrimaryOptions {
  configPath: string;
  workers: number;
  demo: boolean;
}

/** A replaced worker waits this long before it is forked again, so a crash loop cannot spin. */
const RESPAWN_DELAY_MS = 1_000;
/** Workers get their own shutdown_grace plus this before the primary kills what is left. */
const STOP_MARGIN_MS = 10_000;

export async function runClusterPrimary(options: ClusterPrimaryOptions): Promise<void> {
  for (const flag of primaryHeapFlagsToSet(process.execArgv, process.env.NODE_OPTIONS)) setFlagsFromString(flag);
  let config: GatewayConfig;
  try {
    config = await loadConfig(options.configPath);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exitCode = 1;
    return;
  }
  if (config.listen.reusePort) {
    // Two ways of sharing a port in one deployment: the primary would hand its workers one
    // socket anyway, so reuse_port would only mislead (docs/operations.md).
    process.stderr.write('listen.reuse_port runs several standalone instances on one port; it cannot be combined with serve --workers (set one or the other)\n');
    process.exitCode = 1;
    return;
  }
  if (!config.redis) {
    // Embedded limits live in one process's memory: N workers would each allow the full limit.
    process.stderr.write('serve --workers needs a redis block (or REDIS_URL): embedded-mode rate limits are per process\n');
    process.exitCode = 1;
    return;
  }
  const logger = createLogger({ level: config.log.level, file: config.log.file, pretty: wantsPrettyLogs(process.stdout.isTTY), base: { role: 'primary' } });
  const demoAgent = options.demo ? await startDemoUpstream(config) : undefined;
  const redis = createRedisClient(config.redis, logger, 'agentgw-primary');
  const supervisor = new WorkerSupervisor(options.workers, logger);
  // The admin API lives on the admin listener, so on the primary; it reads the config the
  // workers run (a SIGHUP reload changes plans, agents and admin tokens here too).
  let current = config;
  const keyStore = await openKeyStore(config, { logger, subscribe: true, redis: createRedisClientFactory(config.redis, logger) });
  // The admin API's key events and the events list; the workers deliver (docs/notifications.md).
  const notifications = await openNotifications(config.notifications, { redis, redisPrefix: config.redis.prefix, logger, clock: systemClock, deliver: false });
  const controlPlane = await openControlPlane(() => current, { keyStore, redis, logger, clock: systemClock, notifier: notifications.notifier, events: notifications.events });

  let draining = false;
  const admin = createAdminServer({
    api: controlPlane.api,
    metricsText: clusterMetricsSource(),
    hosts: () => current.admin.hosts,
    readiness: async () => {
      if (draining) return { ready: false, reason: 'draining' };
      if (supervisor.listeningCount === 0) return { ready: false, reason: 'no worker listening' };
      if (!(await redisIsReachable(redis))) return { ready: false, reason: 'redis unreachable' };
      return { ready: true };
    },
  });
  const adminPort = await listen(admin, config.admin.port, config.admin.host, { listener: 'admin' });

  // Workers may get a new shutdown_grace on reload; the primary's stop deadline follows it.
  let graceMs = config.shutdownGraceMs;
  process.on('SIGHUP', () => {
    logger.info({ workers: supervisor.liveCount }, 'SIGHUP: workers reload the config file');
    supervisor.signalAll('SIGHUP');
    loadConfig(options.configPath).then(
      (next) => {
        graceMs = next.shutdownGraceMs;
        current = next;
      },
      () => undefined, // each worker logs why the file was refused
    );
  });
  let stopping = false;
  const stop = (signal: NodeJS.Signals): void => {
    if (stopping) return;
    stopping = true;
    draining = true;
    logger.info({ signal, grace_ms: graceMs }, 'shutting down');
    void supervisor
      .stop(signal, graceMs + STOP_MARGIN_MS)
      .then(async (clean) => {
        await new Promise<void>((resolve) => {
          admin.close(() => resolve());
          admin.closeAllConnections();
        });
        await controlPlane.close();
        await notifications.close();
        await keyStore.close();
        await redis.quit().catch(() => redis.disconnect());
        if (demoAgent) {
          const closed = new Promise<void>((resolve) => demoAgent.close(() => resolve()));
          demoAgent.closeAllConnections();
          await closed;
        }
        logger.info({ clean }, 'stopped');
        await flushLogger(logger);
        process.exit(clean ? 0 : 1);
      });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));

  let started: { port: number };
  try {
    started = await supervisor.start();
  } catch (error) {
    logger.error({ err: { message: (error as Error).message } }, 'workers failed to start');
    process.stderr.write(`agent-gateway: ${(error as Error).message}\n`);
    await supervisor.stop('SIGTERM', STOP_MARGIN_MS);
    admin.close();
    admin.closeAllConnections();
    redis.disconnect();
    demoAgent?.close();
    demoAgent?.closeAllConnections();
    await flushLogger(logger);
    process.exit(1);
  }
  logger.info({ port: started.port, admin_port: adminPort, mode: 'redis', workers: options.workers }, 'gateway listening');
  process.stderr.write(
    `agent-gateway listening on ${config.listen.tls ? 'https' : 'http'}://${config.listen.host}:${started.port} (admin :${adminPort}, redis mode, ${options.workers} workers)\n`,
  );
  if (demoAgent) process.stderr.write(`demo agent listening on ${config.agents.get('demo')?.upstream}\n`);
}

/** The N workers: forks them, replaces the ones that die, signals and stops them. */
class WorkerSupervisor {
  private readonly byIndex = new Map<number, Worker>();
  private readonly listening = new Set<Worker>();
  private stopping = false;
  private everListened = false;

  constructor(private readonly count: number, private readonly logger: Logger) {}

  get listeningCount(): number {
    return this.listening.size;
  }

  get liveCount(): number {
    return this.byIndex.size;
  }

  /** Forks every worker; resolves with the shared port once all listen, rejects if one dies first. */
  start(): Promise<{ port: number }> {
    return new Promise((resolve, reject) => {
      let port = 0;
      cluster.on('listening', (worker, address: AddressInfo | { port: number }) => {
        this.listening.add(worker);
        port ||= address.port;
        if (!this.everListened && this.listening.size === this.count) {
          this.everListened = true;
          resolve({ port });
        }
      });
      cluster.on('exit', (worker, code, signal) => {
        this.listening.delete(worker);
        const index = this.indexOf(worker);
        if (index === undefined) return;
        this.byIndex.delete(index);
        if (this.stopping) return;
        if (!this.everListened) {
          reject(new Error(`worker ${index} exited during startup (code ${code}, signal ${signal})`));
          return;
        }
        this.logger.error({ worker: index, pid: worker.process.pid, code, signal }, 'worker died; replacing it');
        setTimeout(() => {
          if (!this.stopping) this.fork(index);
        }, RESPAWN_DELAY_MS).unref();
      });
      for (let index = 1; index <= this.count; index++) this.fork(index);
    });
  }

  signalAll(signal: NodeJS.Signals): void {
    // Only workers that listen have their signal handlers in place; one still starting reads
    // the file as it starts anyway.
    for (const worker of this.listening) worker.process.kill(signal);
  }

  /** Forwards the stop signal; kills whatever is left after `deadlineMs`. True when all exited 0. */
  stop(signal: NodeJS.Signals, deadlineMs: number): Promise<boolean> {
    this.stopping = true;
    const workers = [...this.byIndex.values()];
    let clean = true;
    const exits = workers.map(
      (worker) =>
        new Promise<void>((resolve) => {
          if (worker.process.exitCode !== null || worker.process.signalCode !== null) {
            clean &&= worker.process.exitCode === 0;
            resolve();
            return;
          }
          worker.process.once('exit', (code) => {
            clean &&= code === 0;
            resolve();
          });
        }),
    );
    for (const worker of workers) worker.process.kill(signal);
    const killer = setTimeout(() => {
      for (const worker of workers) if (worker.process.exitCode === null) worker.process.kill('SIGKILL');
    }, deadlineMs);
    return Promise.all(exits).then(() => {
      clearTimeout(killer);
      return clean;
    });
  }

  private fork(index: number): void {
    // Start-time settings for a process that holds streams (worker-runtime.ts).
    cluster.setupPrimary({ execArgv: workerExecArgv(process.execArgv, process.env.NODE_OPTIONS) });
    const worker = cluster.fork({ ...workerEnvironment(process.env), [WORKER_INDEX_ENV]: String(index) });
    this.byIndex.set(index, worker);
  }

  private indexOf(worker: Worker): number | undefined {
    for (const [index, candidate] of this.byIndex) if (candidate === worker) return index;
    return undefined;
  }
}

