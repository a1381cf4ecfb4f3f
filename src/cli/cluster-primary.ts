// `serve --workers N` (N > 1): the primary process. It forks N gateway workers that share the
// public port (node:cluster hands out connections), replaces workers that die, forwards SIGHUP
// (reload) and SIGTERM/SIGINT (graceful stop) to them, and relays the admin worker's questions
// (cluster-admin-relay.ts). It serves no traffic and no admin listener, and reads no config:
// worker 1, the admin worker, serves the admin listener and the control plane; each worker
// validates the config and tells the primary what it needs — its port, shutdown_grace, the log
// settings — or why it cannot start (decision 0112). So this process loads node:cluster,
// commander and a line writer (primary-log.ts), not pino, the config schema, ioredis,
// prom-client or the request path.
import { setFlagsFromString } from 'node:v8';
import { wantsPrettyLogs } from '../log-format.js';
import { relayAdminRequests } from './cluster-admin-relay.js';
import type { WorkerListening, WorkerSettings } from './cluster-messages.js';
import { WorkerStartError, WorkerSupervisor } from './cluster-supervisor.js';
import { createPrimaryLog, type PrimaryLog } from './primary-log.js';
import { primaryHeapFlagsToSet } from './worker-runtime.js';

export interface ClusterPrimaryOptions {
  workers: number;
}

/** Workers get their own shutdown_grace plus this before the primary kills what is left. */
const STOP_MARGIN_MS = 10_000;
/** shutdown_grace's default (config/schema.ts), for a stop before any worker has said its own. */
const DEFAULT_GRACE_MS = 30_000;

export async function runClusterPrimary(options: ClusterPrimaryOptions): Promise<void> {
  for (const flag of primaryHeapFlagsToSet(process.execArgv, process.env.NODE_OPTIONS)) setFlagsFromString(flag);
  // The primary's own log lines follow the config the workers run; none are written before
  // the first worker listens (a start that fails says why on stderr).
  let logger: PrimaryLog | undefined;
  let graceMs = DEFAULT_GRACE_MS;
  const applySettings = (settings: WorkerSettings): void => {
    graceMs = settings.shutdownGraceMs;
    if (logger) logger.level = settings.logLevel;
    else logger = createPrimaryLog({ level: settings.logLevel, file: settings.logFile ?? undefined, pretty: wantsPrettyLogs(process.stdout.isTTY) });
  };
  let first: WorkerListening | undefined;
  let adminPort: number | null = null;
  let demoAgentUrl: string | null = null;
  let stopping = false;
  const supervisor = new WorkerSupervisor(options.workers, {
    listening: (index, worker, listening) => {
      applySettings(listening);
      first ??= listening;
      demoAgentUrl ??= listening.demoAgentUrl;
      if (listening.adminPort === null) return;
      // The admin worker's replacement brings the admin port back (docs/operations.md).
      if (adminPort !== null) logger?.info({ worker: index, pid: worker.process.pid, admin_port: listening.adminPort }, 'admin listener back');
      adminPort = listening.adminPort;
    },
    settings: applySettings,
    replacementRefused: (text) => logger?.error({ problems: [text] }, 'a replacement worker could not start'),
    died: (index, pid, code, signal) => {
      logger?.error({ worker: index, pid, code, signal, ...(index === 1 ? { admin_listener: 'down until worker 1 is back' } : {}) }, 'worker died; replacing it');
    },
  });
  relayAdminRequests(supervisor, () => stopping);

  process.on('SIGHUP', () => {
    logger?.info({ workers: supervisor.liveCount }, 'SIGHUP: workers reload the config file');
    // Each worker reloads; each tells the primary its new shutdown_grace and log level.
    supervisor.signalAll('SIGHUP');
  });
  const stop = (signal: NodeJS.Signals): void => {
    if (stopping) return;
    stopping = true;
    logger?.info({ signal, grace_ms: graceMs }, 'shutting down');
    void supervisor.stop(signal, graceMs + STOP_MARGIN_MS).then(async (clean) => {
      if (logger) {
        logger.info({ clean }, 'stopped');
        await logger.flush();
      }
      process.exit(clean ? 0 : 1);
    });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));

  try {
    await supervisor.start();
  } catch (error) {
    if (!(error instanceof WorkerStartError)) throw error;
    // The worker's own words: a config check's problems, or the listener that cannot bind.
    process.stderr.write(`${error.message}\n`);
    stopping = true;
    await supervisor.stop('SIGTERM', STOP_MARGIN_MS);
    if (logger) await logger.flush();
    process.exit(1);
  }
  const started = first!;
  logger?.info({ port: started.port, admin_port: adminPort, mode: started.mode, workers: options.workers }, 'gateway listening');
  process.stderr.write(`agent-gateway listening on ${started.tls ? 'https' : 'http'}://${started.host}:${started.port} (admin :${adminPort}, ${started.mode} mode, ${options.workers} workers)\n`);
  if (demoAgentUrl !== null) process.stderr.write(`demo agent listening on ${demoAgentUrl}\n`);
}
