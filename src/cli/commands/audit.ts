// `agent-gateway audit tail`: its options; the action (../audit.ts) is imported when it runs.
import { InvalidArgumentError, type Command } from 'commander';
import { DEFAULT_CONFIG_PATH } from '../../config/default-config-path.js';
import type { AuditCommandIo } from '../audit.js';
import { lazyAction } from './lazy-action.js';

function parseLimit(value: string): number {
  const limit = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(limit)) throw new InvalidArgumentError('expected a whole number of records, e.g. 20');
  return limit;
}

/** `io`: where the output goes (tests pass their own); the process's streams when absent. */
export function registerAuditCommand(program: Command, io?: AuditCommandIo): Command {
  const audit = program.command('audit').description('read usage audit records');
  audit
    .command('tail')
    .description('print the newest audit records as JSON Lines (from the Redis stream if configured, else the audit file)')
    .option('--config <path>', `config file (default: ${DEFAULT_CONFIG_PATH})`)
    .option('-f, --follow', 'keep printing new records until interrupted')
    .option('--key <keyId>', 'only records of this key_id')
    .option('--admin', 'the admin audit trail (key writes through the admin API and the CLI) instead of usage records')
    .option('-n, --limit <n>', 'how many of the newest records to print first', parseLimit, 20)
    .action(lazyAction(async () => (await import('../audit.js')).auditTailAction(io)));
  return audit;
}
