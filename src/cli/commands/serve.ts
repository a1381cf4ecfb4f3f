// `agent-gateway serve`: its options; the action (../serve-command.ts) is imported when it runs.
import type { Command } from 'commander';
import { DEFAULT_CONFIG_PATH } from '../../config/default-config-path.js';
import { lazyAction } from './lazy-action.js';

export function registerServeCommand(program: Command): void {
  program
    .command('serve')
    .description('run the gateway and its admin listener')
    .option('--config <path>', 'config file', DEFAULT_CONFIG_PATH)
    .option('--demo', 'also run the demo agent and create a demo key when the store is empty (npm start)')
    .option('--workers <n>', 'gateway processes sharing the port: a number, or "auto" for one per CPU core', '1')
    .action(lazyAction(async () => (await import('../serve-command.js')).serveAction));
}
