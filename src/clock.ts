// The injected clock: window math, key expiry and audit timestamps read time only through this.
export interface Clock {
  /** Wall-clock milliseconds since the epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/**
 * A `new Date(ms).toISOString()` that remembers the last millisecond it was asked: the
 * request log line and the audit record each stamp every request, and at thousands a second
 * most share their millisecond with the one before. One per caller: the log stamps the
 * current time and the audit record the request's start, and one shared cache would flip
 * between the two.
 */
export function isoTimestampCache(): (ms: number) => string {
  let cachedMs = Number.NaN;
  let cached = '';
  return (ms) => {
    if (ms !== cachedMs) {
      cached = new Date(ms).toISOString();
      cachedMs = ms;
    }
    return cached;
  };
}

/** A clock tests move by hand. */
export class ManualClock implements Clock {
  constructor(private currentMs = 1_700_000_000_000) {}
  now(): number {
    return this.currentMs;
  }
  advance(ms: number): void {
    this.currentMs += ms;
  }
  set(ms: number): void {
    this.currentMs = ms;
  }
}
