// The key lifecycle's webhook events (docs/notifications-events.md, "Key events"): what
// KeyService tells the notifier after a write succeeded. Every body is built here from the
// record's public fields, so no event can carry the raw key or its hash.
import { NO_NOTIFIER, type EventType, type Notifier } from '../notifications/notifier.js';
import type { KeyRecord } from './key-record.js';
import { toPublicView } from './key-record-codec.js';

export type KeyEventType = Extract<EventType, `key.${string}`>;

/**
 * How long a key.expiring / key.expired stays deduplicated across instances: far longer than
 * two instances' sweeps of one expiry can lie apart.
 */
export const EXPIRY_DEDUPE_TTL_MS = 7 * 86_400_000;

export function keySubject(keyId: string): string {
  return `key:${keyId}`;
}

/** The fields every key event carries: the public identity and settings, never the hash (picked from the one public view). */
export function keyEventData(record: KeyRecord): Record<string, unknown> {
  const { key_id, account, plan, name, agents, expires_at } = toPublicView(record);
  return { key_id, account, plan, name, agents, expires_at };
}

export interface KeyEventsOptions {
  publisher: Pick<Notifier, 'publish'>;
  /** `notifications.key_expiry_warning`: key.expiring fires this long before the expiry. */
  expiryWarningMs: number;
}

/** The events of KeyService's writes. */
export class KeyEvents {
  constructor(readonly options: KeyEventsOptions) {}

  created(record: KeyRecord, nowMs: number): void {
    this.publish('key.created', record, {});
    this.expiringSoon(record, nowMs);
  }

  updated(record: KeyRecord, changed: readonly string[], nowMs: number): void {
    if (changed.length === 0) return;
    this.publish('key.updated', record, { changed: [...changed] });
    if (changed.includes('expires_at')) this.expiringSoon(record, nowMs);
  }

  /** `previous`: the old key, now expiring at the end of its grace period. */
  rotated(previous: KeyRecord, created: KeyRecord, nowMs: number): void {
    this.publish('key.rotated', previous, { replaced_by: created.keyId });
    this.expiringSoon(previous, nowMs);
    this.expiringSoon(created, nowMs);
  }

  revoked(record: KeyRecord): void {
    this.publish('key.revoked', record, { revoked_at: record.revokedAt });
  }

  /** key.expiring, once per key and expiry time (the sweeper uses the same dedupe key). */
  expiring(record: KeyRecord): void {
    this.publish('key.expiring', record, {}, expiryDedupe('key.expiring', record));
  }

  expired(record: KeyRecord): void {
    this.publish('key.expired', record, {}, expiryDedupe('key.expired', record));
  }

  /**
   * A key written with an expiry already inside the warning window (a short-lived key, an
   * expiry moved closer, a rotation's grace period): the sweeper's high-water mark is past
   * it, so the warning is sent here.
   */
  private expiringSoon(record: KeyRecord, nowMs: number): void {
    if (record.expiresAt === null || record.revokedAt !== null) return;
    const expiresAtMs = Date.parse(record.expiresAt);
    if (expiresAtMs > nowMs && expiresAtMs <= nowMs + this.options.expiryWarningMs) this.expiring(record);
  }

  private publish(type: KeyEventType, record: KeyRecord, extra: Record<string, unknown>, options?: { dedupeKey: string; dedupeTtlMs: number }): void {
    this.options.publisher.publish(type, keySubject(record.keyId), { ...keyEventData(record), ...extra }, options);
  }
}

/**
 * Once per (key, event, expiry time) across instances and across the sweeper and KeyService:
 * an expiry moved later and then near again is warned about again.
 */
export function expiryDedupe(type: 'key.expiring' | 'key.expired', record: KeyRecord): { dedupeKey: string; dedupeTtlMs: number } {
  return { dedupeKey: `${type}:${record.keyId}:${Date.parse(record.expiresAt ?? '') || 0}`, dedupeTtlMs: EXPIRY_DEDUPE_TTL_MS };
}

/** The events of a KeyService over `notifier`; undefined (none) while no webhook is configured. */
export function keyEventsOf(notifier: Notifier | undefined, expiryWarningMs: number): KeyEvents | undefined {
  return notifier === undefined || notifier === NO_NOTIFIER ? undefined : new KeyEvents({ publisher: notifier, expiryWarningMs });
}
