// `agent-gateway config check`: validate the config and say what to fix.
import type { Command } from 'commander';
import { ConfigError, DEFAULT_CONFIG_PATH, loadConfig } from '../config/load-config.js';

export function registerConfigCommand(program: Command): void {
  const config = program.command('config').description('work with the gateway config file');
  config
    .command('check')
    .description('validate the config file; exit 1 with readable errors')
    .option('--config <path>', 'config file', DEFAULT_CONFIG_PATH)
    .action(async (options: { config: string }) => {
      try {
        const loaded = await loadConfig(options.config);
        const agents = [...loaded.agents.keys()].join(', ');
        const plans = [...loaded.plans.keys()].join(', ');
        process.stdout.write(`${options.config}: ok (agents: ${agents}; plans: ${plans}; mode: ${loaded.redis ? 'redis' : 'embedded'})\n`);
      } catch (error) {
        if (!(error instanceof ConfigError)) throw error;
        process.stderr.write(`${error.message}\n`);
        process.exitCode = 1;
      }
    });
}
