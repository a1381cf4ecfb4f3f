// The one place events are handed to for delivery (docs/notifications.md). Placeholder until
// the outbox lands: the producers code against this interface; NO_NOTIFIER drops everything.
export type EventType = 'budget.threshold' | 'key.created' | 'key.updated' | 'key.rotated' | 'key.revoked' | 'key.expiring' | 'key.expired' | 'upstream.down' | 'upstream.up';

export interface NotificationEvent {
  id: string;
  type: EventType;
  created_at: string;
  subject: string;
  data: Record<string, unknown>;
}

export interface Notifier {
  /** Never throws, never awaits on the caller's path; `subject` orders delivery. `dedupeKey`+`dedupeTtlMs`: at most once per key per TTL across all instances. */
  publish(type: EventType, subject: string, data: Record<string, unknown>, options?: { dedupeKey?: string; dedupeTtlMs?: number }): void;
  close(): Promise<void>;
}

export const NO_NOTIFIER: Notifier = {
  publish: () => {},
  close: async () => {},
};
