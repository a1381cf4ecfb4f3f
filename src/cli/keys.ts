// `agent-gateway keys create|list|show|revoke` (DESIGN.md 6b). The raw key is printed once,
// by create (first line of stdout, or the `key` field with --json); nothing prints a hash.
import type { Command } from 'commander';
import { systemClock, type Clock } from '../clock.js';
import { DEFAULT_CONFIG_PATH, loadConfig } from '../config/load-config.js';
import { parseDurationMs } from '../config/duration.js';
import type { GatewayConfig } from '../config/schema.js';
import { silentLogger } from '../logger.js';
import { toKeyView, type KeyView } from '../keys/key-record-codec.js';
import { KeyService } from '../keys/key-service.js';
import type { KeyStore } from '../keys/key-store.js';
import { openKeyStore } from '../keys/open-key-store.js';

export interface KeysCommandOptions {
  /** Opens the store the config names; tests inject their own. */
  openStore?: (config: GatewayConfig) => Promise<KeyStore>;
  clock?: Clock;
  stdout?: (text: string) => void;
  stderr?: (text: string) => void;
  /** Where a failure's exit status goes (default: process.exitCode). */
  setExitCode?: (code: number) => void;
  env?: NodeJS.ProcessEnv;
}

/** The CLI's store: no watching or subscribing, and fail fast when Redis cannot be reached. */
export function openCliKeyStore(config: GatewayConfig): Promise<KeyStore> {
  return openKeyStore(config, { logger: silentLogger, subscribe: false, waitForConnectionMs: 5_000 });
}

const view = toKeyView;

function describe(v: KeyView): string {
  const rows: [string, string][] = [
    ['key_id', v.key_id],
    ['status', v.status],
    ['account', v.account],
    ['plan', v.plan],
    ['agents', v.agents.join(', ')],
    ['name', v.name || '-'],
    ['created_at', v.created_at],
    ['expires_at', v.expires_at ?? 'never'],
    ['revoked_at', v.revoked_at ?? '-'],
    ['last_used_at', v.last_used_at ?? 'never'],
  ];
  return rows.map(([label, value]) => `${label.padEnd(13)}${value}\n`).join('');
}

function table(views: KeyView[]): string {
  const header = ['KEY_ID', 'STATUS', 'ACCOUNT', 'PLAN', 'AGENTS', 'EXPIRES_AT', 'LAST_USED_AT', 'NAME'];
  const rows = views.map((v) => [v.key_id, v.status, v.account, v.plan, v.agents.join(','), v.expires_at ?? 'never', v.last_used_at ?? 'never', v.name || '-']);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => `${cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join('  ')}\n`;
  return line(header) + rows.map(line).join('');
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** --config on the subcommand, unless only a parent command was given one. */
function configPath(command: Command): string {
  if (command.getOptionValueSource('config') === 'cli') return command.opts().config as string;
  for (let parent = command.parent; parent; parent = parent.parent) {
    const source = parent.getOptionValueSource('config');
    if (source !== undefined && source !== 'default') return parent.opts().config as string;
  }
  return (command.opts().config as string | undefined) ?? DEFAULT_CONFIG_PATH;
}

export function registerKeysCommand(program: Command, options: KeysCommandOptions = {}): Command {
  const out = options.stdout ?? ((text: string) => void process.stdout.write(text));
  const err = options.stderr ?? ((text: string) => void process.stderr.write(text));
  const setExitCode = options.setExitCode ?? ((code: number) => void (process.exitCode = code));
  const openStore = options.openStore ?? openCliKeyStore;
  const clock = options.clock ?? systemClock;

  async function run(command: Command, work: (service: KeyService) => Promise<void>): Promise<void> {
    let store: KeyStore | undefined;
    try {
      const config = await loadConfig(configPath(command), options.env ?? process.env);
      store = await openStore(config);
      await work(new KeyService({ store, config, clock }));
    } catch (error) {
      err(`agent-gateway keys ${command.name()}: ${error instanceof Error ? error.message : String(error)}\n`);
      setExitCode(1);
    } finally {
      await store?.close().catch(() => {});
    }
  }

  const keys = program.command('keys').description('create, list, show and revoke ha_ API keys');
  const withConfig = (command: Command) => command.option('--config <path>', 'gateway config file', DEFAULT_CONFIG_PATH);

  withConfig(keys.command('create'))
    .description('make a key and print it once (first line of stdout)')
    .requiredOption('--account <account>', 'account the key belongs to (rate limits count per account)')
    .requiredOption('--plan <plan>', 'plan from the config')
    .option('--agent <agent>', 'agent the key may call (repeat for several)', collect, [] as string[])
    .option('--expires-in <duration>', 'lifetime such as 30d, 12h or 90m (default: never expires)')
    .option('--name <name>', 'a label for people')
    .option('--json', 'print one JSON object (with `key` and `key_id`)')
    .action(async (opts: { account: string; plan: string; agent: string[]; expiresIn?: string; name?: string; json?: boolean }, command: Command) => {
      await run(command, async (service) => {
        let expiresInMs: number | undefined;
        if (opts.expiresIn !== undefined) {
          expiresInMs = parseDurationMs(opts.expiresIn);
          if (expiresInMs === undefined || expiresInMs <= 0) throw new Error(`--expires-in ${JSON.stringify(opts.expiresIn)}: expected a duration such as 30d, 12h or 90m`);
        }
        const { rawKey, record } = await service.createKey({ account: opts.account, plan: opts.plan, agents: opts.agent, name: opts.name, expiresInMs });
        const v = view(record, clock.now());
        if (opts.json) {
          out(`${JSON.stringify({ key: rawKey, ...v })}\n`);
        } else {
          out(`${rawKey}\n${describe(v)}`);
          err('Store this key now: it is shown only this once and cannot be recovered.\n');
        }
      });
    });

  withConfig(keys.command('list'))
    .description('list keys (never prints hashes or raw keys)')
    .option('--account <account>', 'only this account')
    .option('--json', 'print a JSON array')
    .action(async (opts: { account?: string; json?: boolean }, command: Command) => {
      await run(command, async (service) => {
        const now = clock.now();
        const views = (await service.listKeys({ account: opts.account })).map((r) => view(r, now));
        if (opts.json) out(`${JSON.stringify(views)}\n`);
        else if (views.length === 0) out(opts.account === undefined ? 'no keys\n' : `no keys for account ${opts.account}\n`);
        else out(table(views));
      });
    });

  withConfig(keys.command('show'))
    .description('show one key (never prints its hash)')
    .argument('<key_id>', 'the key id, e.g. key_...')
    .option('--json', 'print a JSON object')
    .action(async (keyId: string, opts: { json?: boolean }, command: Command) => {
      await run(command, async (service) => {
        const v = view(await service.showKey(keyId), clock.now());
        out(opts.json ? `${JSON.stringify(v)}\n` : describe(v));
      });
    });

  withConfig(keys.command('revoke'))
    .description('revoke a key; running gateways reject it within 1 s')
    .argument('<key_id>', 'the key id, e.g. key_...')
    .action(async (keyId: string, _opts: unknown, command: Command) => {
      await run(command, async (service) => {
        const { record, alreadyRevoked } = await service.revokeKey(keyId);
        out(alreadyRevoked ? `${record.keyId} was already revoked at ${record.revokedAt}\n` : `revoked ${record.keyId} at ${record.revokedAt}\n`);
      });
    });

  return keys;
}
