// `agent-gateway usage`: its options; the action (../usage-command.ts) is imported when it runs.
import { InvalidArgumentError, Option, type Command } from 'commander';
import { USAGE_SORTS } from '../../audit/usage-report.js';
import { parseDurationMs } from '../../config/duration.js';
import { DEFAULT_CONFIG_PATH } from '../../config/default-config-path.js';
import { oneOf } from '../command-io.js';
import type { UsageCommandIo } from '../usage-command.js';
import { lazyAction } from './lazy-action.js';

function since(value: string): number {
  const ms = parseDurationMs(value);
  if (ms === undefined || ms <= 0) throw new InvalidArgumentError('expected a duration such as 7d, 24h or 90m');
  return ms;
}

/** `io`: where the output goes (tests pass their own); the process's streams when absent. */
export function registerUsageCommand(program: Command, io?: UsageCommandIo): Command {
  return program
    .command('usage')
    .description('usage per key, account, agent or agent run (session) from the hourly rollups (requests, tokens, cost in USD, tool calls, errors, latency)')
    .option('--config <path>', `config file (default: ${DEFAULT_CONFIG_PATH})`)
    .option('--by <group>', 'key, account, agent or session (a session report needs --key or --account)', oneOf(['key', 'account', 'agent', 'session'] as const), 'key')
    .option('--sort <measure>', 'rank groups by this total, largest first: requests, tokens, cost_usd or tool_calls', oneOf(USAGE_SORTS))
    .addOption(new Option('--since <duration>', 'how far back, e.g. 7d or 24h').argParser(since).default(7 * 86_400_000, '7d'))
    .option('--granularity <period>', 'hour or day', oneOf(['hour', 'day'] as const), 'day')
    .option('--key <keyId>', 'only this key')
    .option('--account <account>', 'only this account')
    .option('--agent <agent>', 'only this agent')
    .option('--json', 'print the rows as a JSON array')
    .action(lazyAction(async () => (await import('../usage-command.js')).usageAction(io)));
}
