// `agent-gateway events list [--type T] [--subject S] [--state pending|delivered|failed]
// [--limit N] [--json]`: the webhook events and their delivery state (docs/notifications.md
// "CLI"), read from where the gateway keeps them (the Redis hashes in Redis mode, the
// events.jsonl file in embedded mode) through the same paging as GET /admin/v1/events.
// The options are src/cli/commands/events.ts.
import type { Command } from 'commander';
import { processTextIo } from './command-io.js';
import { ConfigError, DEFAULT_CONFIG_PATH, loadConfig } from '../config/load-config.js';
import { silentLogger } from '../logger.js';
import { eventStatesPath, pageOf, readEventStates } from '../notifications/file-event-states.js';
import type { DeliveryState, EventFilter, EventPage, StoredEvent } from '../notifications/outbox.js';
import { createRedisClientFactory, type RedisClient } from '../redis/redis-client.js';

export interface EventsListOptions {
  config?: string;
  type?: string;
  subject?: string;
  state?: DeliveryState;
  limit: number;
  json?: boolean;
}

export interface EventsCommandIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  setExitCode: (code: number) => void;
}

const processIo: EventsCommandIo = processTextIo;

/** `events list`'s action (its options are src/cli/commands/events.ts). */
export function eventsListAction(io: EventsCommandIo = processIo) {
  return async (options: EventsListOptions, command: Command): Promise<void> => {
    const configPath = options.config ?? (command.optsWithGlobals() as { config?: string }).config ?? DEFAULT_CONFIG_PATH;
    let redis: RedisClient | undefined;
    try {
      const config = await loadConfig(configPath);
      const filter: EventFilter = { type: options.type, subject: options.subject, state: options.state };
      let page: EventPage;
      if (config.redis) {
        const factory = createRedisClientFactory(config.redis, silentLogger);
        redis = factory.connect('cli-read', 'agentgw-cli');
        await factory.whenReady(redis, 5_000);
        // The outboxes load only when this command runs, not with every other command (`serve` included).
        const { RedisWebhookOutbox } = await import('../notifications/redis-webhook-outbox.js');
        page = await new RedisWebhookOutbox({ client: redis, prefix: config.redis.prefix, leaseMs: 1 }).list(filter, undefined, options.limit);
      } else {
        page = pageOf((await readEventStates(eventStatesPath(config.notifications.dir), Date.now())).values(), filter, undefined, options.limit);
      }
      io.stdout(options.json ? `${JSON.stringify(page.data)}\n` : eventsTable(page.data));
    } catch (error) {
      if (!(error instanceof ConfigError) && !(error instanceof Error)) throw error;
      io.stderr(`${error.message}\n`);
      io.setExitCode(1);
    } finally {
      redis?.disconnect();
    }
  };
}

function eventsTable(events: StoredEvent[]): string {
  if (events.length === 0) return 'no events\n';
  const rows = events.map((e) => {
    const last = e.attempts[e.attempts.length - 1];
    return [e.id, e.type, e.subject, e.state, String(e.attempts.length), last ? (last.status !== undefined ? String(last.status) : (last.error ?? '')) : '-', e.created_at];
  });
  const header = ['ID', 'TYPE', 'SUBJECT', 'STATE', 'ATTEMPTS', 'LAST', 'CREATED'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  return [header, ...rows].map((r) => r.map((cell, i) => cell.padEnd(widths[i]!)).join('  ').trimEnd()).join('\n') + '\n';
}
