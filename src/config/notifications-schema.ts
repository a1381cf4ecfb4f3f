// The notifications block (docs/notifications.md "Configuration"): signed webhooks, the budget
// fractions that fire `budget.threshold`, how long before expiry `key.expiring` fires, and the
// delivery retry schedule. A webhook secret is wrapped as soon as it is read (WebhookSecret) so
// no log line, config dump or admin answer can print it by accident.
import { inspect } from 'node:util';
import { z } from 'zod';
import { positiveDuration } from './schema-primitives.js';

/** Every event type the gateway sends (docs/notifications.md "Events"). */
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

export const MAX_BUDGET_THRESHOLDS = 8;
export const MIN_WEBHOOK_SECRET_CHARS = 16;

/** A webhook signing secret: `reveal()` is the only way to the text; JSON and inspect show `[redacted]`. */
export class WebhookSecret {
  readonly #text: string;
  constructor(text: string) {
    this.#text = text;
  }
  reveal(): string {
    return this.#text;
  }
  toJSON(): string {
    return '[redacted]';
  }
  toString(): string {
    return '[redacted]';
  }
  [inspect.custom](): string {
    return '[redacted]';
  }
}

const webhookUrl = z.string().refine((text) => {
  try {
    const url = new URL(text);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hash === '';
  } catch {
    return false;
  }
}, { message: 'must be an http:// or https:// URL without a fragment, e.g. https://hooks.example.com/agentgw' });

const eventFilter = z.union([z.literal('*'), z.enum(EVENT_TYPES)], { message: `must be "*" or one of ${EVENT_TYPES.join(', ')}` });

const webhookSchema = z
  .strictObject({
    url: webhookUrl,
    // One secret signs; a list is a rotation in progress: the first signs, every one is sent as a
    // v1= of its own so receivers holding either accept (docs/decisions/0068-webhook-secret-rotation.md).
    secret: z.union([
      z.string().min(MIN_WEBHOOK_SECRET_CHARS, `at least ${MIN_WEBHOOK_SECRET_CHARS} characters (e.g. openssl rand -hex 32)`),
      z
        .array(z.string().min(MIN_WEBHOOK_SECRET_CHARS, `at least ${MIN_WEBHOOK_SECRET_CHARS} characters (e.g. openssl rand -hex 32)`))
        .min(1)
        .max(2, 'at most two secrets: the new one and the one being retired'),
    ]),
    events: z.array(eventFilter).min(1).default(['*']),
  })
  .transform((w) => ({
    url: w.url,
    secrets: (typeof w.secret === 'string' ? [w.secret] : w.secret).map((text) => new WebhookSecret(text)),
    events: w.events.includes('*') ? ('*' as const) : new Set<EventType>(w.events as EventType[]),
  }));

export const notificationsSchema = z
  .strictObject({
    webhooks: z.array(webhookSchema).max(16).default([]),
    budget_thresholds: z
      .array(z.number().gt(0, 'a fraction above 0').lte(1, 'a fraction of at most 1 (1.0 is the whole budget)'))
      .max(MAX_BUDGET_THRESHOLDS, `at most ${MAX_BUDGET_THRESHOLDS} thresholds`)
      .default([0.5, 0.8, 1])
      .refine((list) => list.every((value, i) => i === 0 || value > list[i - 1]!), { message: 'must be sorted ascending without repeats, e.g. [0.5, 0.8, 1.0]' }),
    key_expiry_warning: positiveDuration.default(7 * 86_400_000),
    // How often each gateway looks for keys expiring or expired (a bounded page each time).
    key_expiry_sweep: positiveDuration.default(10_000),
    retry: z
      .strictObject({
        initial: positiveDuration.default(1_000),
        max: positiveDuration.default(3_600_000),
        give_up_after: positiveDuration.default(86_400_000),
      })
      .prefault({})
      .refine((r) => r.initial <= r.max, { message: 'retry.initial must not exceed retry.max' }),
    // Events published but not yet written to the outbox; past it new events are dropped and counted.
    max_queue: z.number().int().min(1).max(1_000_000).default(10_000),
    // Deliveries in flight at once from this instance, across the outbox shards it owns (at most one per shard).
    concurrency: z.number().int().min(1).max(256).default(16),
    // Embedded mode: the outbox and delivery-state files (docs/notifications.md "Embedded mode").
    dir: z.string().min(1).default('var/webhooks'),
  })
  .transform((n) => ({
    webhooks: n.webhooks,
    budgetThresholds: n.budget_thresholds,
    keyExpiryWarningMs: n.key_expiry_warning,
    keyExpirySweepMs: n.key_expiry_sweep,
    retry: { initialMs: n.retry.initial, maxMs: n.retry.max, giveUpAfterMs: n.retry.give_up_after },
    maxQueue: n.max_queue,
    concurrency: n.concurrency,
    dir: n.dir,
  }));

export type NotificationsConfig = z.output<typeof notificationsSchema>;
export type WebhookConfig = NotificationsConfig['webhooks'][number];
