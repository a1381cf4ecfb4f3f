// `agent-gateway serve`: run the gateway and its admin listener until SIGTERM/SIGINT;
// SIGHUP reloads agents, plans and limits (an invalid file is refused, the old config kept).
import type { Command } from 'commander';
import { ConfigError, DEFAULT_CONFIG_PATH, loadConfig } from '../config/load-config.js';
import { createLogger } from '../logger.js';
import { createDemoKeyIfEmpty, startDemoUpstream } from './demo-setup.js';
import { startGateway } from './start-gateway.js';

interface ServeOptions {
  config: string;
  demo?: boolean;
}

export function registerServeCommand(program: Command): void {
  program
    .command('serve')
    .description('run the gateway and its admin listener')
    .option('--config <path>', 'config file', DEFAULT_CONFIG_PATH)
    .option('--demo', 'also run the demo agent and create a demo key when the store is empty (npm start)')
    .action(async (options: ServeOptions) => {
      let config;
      try {
        config = await loadConfig(options.config);
      } catch (error) {
        if (!(error instanceof ConfigError)) throw error;
        process.stderr.write(`${error.message}\n`);
        process.exitCode = 1;
        return;
      }
      const logger = createLogger({ level: config.log.level, file: config.log.file });
      const demoAgent = options.demo ? await startDemoUpstream(config) : undefined;
      const gateway = await startGateway(config, { logger });
      const mode = config.redis ? 'redis' : 'embedded';
      logger.info({ port: gateway.port, admin_port: gateway.adminPort, mode, agents: [...config.agents.keys()] }, 'gateway listening');
      process.stderr.write(`agent-gateway listening on http://${config.listen.host}:${gateway.port} (admin :${gateway.adminPort}, ${mode} mode)\n`);
      if (demoAgent) {
        process.stderr.write(`demo agent listening on ${config.agents.get('demo')?.upstream}\n`);
        const banner = await createDemoKeyIfEmpty(config, gateway.keyStore, gateway.port);
        if (banner) process.stdout.write(`${banner}\n`);
      }

      process.on('SIGHUP', () => {
        loadConfig(options.config)
          .then((next) => {
            gateway.reload(next);
            logger.info({ agents: [...next.agents.keys()], plans: [...next.plans.keys()] }, 'config reloaded');
          })
          .catch((error: unknown) => {
            logger.error({ err: error instanceof Error ? { message: error.message } : error }, 'config reload refused; keeping the running config');
          });
      });
      let stopping = false;
      const stop = (signal: string): void => {
        if (stopping) return;
        stopping = true;
        logger.info({ signal, grace_ms: config.shutdownGraceMs }, 'shutting down');
        void gateway
          .close()
          .then(() => new Promise<void>((resolve) => (demoAgent ? demoAgent.close(() => resolve()) : resolve())))
          .then(() => {
            logger.info('stopped');
            logger.flush?.();
            process.exit(0);
          });
        demoAgent?.closeAllConnections();
      };
      process.on('SIGTERM', () => stop('SIGTERM'));
      process.on('SIGINT', () => stop('SIGINT'));
    });
}
