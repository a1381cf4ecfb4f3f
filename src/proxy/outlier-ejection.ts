// Outlier ejection arithmetic (docs/upstreams.md, "Passive health"): pure functions of the
// settings and the times given, so the growth, the cap and the decay are tested without a
// clock or a timer.

export interface OutlierSettings {
  /** Consecutive connect failures, resets or 5xx answers that eject a target. */
  consecutiveFailures: number;
  baseEjectionMs: number;
  maxEjectionMs: number;
  /** At most this share of an agent's targets is ejected at once (and never all of them). */
  maxEjectedPercent: number;
}

/** How long the `ejections`-th ejection (1 for the first) lasts: base × ejections, capped at max. */
export function ejectionDurationMs(ejections: number, settings: OutlierSettings): number {
  return Math.min(settings.baseEjectionMs * ejections, settings.maxEjectionMs);
}

/**
 * The ejection count a target carries into its next ejection: one less for every base
 * interval it spent back in service, so a target that failed once long ago starts again at
 * the base interval, while one that flaps keeps its growing interval.
 */
export function decayedEjections(ejections: number, inServiceMs: number, settings: OutlierSettings): number {
  if (ejections === 0) return 0;
  return Math.max(0, ejections - Math.floor(Math.max(0, inServiceMs) / settings.baseEjectionMs));
}

/** Whether one more target may be ejected while `ejectedNow` of `targetCount` are. */
export function mayEjectAnother(ejectedNow: number, targetCount: number, settings: OutlierSettings): boolean {
  if (ejectedNow + 1 >= targetCount) return false;
  return (ejectedNow + 1) * 100 <= targetCount * settings.maxEjectedPercent;
}
