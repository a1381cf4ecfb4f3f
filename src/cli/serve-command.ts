// `agent-gateway serve`: run the gateway and its admin listener until SIGTERM/SIGINT;
// SIGHUP reloads agents, plans and limits (an invalid file is refused, the old config kept),
// and the TLS certificate files of the listener and of HTTPS upstreams. The options are
// src/cli/commands/serve.ts.
// With `--workers N` (N > 1) this process becomes the cluster primary (cluster-primary.ts)
// and each forked worker runs the gateway (gateway-process.ts); worker 1, the admin worker,
// also serves the admin listener. Each role imports only its own module graph: the primary
// loads neither the config schema nor the request path (decisions 0099, 0112).
import { ListenError } from '../http/listen.js';
import { describeListenFailure } from './listen-failure.js';
import { currentWorkerIndex, parseWorkerCount } from './cluster-workers.js';
import type { ServeOptions } from './gateway-process.js';

export async function serveAction(options: ServeOptions): Promise<void> {
  const workers = parseWorkerCount(options.workers);
  if (workers === undefined) {
    process.stderr.write(`--workers must be a positive integer or "auto", got ${JSON.stringify(options.workers)}\n`);
    process.exitCode = 1;
    return;
  }
  const workerIndex = currentWorkerIndex();
  if (workerIndex === undefined && workers > 1) {
    await (await import('./cluster-primary.js')).runClusterPrimary({ workers });
    return;
  }
  try {
    await (await import('./gateway-process.js')).runGatewayProcess(options, workerIndex);
  } catch (error) {
    if (!(error instanceof ListenError)) throw error;
    // One line naming the listener and the setting (and variable) that picks its port.
    const line = `agent-gateway: ${await describeListenFailure(error, options.config)}`;
    // A worker's reaches the operator through the primary, which then exits 1.
    if (workerIndex !== undefined) await (await import('./cluster-ipc-worker.js')).reportStartFailure(line);
    else process.stderr.write(`${line}\n`);
    process.exit(1);
  }
}
