// Builds the notifications of one gateway process from the config (called by the composition
// root, src/gateway.ts): the outbox (Redis streams when a Redis connection is given, files
// under notifications.dir otherwise), the notifier that writes to it, and the delivery
// workers. With no webhook configured nothing is opened and the notifier is NO_NOTIFIER.
import type { Clock } from '../clock.js';
import type { EventType, NotificationsConfig } from '../config/notifications-schema.js';
import type { Logger } from '../logger.js';
import type { RedisClient } from '../redis/redis-client.js';
import { BufferedNotifier } from './buffered-notifier.js';
import { EVENT_ID_PATTERN } from './event-id.js';
import { FileWebhookOutbox } from './file-webhook-outbox.js';
import { NO_NOTIFIER, type Notifier } from './notifier.js';
import type { EventFilter, EventPage, Outbox, OutboxWriter, StoredEvent } from './outbox.js';
import { RedisWebhookOutbox } from './redis-webhook-outbox.js';
import { WebhookDelivery } from './webhook-delivery.js';
import { WebhookSender } from './webhook-sender.js';

/** How long a shard lease lasts unrenewed: an instance that died hands its shards on after this. */
export const SHARD_LEASE_MS = 15_000;

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

export const NOTIFICATIONS_OFF: Notifications = { notifier: NO_NOTIFIER, events: undefined, close: () => Promise.resolve() };

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

export async function openNotifications(config: NotificationsConfig, options: OpenNotificationsOptions): Promise<Notifications> {
  if (config.webhooks.length === 0) return NOTIFICATIONS_OFF;
  const outbox: Outbox = options.redis
    ? new RedisWebhookOutbox({ client: options.redis, prefix: options.redisPrefix, leaseMs: SHARD_LEASE_MS })
    : await FileWebhookOutbox.open(config.dir, options.clock.now());
  return notificationsOver(outbox, config, options);
}

/** Whether any configured webhook wants events of a type: the ones nobody wants are never written. */
export function wantedByAny(config: NotificationsConfig): (type: EventType) => boolean {
  const wanted = new Set<string>(config.webhooks.flatMap((w) => (w.events === '*' ? ['*'] : [...w.events])));
  return (type) => wanted.has('*') || wanted.has(type);
}

/** The notifier, workers and view over an outbox already open (tests open their own). */
export function notificationsOver(outbox: Outbox, config: NotificationsConfig, options: OpenNotificationsOptions): Notifications {
  const sender = new WebhookSender({ connectionsPerOrigin: config.concurrency });
  const delivery = options.deliver === false ? undefined : new WebhookDelivery({ outbox, config, send: (webhook, url, headers, body) => sender.send(webhook, url, headers, body), clock: options.clock, logger: options.logger, pollIntervalMs: options.pollIntervalMs, safetyNetMs: options.safetyNetMs });
  // What this instance writes is delivered at once by its own idle loops; others' events when the doorbell is next read.
  const writer: OutboxWriter = {
    append: async (events) => {
      await outbox.append(events);
      delivery?.wake();
    },
    claimOnce: (key, ttlMs) => outbox.claimOnce(key, ttlMs),
  };
  const notifier = new BufferedNotifier({ outbox: writer, clock: options.clock, logger: options.logger, maxQueue: config.maxQueue, wants: wantedByAny(config) });
  delivery?.start();
  const events: EventsView = {
    list: (filter, cursor, limit) => outbox.list(filter, cursor, limit),
    get: (id) => (EVENT_ID_PATTERN.test(id) ? outbox.get(id) : Promise.resolve(undefined)),
    async redeliver(id) {
      const known = EVENT_ID_PATTERN.test(id) ? await outbox.get(id) : undefined;
      if (!known) return undefined;
      const { state: _state, attempts: _attempts, ...event } = known;
      await outbox.requeue(event, config.webhooks.filter((w) => w.events === '*' || w.events.has(event.type)).map((w) => w.id));
      delivery?.wake();
      return { ...known, state: 'pending' };
    },
  };
  return {
    notifier,
    events,
    async close() {
      await notifier.close();
      // Sends in flight are cut rather than waited for (up to 10 s each): the events stay in the outbox.
      delivery?.stop();
      await sender.close();
      await delivery?.close();
      await outbox.close();
    },
  };
}
