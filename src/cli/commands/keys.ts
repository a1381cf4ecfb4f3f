// `agent-gateway keys …`: the options of the key subcommands. Their actions are in ../keys.ts,
// imported only when one of them runs, so `serve` and `--help` never load the key service,
// the config schema or the Redis client (decision 0112).
import type { Command } from 'commander';
import { DEFAULT_CONFIG_PATH } from '../../config/default-config-path.js';
import { DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT } from '../../keys/key-list-limits.js';
import type { KeysCommandOptions } from '../keys.js';
import { lazyAction } from './lazy-action.js';

/** A repeatable option's values; no default, so an option that is never given stays undefined (and a required one is reported). */
function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

export function registerKeysCommand(program: Command, options: KeysCommandOptions = {}): Command {
  const actions = async () => (await import('../keys.js')).keysCommandActions(options);
  const keys = program.command('keys').description('create, list, show, update, rotate and revoke ha_ API keys');
  const withConfig = (command: Command) => command.option('--config <path>', 'gateway config file', DEFAULT_CONFIG_PATH);

  withConfig(keys.command('create'))
    .description('make a key and print it once (first line of stdout)')
    .requiredOption('--account <account>', 'account the key belongs to (rate limits count per account)')
    .requiredOption('--plan <plan>', 'plan from the config')
    .requiredOption('--agent <agent>', 'agent the key may call (repeat for several)', collect)
    .option('--expires-in <duration>', 'lifetime such as 30d, 12h or 90m (default: never expires)')
    .option('--name <name>', 'a label for people')
    .option('--metadata <key=value>', 'a label for the operator (repeat for several)', collect)
    .option('--limits <json>', "the key's own limits, the shape of a plan, e.g. '{\"windows\":[{\"requests\":10,\"per\":\"1m\"}]}'")
    .option('--tool <name>', "limit the key to this tool (repeat for several; default: no restriction)", collect)
    .option('--mcp <server=tools>', 'let the key use this MCP server\'s tools, e.g. files=read_file,list_directory or git=* (repeat for several servers)', collect)
    .option('--json', 'print one JSON object (with `key` and `key_id`)')
    .action(lazyAction(async () => (await actions()).create));

  withConfig(keys.command('list'))
    .description('list keys a page at a time, oldest first (never prints hashes or raw keys)')
    .option('--account <account>', 'only this account')
    .option('--agent <agent>', 'only keys that may call this agent')
    .option('--status <status>', 'only active, expired or revoked keys')
    .option('--name-prefix <text>', 'only keys whose name starts with this (case-insensitive)')
    .option('--limit <n>', `keys per page, 1 to ${MAX_LIST_LIMIT} (default ${DEFAULT_LIST_LIMIT})`)
    .option('--cursor <cursor>', 'start after this cursor (printed after a page that has more)')
    .option('--all', 'every page in turn (streamed: memory stays one page)')
    .option('--json', 'print a JSON array')
    .action(lazyAction(async () => (await actions()).list));

  withConfig(keys.command('show'))
    .description('show one key (never prints its hash)')
    .argument('<key_id>', 'the key id, e.g. key_...')
    .option('--json', 'print a JSON object')
    .action(lazyAction(async () => (await actions()).show));

  withConfig(keys.command('revoke'))
    .description('revoke a key; running gateways reject it within 1 s')
    .argument('<key_id>', 'the key id, e.g. key_...')
    .action(lazyAction(async () => (await actions()).revoke));

  withConfig(keys.command('update'))
    .description('change a key\'s settings (only the options given); running gateways apply it within 1 s')
    .argument('<key_id>', 'the key id, e.g. key_...')
    .option('--name <name>', 'a label for people')
    .option('--plan <plan>', 'plan from the config')
    .option('--agent <agent>', 'the agents the key may call from now on (repeat for several)', collect)
    .option('--expires-at <time>', 'ISO 8601 time, or "never"')
    .option('--expires-in <duration>', 'expire this long from now, e.g. 30d')
    .option('--metadata <key=value>', 'replace the metadata with these entries (repeat for several)', collect)
    .option('--clear-metadata', 'remove every metadata entry')
    .option('--limits <json>', 'replace the key\'s own limits (JSON), or "null" to use the plan\'s')
    .option('--tool <name>', 'replace the key\'s tool scope with these tools (repeat for several)', collect)
    .option('--no-tools', 'remove the key\'s tool scope: no restriction')
    .option('--mcp <server=tools>', 'replace the key\'s MCP scope with these servers\' tools (repeat for several servers)', collect)
    .option('--no-mcp-scope', 'remove the key\'s MCP scope: no MCP server')
    .option('--json', 'print a JSON object')
    .action(lazyAction(async () => (await actions()).update));

  withConfig(keys.command('rotate'))
    .description('replace a key with a new one (printed once); the old key works until the grace period ends')
    .argument('<key_id>', 'the key id, e.g. key_...')
    .option('--grace <duration>', 'how long the old key keeps working', '24h')
    .option('--json', 'print one JSON object (with `key`, `key_id` and `previous`)')
    .action(lazyAction(async () => (await actions()).rotate));

  return keys;
}
