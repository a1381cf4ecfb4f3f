// budget.threshold (docs/notifications-events.md, "Budget thresholds"): a subject's use of a
// request or token window crossing a configured fraction (`notifications.budget_thresholds`),
// read from the limiter's own answer, so the request path adds arithmetic on the decision it
// already has and no Redis call. Per (subject, window) this process keeps which fractions
// the use is past; a rise past one publishes it with the dedupe key
// `thr:<subject>:<policy>:<fraction>` for the window's length, so it fires once per crossing
// per window across every instance. An end user's windows do not fire (decision 0069): one
// event per end user would flood a receiver. A session's and the account's do (decision 0079):
// a runaway run is what an operator wants to hear of.
import type { Clock } from '../clock.js';
import type { Notifier } from '../notifications/notifier.js';
import { endUserHash } from './end-user-hash.js';
import type { WindowStatus } from './rate-limiter.js';

/** Subjects tracked at once; past it the table starts over (the dedupe keeps events single). */
export const MAX_TRACKED_SUBJECTS = 50_000;

/** The use (limit − remaining) at which each fraction counts as reached: ⌈fraction × limit⌉, at least 1. */
export function thresholdUnits(fractions: readonly number[], limit: number): number[] {
  // Rounded first so 0.7 × 10 is 7, not 7.000000000000001 → 8.
  return fractions.map((fraction) => Math.max(1, Math.ceil(Math.round(fraction * limit * 1e6) / 1e6)));
}

/**
 * How many thresholds `used` is past, from the `band` it was past before; `crossed` gets the
 * index of each threshold risen past. A fall re-arms the thresholds it went back under.
 */
export function nextBand(units: readonly number[], band: number, used: number, crossed: number[]): number {
  while (band < units.length && used >= units[band]!) crossed.push(band++);
  while (band > 0 && used < units[band - 1]!) band--;
  return band;
}

interface WindowTrack {
  name: string;
  limit: number;
  units: number[];
  band: number;
  /**
   * When each threshold last published (clock ms): a use hovering at a threshold of a
   * sliding window re-crosses it request after request, and the dedupe would drop all but
   * the first anyway, so this process does not hand them to the notifier within a window.
   */
  publishedAtMs: number[];
}

export class BudgetThresholds {
  private readonly subjects = new Map<string, WindowTrack[]>();
  private readonly crossed: number[] = [];

  constructor(
    private readonly fractions: readonly number[],
    private readonly publisher: Pick<Notifier, 'publish'>,
    private readonly clock: Clock,
  ) {}

  /**
   * One decision's window statuses for `subject`: publishes each threshold newly risen past.
   * A session's windows (`session`: the request's `context.session_id`) are tracked per session
   * and name it in the event; the account's (`account`: the key's account, for a key subject)
   * are tracked and published as the account's (decision 0079).
   */
  observe(subject: string, windows: readonly WindowStatus[], session?: string | null, account?: string): void {
    const tracks = this.tracksOf(subject);
    let sessionTracks: WindowTrack[] | undefined;
    let accountTracks: WindowTrack[] | undefined;
    for (let i = 0; i < windows.length; i++) {
      const status = windows[i]!;
      if (status.scope === 'user' || status.limit <= 0) continue;
      let within = tracks;
      let owner = subject;
      if (status.scope === 'session') {
        if (session == null) continue;
        within = sessionTracks ??= this.tracksOf(`${subject}\ns${session}`);
      } else if (status.scope === 'account' && account !== undefined && account !== subject) {
        owner = account;
        within = accountTracks ??= this.tracksOf(account);
      }
      let track = within[i];
      // New, or the plan changed under the subject: count from nothing again.
      if (track === undefined || track.limit !== status.limit || track.name !== status.name) {
        track = { name: status.name, limit: status.limit, units: thresholdUnits(this.fractions, status.limit), band: 0, publishedAtMs: this.fractions.map(() => -Infinity) };
        within[i] = track;
      }
      const used = status.limit - status.remaining;
      // The common case: nothing crossed either way.
      if ((track.band < track.units.length && used >= track.units[track.band]!) || (track.band > 0 && used < track.units[track.band - 1]!)) {
        track.band = nextBand(track.units, track.band, used, this.crossed);
        if (this.crossed.length > 0) this.publishCrossed(owner, status, track, used, status.scope === 'session' ? session! : undefined);
      }
    }
  }

  private tracksOf(key: string): WindowTrack[] {
    let tracks = this.subjects.get(key);
    if (tracks === undefined) {
      if (this.subjects.size >= MAX_TRACKED_SUBJECTS) this.subjects.clear();
      tracks = [];
      this.subjects.set(key, tracks);
    }
    return tracks;
  }

  private publishCrossed(subject: string, status: WindowStatus, track: WindowTrack, used: number, session: string | undefined): void {
    const nowMs = this.clock.now();
    for (const index of this.crossed) {
      if (nowMs - track.publishedAtMs[index]! < status.windowMs) continue;
      track.publishedAtMs[index] = nowMs;
      this.publish(subject, status, this.fractions[index]!, used, session);
    }
    this.crossed.length = 0;
  }

  private publish(subject: string, status: WindowStatus, fraction: number, used: number, session: string | undefined): void {
    const data: Record<string, unknown> = { subject, policy: status.name, fraction, window: status.windowMs, limit: status.limit, used };
    if (session !== undefined) data.session_id = session;
    // A session's dedupe key names its hash, not the id (bounded, and no client text in a Redis key).
    const instance = session === undefined ? '' : `${endUserHash(subject, session)}:`;
    this.publisher.publish('budget.threshold', subject, data, { dedupeKey: `thr:${subject}:${instance}${status.name}:${fraction}`, dedupeTtlMs: status.windowMs });
  }
}
