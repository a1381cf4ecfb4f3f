// Notifications when at least one webhook is configured (docs/notifications.md): the outbox,
// the buffered notifier that writes to it, the delivery workers and the events view. Loaded
// by open-notifications.ts with a dynamic import, so a gateway without webhooks never loads
// the outboxes, the sender or the delivery loop.
import type { NotificationsConfig } from '../config/notifications-schema.js';
import { BufferedNotifier } from './buffered-notifier.js';
import { EVENT_ID_PATTERN } from './event-id.js';
import { FileWebhookOutbox } from './file-webhook-outbox.js';
import type { EventsView, Notifications, OpenNotificationsOptions } from './notifications-types.js';
import type { Outbox, OutboxWriter } from './outbox.js';
import { RedisWebhookOutbox } from './redis-webhook-outbox.js';
import { WebhookDelivery } from './webhook-delivery.js';
import { WebhookSender } from './webhook-sender.js';
import { wantedByAny } from './wanted-events.js';

/** How long a shard lease lasts unrenewed: an instance that died hands its shards on after this. */
export const SHARD_LEASE_MS = 15_000;

/** The outbox the config names (Redis streams when a connection is given, files otherwise) and what runs over it. */
export async function openWebhookNotifications(config: NotificationsConfig, options: OpenNotificationsOptions): Promise<Notifications> {
  const outbox: Outbox = options.redis
    ? new RedisWebhookOutbox({ client: options.redis, prefix: options.redisPrefix, leaseMs: SHARD_LEASE_MS })
    : await FileWebhookOutbox.open(config.dir, options.clock.now());
  return notificationsOver(outbox, config, options);
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
