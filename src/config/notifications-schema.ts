// The notifications block (docs/notifications.md "Configuration"): signed webhooks, the budget
// fractions that fire `budget.threshold`, how long before expiry `key.expiring` fires, and the
// delivery retry schedule. A webhook secret is wrapped as soon as it is read (WebhookSecret) so
// no log line, config dump or admin answer can print it by accident. Each webhook has a
// signature `format` (docs/decisions/0086-standard-webhooks-by-default.md) and an `id`, its
// name in the outbox: the position delivery has reached for it (decision 0085).
import { createHash } from 'node:crypto';
import { inspect } from 'node:util';
import { z } from 'zod';
import { positiveDuration } from './schema-primitives.js';
import { EVENT_TYPES, type EventType } from './event-types.js';

/** Every event type the gateway sends (docs/notifications.md "Events"). */
export { EVENT_TYPES, type EventType } from './event-types.js';

export const MAX_BUDGET_THRESHOLDS = 8;
export const MIN_WEBHOOK_SECRET_CHARS = 16;
/** A `whsec_` secret's key, base64-decoded, is at least this many bytes (Standard Webhooks keys are 24 to 64). */
export const MIN_WHSEC_KEY_BYTES = 16;

/** How a webhook's deliveries are signed: Standard Webhooks (the default) or the `t=…,v1=<hex>` scheme of earlier versions. */
export const WEBHOOK_FORMATS = ['standard', 't-v1'] as const;
export type WebhookFormat = (typeof WEBHOOK_FORMATS)[number];

const WHSEC_PREFIX = 'whsec_';
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const PRINTABLE_ASCII = /^[\x21-\x7e]+$/;
const WEBHOOK_ID = /^[a-z0-9][a-z0-9_-]{0,31}$/;

/** A webhook signing secret: `reveal()` is the only way to the text; JSON and inspect show `[redacted]`. */
export class WebhookSecret {
  readonly #text: string;
  constructor(text: string) {
    this.#text = text;
  }
  reveal(): string {
    return this.#text;
  }
  /**
   * The HMAC key `format` signs with: under `standard` a `whsec_<base64>` secret is its decoded
   * bytes and any other secret its own (ASCII) bytes, what the Standard Webhooks libraries read
   * with `{ format: "raw" }`; under `t-v1` the secret's text as written, as Stripe's verifier
   * uses it (whsec_ prefix included).
   */
  signingKey(format: WebhookFormat): Buffer {
    if (format === 'standard' && this.#text.startsWith(WHSEC_PREFIX)) return Buffer.from(this.#text.slice(WHSEC_PREFIX.length), 'base64');
    return Buffer.from(this.#text, 'utf8');
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

const secretText = z.string().min(MIN_WEBHOOK_SECRET_CHARS, `at least ${MIN_WEBHOOK_SECRET_CHARS} characters (e.g. whsec_$(openssl rand -base64 32))`);

/** Why `text` cannot sign under `format`, or undefined when it can. */
function secretProblem(text: string, format: WebhookFormat): string | undefined {
  if (format !== 'standard') return undefined;
  if (text.startsWith(WHSEC_PREFIX)) {
    const encoded = text.slice(WHSEC_PREFIX.length);
    if (!BASE64.test(encoded)) return 'a whsec_ secret is base64 after the prefix (e.g. whsec_$(openssl rand -base64 32))';
    if (Buffer.from(encoded, 'base64').length < MIN_WHSEC_KEY_BYTES) return `a whsec_ secret's key is at least ${MIN_WHSEC_KEY_BYTES} bytes once base64-decoded (e.g. whsec_$(openssl rand -base64 32))`;
    return undefined;
  }
  // Used as raw bytes: printable ASCII, so every library reads the same bytes (decision 0086).
  return PRINTABLE_ASCII.test(text) ? undefined : 'a secret without the whsec_ prefix is used as raw bytes and must be printable ASCII without spaces; or write it whsec_<base64>';
}

/** A webhook's outbox name when the config gives none: from its URL, so it stays the same across restarts. */
export function defaultWebhookId(url: string): string {
  return `h${createHash('sha256').update(url).digest('hex').slice(0, 12)}`;
}

const webhookSchema = z
  .strictObject({
    url: webhookUrl,
    // One secret signs; a list is a rotation in progress: every one signs, each signature sent
    // beside the others so receivers holding either accept (docs/decisions/0068-webhook-secret-rotation.md).
    secret: z.union([secretText, z.array(secretText).min(1).max(2, 'at most two secrets: the new one and the one being retired')]),
    format: z.enum(WEBHOOK_FORMATS, { message: `must be one of ${WEBHOOK_FORMATS.join(', ')} (standard: Standard Webhooks, the default; t-v1: t=<unix s>,v1=<hex>)` }).default('standard'),
    // The webhook's name in the outbox (its delivery position); from the URL when absent.
    id: z.string().regex(WEBHOOK_ID, 'lowercase letters, digits, _ and -, at most 32, e.g. oncall').optional(),
    events: z.array(eventFilter).min(1).default(['*']),
  })
  .superRefine((w, context) => {
    const texts = typeof w.secret === 'string' ? [w.secret] : w.secret;
    texts.forEach((text, i) => {
      const problem = secretProblem(text, w.format);
      if (problem !== undefined) context.addIssue({ code: 'custom', path: typeof w.secret === 'string' ? ['secret'] : ['secret', i], message: problem });
    });
  })
  .transform((w) => ({
    id: w.id ?? defaultWebhookId(w.url),
    url: w.url,
    format: w.format,
    secrets: (typeof w.secret === 'string' ? [w.secret] : w.secret).map((text) => new WebhookSecret(text)),
    events: w.events.includes('*') ? ('*' as const) : new Set<EventType>(w.events as EventType[]),
  }));

export const notificationsSchema = z
  .strictObject({
    webhooks: z
      .array(webhookSchema)
      .max(16)
      .default([])
      .superRefine((hooks, context) => {
        const seen = new Set<string>();
        hooks.forEach((hook, i) => {
          if (seen.has(hook.id)) context.addIssue({ code: 'custom', path: [i, 'id'], message: `"${hook.id}" names two webhooks: give each its own id (two webhooks on one URL need one each)` });
          seen.add(hook.id);
        });
      }),
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
    // Deliveries in flight at once to one webhook from this instance, across the outbox shards it
    // owns (at most one per shard): per webhook, so a receiver that hangs holds only its own.
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
