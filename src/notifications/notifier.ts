// What the gateway's parts call to tell operators something happened (docs/design.md,
// "Notifications"): a key created or expiring, a runner down, a budget threshold crossed.
// Publishing only hands the event to memory; writing the outbox and delivering the webhooks
// happen off the caller's path (buffered-notifier.ts, webhook-delivery.ts).
import type { EventType } from '../config/notifications-schema.js';

export type { EventType } from '../config/notifications-schema.js';

/** One event as the outbox keeps it; the webhook body is `{ id, type, created_at, data }` (webhook-body.ts). */
export interface NotificationEvent {
  /** `evt_` + a time-sortable unique id (event-id.ts); the webhook's `Webhook-Id`. */
  id: string;
  type: EventType;
  /** ISO 8601 UTC, when it was published. */
  created_at: string;
  /** What delivery is ordered by: `key:<id>`, `account:<id>`, `agent:<id>`. */
  subject: string;
  data: Record<string, unknown>;
}

export interface PublishOptions {
  /** Publish at most once per key per `dedupeTtlMs`, across all instances (threshold crossings). */
  dedupeKey?: string;
  dedupeTtlMs?: number;
}

export interface Notifier {
  /**
   * Never throws, never awaits on the caller's path; `subject` orders delivery (e.g. `key:<id>`,
   * `account:<id>`, `agent:<id>`). `dedupeKey`+`dedupeTtlMs`: publish at most once per key per
   * TTL across ALL instances (threshold crossings).
   */
  publish(type: EventType, subject: string, data: Record<string, unknown>, options?: PublishOptions): void;
  /** Writes what is buffered to the outbox and stops delivering. */
  close(): Promise<void>;
}

/** A no-op when notifications are not configured (no webhook). */
export const NO_NOTIFIER: Notifier = Object.freeze({
  publish(): void {},
  close: () => Promise.resolve(),
});
