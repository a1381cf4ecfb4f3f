// The file store's expiry index for the expiry sweeper: the keys with an expiry, sorted once
// per load of the file (key-file-format.ts), so a sweep is a binary search and a walk over
// the keys it returns. The sweeper's marks live in this process: the file store serves one
// host, and a restart announces expiries again only through the notifier's dedupe
// (docs/notifications-events.md, "Key expiry").
import type { KeyIndex } from './key-file-format.js';
import type { ExpiryEntry, KeyExpiryIndex } from './key-store.js';

/** Index of the first entry expiring after `afterMs`. */
function firstAfter(byExpiry: KeyIndex['byExpiry'], afterMs: number): number {
  let lo = 0;
  let hi = byExpiry.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (byExpiry[mid]!.expiresAtMs <= afterMs) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function between(index: KeyIndex, afterMs: number, toMs: number, limit: number): ExpiryEntry[] {
  const out: ExpiryEntry[] = [];
  const { byExpiry } = index;
  for (let i = firstAfter(byExpiry, afterMs); i < byExpiry.length && out.length < limit; i++) {
    const { expiresAtMs, record } = byExpiry[i]!;
    if (expiresAtMs > toMs) break;
    out.push({ keyId: record.keyId, expiresAtMs, ref: String(expiresAtMs) });
  }
  return out;
}

/** `startedAtMs`: expiries before it (while no gateway ran) are not announced. */
export function fileExpiryIndex(current: () => KeyIndex, startedAtMs: number): KeyExpiryIndex {
  let announcedUntil = startedAtMs;
  let warnedUntil = 0;
  return {
    async expiringBetween(afterMs, toMs, limit) {
      return between(current(), afterMs, toMs, limit);
    },
    async expiredUnannounced(nowMs, limit) {
      return between(current(), announcedUntil, nowMs, limit);
    },
    async markAnnounced(announced) {
      for (const entry of announced) announcedUntil = Math.max(announcedUntil, entry.expiresAtMs);
    },
    async readWarnedUntil() {
      return warnedUntil;
    },
    async writeWarnedUntil(ms) {
      warnedUntil = ms;
    },
  };
}
