// The webhook event types (docs/notifications.md). A file of its own so `events list --type`'s
// option (src/cli/commands/events.ts) can name them without loading the config schema (zod).
export const EVENT_TYPES = [
  'budget.threshold',
  'key.created',
  'key.updated',
  'key.rotated',
  'key.revoked',
  'key.expiring',
  'key.expired',
  'upstream.down',
  'upstream.up',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];
