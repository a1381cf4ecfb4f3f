// The shapes of a process's notifications (docs/notifications.md), shared by the off half
// (open-notifications.ts) and the on half (notifications-on.ts, loaded only with a webhook).
import type { Clock } from '../clock.js';
import type { Logger } from '../logger.js';
import type { RedisClient } from '../redis/redis-client.js';
import type { Notifier } from './notifier.js';
import type { EventFilter, EventPage, StoredEvent } from './outbox.js';

/** What the admin API and CLI read: the events and their delivery state, and redelivery. */
export interface EventsView {
  list(filter: EventFilter, cursor: string | undefined, limit: number): Promise<EventPage>;
  get(id: string): Promise<StoredEvent | undefined>;
  /** Queues the event again; undefined when no such event is known. */
  redeliver(id: string): Promise<StoredEvent | undefined>;
}

export interface Notifications {
  notifier: Notifier;
  /** Undefined when notifications are off. */
  events: EventsView | undefined;
  close(): Promise<void>;
}

export interface OpenNotificationsOptions {
  /** Redis mode: the connection the outbox uses (the caller closes it). */
  redis: RedisClient | undefined;
  redisPrefix: string;
  logger: Logger;
  clock: Clock;
  /** Whether this process runs delivery workers (false: it only publishes and reads). */
  deliver?: boolean;
  /** Tests: how often the doorbell is read, and the safety-net read of every shard (webhook-delivery.ts). */
  pollIntervalMs?: number;
  safetyNetMs?: number;
}
