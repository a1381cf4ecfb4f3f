// `agent-gateway events list`: its options; the action (../events-command.ts) is imported when it runs.
import { InvalidArgumentError, type Command } from 'commander';
import { DEFAULT_CONFIG_PATH } from '../../config/default-config-path.js';
import { EVENT_TYPES } from '../../config/event-types.js';
import { oneOf } from '../command-io.js';
import type { EventsCommandIo } from '../events-command.js';
import { lazyAction } from './lazy-action.js';

function limit(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 1000) throw new InvalidArgumentError('expected a whole number from 1 to 1000');
  return n;
}

/** `io`: where the output goes (tests pass their own); the process's streams when absent. */
export function registerEventsCommand(program: Command, io?: EventsCommandIo): Command {
  const events = program.command('events').description('webhook events and their delivery state (docs/notifications.md)');
  events
    .command('list')
    .description('recent webhook events, newest first, with their delivery state and last attempt')
    .option('--config <path>', `config file (default: ${DEFAULT_CONFIG_PATH})`)
    .option('--type <type>', 'only this event type', oneOf(EVENT_TYPES))
    .option('--subject <subject>', 'only this subject, e.g. key:key_3xQk9Pz2LmN8vR4t or agent:demo')
    .option('--state <state>', 'pending, delivered or failed', oneOf(['pending', 'delivered', 'failed'] as const))
    .option('--limit <n>', 'at most this many events', limit, 50)
    .option('--json', 'print the events as a JSON array')
    .action(lazyAction(async () => (await import('../events-command.js')).eventsListAction(io)));
  return events;
}
