// key.expiring and key.expired (docs/notifications-events.md, "Key expiry"): every
// `intervalMs`, off the request path, one bounded page of each from the store's expiry index
// (KeyExpiryIndex), so a sweep costs O(keys expiring soon), never O(all keys):
//   key.expired   the keys the store saw expire and no sweeper announced yet;
//   key.expiring  the keys whose expiry entered (warnedUntil, now + warning] since the last
//                 sweep: the shared high-water mark `warnedUntil` moves forward, so each key
//                 is read once; a key written with an expiry already inside the window is
//                 warned about by KeyService itself (key-events.ts).
// Several gateways sweep the same store: the events' dedupe keys (expiryDedupe) make each
// one fire once across instances.
import type { Clock } from '../clock.js';
import type { Logger } from '../logger.js';
import type { KeyEvents } from './key-events.js';
import type { KeyExpiryIndex, KeyStore } from './key-store.js';

export interface KeyExpirySweeperOptions {
  index: KeyExpiryIndex;
  store: Pick<KeyStore, 'findById'>;
  events: KeyEvents;
  intervalMs: number;
  /** Keys of each kind read per sweep. */
  pageSize: number;
  clock: Clock;
  logger: Logger;
}

export interface SweepResult {
  expiring: number;
  expired: number;
}

export class KeyExpirySweeper {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private stopped = false;

  constructor(private readonly options: KeyExpirySweeperOptions) {}

  start(): void {
    if (this.timer !== undefined || this.stopped) return;
    this.timer = setInterval(() => {
      // A sweep still out (a slow store) is not joined by another.
      if (this.running !== undefined) return;
      this.running = this.sweep()
        .catch((error: unknown) => this.options.logger.warn({ err: error }, 'key expiry sweep failed; the next one tries again'))
        .finally(() => (this.running = undefined));
    }, this.options.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /** One sweep: at most `pageSize` keys of each kind. */
  async sweep(): Promise<SweepResult> {
    const { index, store, events, pageSize, clock } = this.options;
    const nowMs = clock.now();
    const result: SweepResult = { expiring: 0, expired: 0 };

    const due = await index.expiredUnannounced(nowMs, pageSize);
    for (const entry of due) {
      const record = await store.findById(entry.keyId);
      // Revoked, deleted, or given a later expiry since: nothing expired.
      if (!record || record.revokedAt !== null || record.expiresAt === null || Date.parse(record.expiresAt) > nowMs) continue;
      events.expired(record);
      result.expired++;
    }
    await index.markAnnounced(due);

    const warningMs = events.options.expiryWarningMs;
    // Expiries up to now are key.expired's; the window starts where the last sweep stopped.
    const fromMs = Math.max(await index.readWarnedUntil(), nowMs);
    const toMs = nowMs + warningMs;
    if (toMs <= fromMs) return result;
    const soon = await index.expiringBetween(fromMs, toMs, pageSize);
    for (const entry of soon) {
      const record = await store.findById(entry.keyId);
      if (!record || record.revokedAt !== null || record.expiresAt === null || Date.parse(record.expiresAt) !== entry.expiresAtMs) continue;
      events.expiring(record);
      result.expiring++;
    }
    await index.writeWarnedUntil(nextWarnedUntil(soon, pageSize, fromMs, toMs));
    return result;
  }
}

/**
 * Where the next sweep's window starts: the window's end when the page held all of it;
 * otherwise just before the page's last expiry, so keys sharing it are read again (their
 * dedupe keys keep them single) — unless the whole page shares one expiry, then past it.
 */
export function nextWarnedUntil(page: readonly { expiresAtMs: number }[], pageSize: number, fromMs: number, toMs: number): number {
  if (page.length < pageSize) return toMs;
  const last = page[page.length - 1]!.expiresAtMs;
  return last - 1 > fromMs ? last - 1 : last;
}
