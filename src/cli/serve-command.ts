// `agent-gateway serve`: run the gateway and its admin listener until SIGTERM/SIGINT;
// SIGHUP reloads agents, plans and limits (an invalid file is refused, the old config kept),
// and the TLS certificate files of the listener and of HTTPS upstreams.
// With `--workers N` (N > 1) this process becomes the cluster primary (cluster-primary.ts)
// and each forked worker runs the gateway (gateway-process.ts) without an admin listener.
// Each role imports only its own module graph: the primary never loads the request path
// (decision 0099).
import type { Command } from 'commander';
import { DEFAULT_CONFIG_PATH } from '../config/load-config.js';
import { ListenError } from '../http/listen.js';
import { describeListenFailure } from './listen-failure.js';
import { currentWorkerIndex, parseWorkerCount } from './cluster-workers.js';
import type { ServeOptions } from './gateway-process.js';

export function registerServeCommand(program: Command): void {
  program
    .command('serve')
    .description('run the gateway and its admin listener')
    .option('--config <path>', 'config file', DEFAULT_CONFIG_PATH)
    .option('--demo', 'also run the demo agent and create a demo key when the store is empty (npm start)')
    .option('--workers <n>', 'gateway processes sharing the port: a number, or "auto" for one per CPU core', '1')
    .action(async (options: ServeOptions) => {
      const workers = parseWorkerCount(options.workers);
      if (workers === undefined) {
        process.stderr.write(`--workers must be a positive integer or "auto", got ${JSON.stringify(options.workers)}\n`);
        process.exitCode = 1;
        return;
      }
      const workerIndex = currentWorkerIndex();
      try {
        if (workerIndex === undefined && workers > 1) await (await import('./cluster-primary.js')).runClusterPrimary({ configPath: options.config, workers, demo: options.demo === true });
        else await (await import('./gateway-process.js')).runGatewayProcess(options, workerIndex);
      } catch (error) {
        if (!(error instanceof ListenError)) throw error;
        // One line naming the listener and the setting (and variable) that picks its port.
        process.stderr.write(`agent-gateway: ${await describeListenFailure(error, options.config)}\n`);
        process.exit(1);
      }
    });
}

