// Builds the notifications of one gateway process from the config (called by the composition
// root, src/gateway.ts): the outbox (Redis streams when a Redis connection is given, files
// under notifications.dir otherwise), the notifier that writes to it, and the delivery
// workers. With no webhook configured nothing is opened, the notifier is NO_NOTIFIER, and
// none of the outbox or delivery code is even loaded: it sits in notifications-on.ts, imported
// only when a webhook is configured (docs/performance.md, "A feature that is off loads nothing").
import type { NotificationsConfig } from '../config/notifications-schema.js';
import { NO_NOTIFIER } from './notifier.js';
import type { Notifications, OpenNotificationsOptions } from './notifications-types.js';

export type { EventsView, Notifications, OpenNotificationsOptions } from './notifications-types.js';
export { wantedByAny } from './wanted-events.js';

export const NOTIFICATIONS_OFF: Notifications = { notifier: NO_NOTIFIER, events: undefined, close: () => Promise.resolve() };

export async function openNotifications(config: NotificationsConfig, options: OpenNotificationsOptions): Promise<Notifications> {
  if (config.webhooks.length === 0) return NOTIFICATIONS_OFF;
  const { openWebhookNotifications } = await import('./notifications-on.js');
  return openWebhookNotifications(config, options);
}

