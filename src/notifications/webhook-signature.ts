// The webhook wire format (docs/notifications.md "Verifying a delivery"): the one body encoder,
// the `Webhook-Signature` header, and the receiver's side (verify + a typed body decoder) that
// the tests and docs use. The signature is HMAC-SHA256(secret, "<t>.<body>") in hex with t the
// attempt's Unix seconds; during a secret rotation each configured secret adds a `v1=`
// (docs/decisions/0068-webhook-secret-rotation.md), so a receiver holding either accepts.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { NotificationEvent } from './notifier.js';

export const SIGNATURE_HEADER = 'webhook-signature';
export const ID_HEADER = 'webhook-id';
export const DEFAULT_TOLERANCE_SECONDS = 300;

/** The body a receiver gets. */
export interface WebhookBody {
  id: string;
  type: string;
  created_at: string;
  data: Record<string, unknown>;
}

/** The one encoder: `{ id, type, created_at, data }`, nothing else of the stored event (no subject, no state). */
export function encodeWebhookBody(event: NotificationEvent): string {
  return JSON.stringify({ id: event.id, type: event.type, created_at: event.created_at, data: event.data });
}

function hmacHex(secret: string, timestamp: number, body: string): string {
  return createHmac('sha256', secret).update(`${timestamp}.${body}`, 'utf8').digest('hex');
}

/** `t=<unix s>,v1=<hex>[,v1=<hex>]`: one v1 per secret, the first secret's first. */
export function signWebhook(body: string, secrets: readonly string[], timestampSeconds: number): string {
  return [`t=${timestampSeconds}`, ...secrets.map((secret) => `v1=${hmacHex(secret, timestampSeconds, body)}`)].join(',');
}

export type VerifyResult = { ok: true; body: WebhookBody } | { ok: false; reason: 'malformed_header' | 'timestamp_out_of_tolerance' | 'no_matching_signature' | 'malformed_body' };

/**
 * A receiver's check: the header's timestamp within `toleranceSeconds` of `nowSeconds`, and
 * some `v1=` equal (constant-time) to the HMAC under some accepted secret.
 */
export function verifyWebhook(input: {
  body: string;
  header: string | undefined;
  secrets: readonly string[];
  nowSeconds: number;
  toleranceSeconds?: number;
}): VerifyResult {
  const parts = (input.header ?? '').split(',').map((part) => part.trim());
  const timestamps = parts.filter((p) => p.startsWith('t=')).map((p) => p.slice(2));
  const signatures = parts.filter((p) => p.startsWith('v1=')).map((p) => p.slice(3));
  if (timestamps.length !== 1 || !/^\d{1,12}$/.test(timestamps[0]!) || signatures.length === 0) return { ok: false, reason: 'malformed_header' };
  const timestamp = Number(timestamps[0]);
  if (Math.abs(input.nowSeconds - timestamp) > (input.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS)) return { ok: false, reason: 'timestamp_out_of_tolerance' };
  let matched = false;
  for (const secret of input.secrets) {
    const expected = Buffer.from(hmacHex(secret, timestamp, input.body), 'utf8');
    for (const signature of signatures) {
      const presented = Buffer.from(signature, 'utf8');
      // No early exit: every pair is compared.
      if (presented.length === expected.length && timingSafeEqual(presented, expected)) matched = true;
    }
  }
  if (!matched) return { ok: false, reason: 'no_matching_signature' };
  const body = decodeWebhookBody(input.body);
  return body === undefined ? { ok: false, reason: 'malformed_body' } : { ok: true, body };
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
