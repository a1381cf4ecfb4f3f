// `agent-gateway keys create|list|show|update|revoke|rotate` (docs/keys.md): the same
// KeyService as the admin API, and each write recorded in the same admin audit trail (actor
// `cli:<os user>`). The raw key is printed once, by create and rotate (first line of stdout,
// or the `key` field with --json); nothing prints a hash.
// Over 300 lines as one file: the six subcommands share their option parsing, their output
// (table or --json) and the admin-trail actor; each is a thin call into KeyService.
import type { Command } from 'commander';
import { systemClock, type Clock } from '../clock.js';
import { DEFAULT_CONFIG_PATH, loadConfig } from '../config/load-config.js';
import { parseDurationMs } from '../config/duration.js';
import type { GatewayConfig } from '../config/schema.js';
import { silentLogger } from '../logger.js';
import { toKeyView, type KeyView } from '../keys/key-record-codec.js';
import { KeyService, KeyServiceError, MAX_KEY_DURATION_MS } from '../keys/key-service.js';
import type { KeyLimits } from '../keys/key-record.js';
import type { KeyStore } from '../keys/key-store.js';
import { openKeyStore } from '../keys/open-key-store.js';
import { createRedisClientFactory } from '../redis/redis-client.js';
import { openCliAdminAudit, type CliAdminAudit } from './cli-admin-audit.js';
import { openCliNotifications, type CliNotifications } from './cli-notifications.js';
import { keyEventsOf } from '../keys/key-events.js';

export interface KeysCommandOptions {
  /** Opens the store the config names; tests inject their own. */
  openStore?: (config: GatewayConfig) => Promise<KeyStore>;
  clock?: Clock;
  stdout?: (text: string) => void;
  stderr?: (text: string) => void;
  /** Where a failure's exit status goes (default: process.exitCode). */
  setExitCode?: (code: number) => void;
  /** Opens the admin audit trail the config names (default: openCliAdminAudit). */
  openAdminAudit?: (config: GatewayConfig, clock: Clock) => Promise<CliAdminAudit>;
  env?: NodeJS.ProcessEnv;
}

/** The CLI's store: no watching or subscribing, and fail fast when Redis cannot be reached. */
export function openCliKeyStore(config: GatewayConfig): Promise<KeyStore> {
  const redis = config.redis ? createRedisClientFactory(config.redis, silentLogger) : undefined;
  return openKeyStore(config, { logger: silentLogger, subscribe: false, waitForConnectionMs: 5_000, redis });
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
    ...(Object.keys(v.metadata).length > 0 ? ([['metadata', JSON.stringify(v.metadata)]] as [string, string][]) : []),
    ...(v.limits !== null ? ([['limits', JSON.stringify(v.limits)]] as [string, string][]) : []),
    ...(v.tools !== null ? ([['tools', v.tools.length === 0 ? '(none: no tool)' : v.tools.join(', ')]] as [string, string][]) : []),
    ...(v.mcp != null ? ([['mcp', Object.entries(v.mcp).map(([server, tools]) => `${server}: ${tools.join(', ')}`).join('; ')]] as [string, string][]) : []),
    ...(v.replaces !== null ? ([['replaces', v.replaces]] as [string, string][]) : []),
    ...(v.replaced_by !== null ? ([['replaced_by', v.replaced_by]] as [string, string][]) : []),
  ];
  return rows.map(([label, value]) => `${label.padEnd(13)}${value}\n`).join('');
}

interface ListOptions {
  account?: string;
  agent?: string;
  status?: string;
  namePrefix?: string;
  limit?: string;
  cursor?: string;
  all?: boolean;
  json?: boolean;
}

/** The listing's table; with --all each page is printed as it arrives, the header once. */
function table(views: KeyView[], withHeader = true): string {
  const header = ['KEY_ID', 'STATUS', 'ACCOUNT', 'PLAN', 'AGENTS', 'EXPIRES_AT', 'LAST_USED_AT', 'NAME'];
  const rows = views.map((v) => [v.key_id, v.status, v.account, v.plan, v.agents.join(','), v.expires_at ?? 'never', v.last_used_at ?? 'never', v.name || '-']);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => `${cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join('  ')}\n`;
  return (withHeader ? line(header) : '') + rows.map(line).join('');
}

/** --limits '<json>': a plan-shaped object, or null (only for update: back to the plan's). */
function parseLimits(text: string): KeyLimits | null {
  try {
    const value: unknown = JSON.parse(text);
    if (value === null || (typeof value === 'object' && !Array.isArray(value))) return value as KeyLimits | null;
  } catch {
    // fall through
  }
  throw new Error(`--limits ${JSON.stringify(text)}: expected a JSON object such as '{"windows":[{"requests":10,"per":"1m"}]}'`);
}

/** --metadata k=v (repeatable). */
function metadataOf(pairs: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new Error(`--metadata ${JSON.stringify(pair)}: expected key=value`);
    out[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return out;
}

function durationOption(flag: string, text: string, allowZero = false): number {
  const ms = parseDurationMs(text);
  if (ms === undefined || ms < 0 || (!allowZero && ms === 0) || ms > MAX_KEY_DURATION_MS) throw new Error(`${flag} ${JSON.stringify(text)}: expected a duration such as 30d, 12h or 90m, at most 36500d`);
  return ms;
}

/** What a KeyServiceError says, with the field it is about when that is not in the text. */
function messageOf(error: unknown): string {
  if (error instanceof KeyServiceError && error.param !== undefined && !error.message.includes(error.param)) return `${error.param}: ${error.message}`;
  return error instanceof Error ? error.message : String(error);
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

/**
 * The `keys` subcommands' actions (their options are src/cli/commands/keys.ts, which imports
 * this file only when a `keys` subcommand runs).
 */
export function keysCommandActions(options: KeysCommandOptions = {}) {
  const out = options.stdout ?? ((text: string) => void process.stdout.write(text));
  const err = options.stderr ?? ((text: string) => void process.stderr.write(text));
  const setExitCode = options.setExitCode ?? ((code: number) => void (process.exitCode = code));
  const openStore = options.openStore ?? openCliKeyStore;
  const clock = options.clock ?? systemClock;

  const openAdminAudit = options.openAdminAudit ?? openCliAdminAudit;

  /**
   * Loads the config, opens the key store (and, for a write, the admin audit trail: opened
   * first, so a Redis trail that cannot be reached stops the command before the key changes)
   * and runs `work`. A write prints its result, then records it in the trail; a record that
   * cannot be written then is reported and the exit status is 1 (the change itself is made).
   */
  async function run(command: Command, work: (service: KeyService, audit: CliAdminAudit | undefined) => Promise<void>, writes = false): Promise<void> {
    let store: KeyStore | undefined;
    let audit: CliAdminAudit | undefined;
    let notifications: CliNotifications | undefined;
    try {
      const config = await loadConfig(configPath(command), options.env ?? process.env);
      if (writes) audit = await openAdminAudit(config, clock);
      if (writes) notifications = await openCliNotifications(config, clock);
      store = await openStore(config);
      const events = keyEventsOf(notifications?.notifier, config.notifications.keyExpiryWarningMs);
      await work(new KeyService({ store, config, clock, events }), audit);
    } catch (error) {
      err(`agent-gateway keys ${command.name()}: ${messageOf(error)}\n`);
      setExitCode(1);
    } finally {
      await store?.close().catch(() => {});
      await audit?.close().catch(() => {});
      await notifications?.close().catch(() => {});
    }
  }

  return {
    create: async (opts: { account: string; plan: string; agent: string[]; expiresIn?: string; name?: string; metadata?: string[]; limits?: string; tool?: string[]; mcp?: string[]; json?: boolean }, command: Command) => {
      await run(command, async (service, audit) => {
        const expiresInMs = opts.expiresIn === undefined ? undefined : durationOption('--expires-in', opts.expiresIn);
        const { rawKey, record } = await service.createKey({
          account: opts.account,
          plan: opts.plan,
          agents: opts.agent,
          name: opts.name,
          expiresInMs,
          metadata: metadataOf(opts.metadata ?? []),
          limits: opts.limits === undefined ? undefined : parseLimits(opts.limits),
          tools: opts.tool,
          mcp: opts.mcp === undefined ? undefined : mcpScopeOf(opts.mcp),
        });
        const v = view(record, clock.now());
        if (opts.json) {
          out(`${JSON.stringify({ key: rawKey, ...v })}\n`);
        } else {
          out(`${rawKey}\n${describe(v)}`);
          err('Store this key now: it is shown only this once and cannot be recovered.\n');
        }
        // The fields the admin API's body would have held for the same key.
        const fields = ['account', 'plan', 'agents', ...(opts.name === undefined ? [] : ['name']), ...(expiresInMs === undefined ? [] : ['expires_in']), ...((opts.metadata ?? []).length > 0 ? ['metadata'] : []), ...(opts.limits === undefined ? [] : ['limits']), ...(opts.tool === undefined ? [] : ['tools']), ...(opts.mcp === undefined ? [] : ['mcp'])];
        await audit!.log.keyCreated(audit!.origin, record.keyId, fields);
      }, true);
    },
    list: async (opts: ListOptions, command: Command) => {
      await run(command, async (service) => {
        const status = opts.status;
        if (status !== undefined && status !== 'active' && status !== 'expired' && status !== 'revoked') throw new KeyServiceError('--status must be active, expired or revoked', 'status');
        const limit = opts.limit === undefined ? undefined : /^\d{1,4}$/.test(opts.limit) ? Number(opts.limit) : NaN;
        let cursor = opts.cursor;
        let shown = 0;
        for (let first = true; ; first = false) {
          const page = await service.listKeyPage({ account: opts.account, agent: opts.agent, status, namePrefix: opts.namePrefix, limit, cursor });
          const now = clock.now();
          const views = page.keys.map((r) => view(r, now));
          // The array opens only once the first page is in: a refused query prints nothing.
          if (opts.json) out(`${first ? '[' : ''}${views.map((v, i) => `${shown + i === 0 ? '' : ','}${JSON.stringify(v)}`).join('')}`);
          else if (views.length > 0) out(table(views, shown === 0));
          shown += views.length;
          if (page.nextCursor === null) break;
          if (!opts.all) {
            err(`more keys: run again with --cursor ${page.nextCursor} (or --all)\n`);
            break;
          }
          cursor = page.nextCursor;
        }
        if (opts.json) out(']\n');
        else if (shown === 0) out(opts.account === undefined ? 'no keys\n' : `no keys for account ${opts.account}\n`);
      });
    },
    show: async (keyId: string, opts: { json?: boolean }, command: Command) => {
      await run(command, async (service) => {
        const v = view(await service.showKey(keyId), clock.now());
        out(opts.json ? `${JSON.stringify(v)}\n` : describe(v));
      });
    },
    revoke: async (keyId: string, _opts: unknown, command: Command) => {
      await run(command, async (service, audit) => {
        const { record, alreadyRevoked } = await service.revokeKey(keyId);
        out(alreadyRevoked ? `${record.keyId} was already revoked at ${record.revokedAt}\n` : `revoked ${record.keyId} at ${record.revokedAt}\n`);
        if (!alreadyRevoked) await audit!.log.keyRevoked(audit!.origin, record.keyId);
      }, true);
    },
    update: async (
      keyId: string,
      opts: { name?: string; plan?: string; agent?: string[]; expiresAt?: string; expiresIn?: string; metadata?: string[]; clearMetadata?: boolean; limits?: string; tool?: string[]; tools: boolean; mcp?: string[]; mcpScope: boolean; json?: boolean },
      command: Command,
    ) => {
      await run(command, async (service, audit) => {
        if (opts.expiresAt !== undefined && opts.expiresIn !== undefined) throw new Error('give --expires-at or --expires-in, not both');
        if (opts.tool !== undefined && !opts.tools) throw new Error('give --tool or --no-tools, not both');
        if (opts.mcp !== undefined && !opts.mcpScope) throw new Error('give --mcp or --no-mcp-scope, not both');
        let expiresAt: string | null | undefined = opts.expiresAt === 'never' ? null : opts.expiresAt;
        if (opts.expiresIn !== undefined) expiresAt = new Date(clock.now() + durationOption('--expires-in', opts.expiresIn)).toISOString();
        const { record, changed } = await service.updateKey(keyId, {
          name: opts.name,
          plan: opts.plan,
          agents: opts.agent,
          expiresAt,
          metadata: opts.clearMetadata ? null : opts.metadata !== undefined ? metadataOf(opts.metadata) : undefined,
          limits: opts.limits === undefined ? undefined : parseLimits(opts.limits),
          tools: !opts.tools ? null : opts.tool,
          mcp: !opts.mcpScope ? null : opts.mcp === undefined ? undefined : mcpScopeOf(opts.mcp),
        });
        const v = view(record, clock.now());
        if (opts.json) out(`${JSON.stringify({ ...v, changed })}\n`);
        else out(`${changed.length === 0 ? 'nothing changed' : `updated ${changed.join(', ')}`}\n${describe(v)}`);
        if (changed.length > 0) await audit!.log.keyUpdated(audit!.origin, keyId, changed);
      }, true);
    },
    rotate: async (keyId: string, opts: { grace: string; json?: boolean }, command: Command) => {
      await run(command, async (service, audit) => {
        const { rawKey, record, previous } = await service.rotateKey(keyId, { graceMs: durationOption('--grace', opts.grace, true) });
        const now = clock.now();
        if (opts.json) {
          out(`${JSON.stringify({ key: rawKey, ...view(record, now), previous: view(previous, now) })}\n`);
        } else {
          out(`${rawKey}\n${describe(view(record, now))}`);
          err(`Store this key now: it is shown only this once. ${previous.keyId} keeps working until ${previous.expiresAt}.\n`);
        }
        await audit!.log.keyRotated(audit!.origin, keyId, record.keyId);
      }, true);
    },
  };
}

/** `--mcp files=read_file,list_directory` (repeated) as the key's MCP scope; the KeyService checks the names. */
export function mcpScopeOf(specs: readonly string[]): Record<string, string[]> {
  const scope: Record<string, string[]> = {};
  for (const spec of specs) {
    const equals = spec.indexOf('=');
    if (equals <= 0) throw new Error(`--mcp ${JSON.stringify(spec)}: expected server=tool[,tool...] (or server=*)`);
    const server = spec.slice(0, equals);
    if (Object.hasOwn(scope, server)) throw new Error(`--mcp: the server "${server}" is given twice`);
    scope[server] = spec.slice(equals + 1).split(',').filter((tool) => tool !== '');
  }
  return scope;
}
