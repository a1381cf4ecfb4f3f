// Which event types a config's webhooks want: the notifier drops the others before they are
// written (the gateway's delivery, notifications-on.ts, and the CLI's, cli/cli-notifications.ts).
import type { EventType, NotificationsConfig } from '../config/notifications-schema.js';

/** Whether any configured webhook wants events of a type: the ones nobody wants are never written. */
export function wantedByAny(config: NotificationsConfig): (type: EventType) => boolean {
  const wanted = new Set<string>(config.webhooks.flatMap((w) => (w.events === '*' ? ['*'] : [...w.events])));
  return (type) => wanted.has('*') || wanted.has(type);
}
