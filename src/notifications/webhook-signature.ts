// The webhook wire format (docs/notifications.md "Verifying a delivery"): the one body encoder,
// the signature headers of each webhook `format`, and the typed body decoder receivers (the
// tests, the example) use. Decision 0086 (docs/decisions/0086-standard-webhooks-by-default.md):
//   standard  Standard Webhooks: `webhook-id`, `webhook-timestamp` (unix s), and
//             `webhook-signature: v1,<base64 HMAC-SHA256(key, "<id>.<ts>.<body>")>`, one
//             space-separated `v1,` per secret while a secret rotates (decision 0068);
//   t-v1      the scheme of earlier versions: `webhook-id` and
//             `webhook-signature: t=<unix s>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>[,v1=…]`.
// Which key bytes a secret gives: WebhookSecret.signingKey (config/notifications-schema.ts).
import { createHmac } from 'node:crypto';
import type { WebhookFormat } from '../config/notifications-schema.js';
import type { NotificationEvent } from './notifier.js';

export const SIGNATURE_HEADER = 'webhook-signature';
export const ID_HEADER = 'webhook-id';
export const TIMESTAMP_HEADER = 'webhook-timestamp';

/** The body a receiver gets. */
export interface WebhookBody {
  id: string;
  type: string;
  created_at: string;
  data: Record<string, unknown>;
}

/** What one attempt signs: the event's id (the same on every retry), the attempt's time, the body as sent. */
export interface SignatureInput {
  id: string;
  body: string;
  /** HMAC keys, the first secret's first. */
  keys: readonly Buffer[];
  timestampSeconds: number;
}

/** The one encoder: `{ id, type, created_at, data }`, nothing else of the stored event (no subject, no state). */
export function encodeWebhookBody(event: NotificationEvent): string {
  return JSON.stringify({ id: event.id, type: event.type, created_at: event.created_at, data: event.data });
}

/** The signature headers of `format` (lower-case names, as HTTP/2 and the libraries read them). */
export function signatureHeaders(format: WebhookFormat, input: SignatureInput): Record<string, string> {
  return format === 'standard' ? standardHeaders(input) : tv1Headers(input);
}

function standardHeaders({ id, body, keys, timestampSeconds }: SignatureInput): Record<string, string> {
  const signed = `${id}.${timestampSeconds}.${body}`;
  return {
    [ID_HEADER]: id,
    [TIMESTAMP_HEADER]: String(timestampSeconds),
    [SIGNATURE_HEADER]: keys.map((key) => `v1,${createHmac('sha256', key).update(signed, 'utf8').digest('base64')}`).join(' '),
  };
}

function tv1Headers({ id, body, keys, timestampSeconds }: SignatureInput): Record<string, string> {
  const signed = `${timestampSeconds}.${body}`;
  return {
    [ID_HEADER]: id,
    [SIGNATURE_HEADER]: [`t=${timestampSeconds}`, ...keys.map((key) => `v1=${createHmac('sha256', key).update(signed, 'utf8').digest('hex')}`)].join(','),
  };
}

/** The body as its type, or undefined when it is not one. */
export function decodeWebhookBody(text: string): WebhookBody | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const { id, type, created_at: createdAt, data } = value as Record<string, unknown>;
  if (typeof id !== 'string' || typeof type !== 'string' || typeof createdAt !== 'string') return undefined;
  if (data === null || typeof data !== 'object' || Array.isArray(data)) return undefined;
  return { id, type, created_at: createdAt, data: data as Record<string, unknown> };
}
