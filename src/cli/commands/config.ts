// `agent-gateway config check`: its options; the action (../config-command.ts) is imported when it runs.
import type { Command } from 'commander';
import { DEFAULT_CONFIG_PATH } from '../../config/default-config-path.js';
import { lazyAction } from './lazy-action.js';

export function registerConfigCommand(program: Command): void {
  const config = program.command('config').description('work with the gateway config file');
  config
    .command('check')
    .description('validate the config file and the files it names (TLS certificates and keys); exit 1 listing every problem')
    .option('--config <path>', 'config file', DEFAULT_CONFIG_PATH)
    .action(lazyAction(async () => (await import('../config-command.js')).configCheckAction));
}
