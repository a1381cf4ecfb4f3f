// The file store's expiry index for the expiry sweeper: the keys with an expiry, sorted once
// per load of the file (key-file-format.ts), so a sweep is a binary search and a walk over
// the keys it returns. The sweeper's two marks (how far key.expiring warnings and key.expired
// announcements went) are kept in a small file beside the key file, written by the one
// gateway that serves it, so a restart neither warns again nor forgets what expired while it
// was down (docs/notifications-events.md, "Key expiry").
import { readTextIfExists, writeFileAtomic } from '../files.js';
import type { KeyIndex } from './key-file-format.js';
import type { ExpiryEntry, KeyExpiryIndex } from './key-store.js';

/** Expiries older than this when a gateway starts are not announced (as the Redis store's unannounced set keeps). */
export const ANNOUNCE_LOOKBACK_MS = 86_400_000;

/** `keys.json` → `keys.expiry-marks.json`. */
export function marksPathFor(path: string): string {
  return path.endsWith('.json') ? `${path.slice(0, -'.json'.length)}.expiry-marks.json` : `${path}.expiry-marks.json`;
}

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

function markOf(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : 0;
}

/** `marksPath` undefined: the marks live only in this process (one-shot use). */
export function fileExpiryIndex(current: () => KeyIndex, startedAtMs: number, marksPath?: string): KeyExpiryIndex {
  let announcedUntil = startedAtMs;
  let warnedUntil = 0;
  let loaded: Promise<void> | undefined;
  const load = async (): Promise<void> => {
    if (marksPath === undefined) return;
    let saved: { announced_until?: unknown; warned_until?: unknown } = {};
    try {
      saved = JSON.parse((await readTextIfExists(marksPath)) ?? '{}') as typeof saved;
    } catch {
      // A damaged file: start as a first run would; the dedupe keys cover the overlap.
    }
    if (saved.announced_until !== undefined) announcedUntil = Math.max(markOf(saved.announced_until), startedAtMs - ANNOUNCE_LOOKBACK_MS);
    warnedUntil = markOf(saved.warned_until);
  };
  const save = async (): Promise<void> => {
    if (marksPath !== undefined) await writeFileAtomic(marksPath, `${JSON.stringify({ announced_until: announcedUntil, warned_until: warnedUntil })}\n`);
  };
  const ready = () => (loaded ??= load());
  return {
    async expiringBetween(afterMs, toMs, limit) {
      return between(current(), afterMs, toMs, limit);
    },
    async expiredUnannounced(nowMs, limit) {
      await ready();
      return between(current(), announcedUntil, nowMs, limit);
    },
    async markAnnounced(announced) {
      await ready();
      const before = announcedUntil;
      for (const entry of announced) announcedUntil = Math.max(announcedUntil, entry.expiresAtMs);
      if (announcedUntil !== before) await save();
    },
    async readWarnedUntil() {
      await ready();
      return warnedUntil;
    },
    async writeWarnedUntil(ms) {
      await ready();
      if (ms === warnedUntil) return;
      warnedUntil = ms;
      await save();
    },
  };
}
