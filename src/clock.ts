// The injected clock: window math, key expiry and audit timestamps read time only through this.
export interface Clock {
  /** Wall-clock milliseconds since the epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** '000Z' … '999Z': the end of a timestamp, without formatting it per call. */
const MILLISECOND_TEXT: readonly string[] = Array.from({ length: 1000 }, (_, ms) => `${String(ms).padStart(3, '0')}Z`);

/**
 * `new Date(ms).toISOString()`, formatted once per second: the request log line and the
 * audit record each stamp every request, and V8 formats an ISO date through snprintf, a
 * costly call (decision 0012 has the count), while within one second only the millisecond
 * digits change. One cache per caller: the log stamps the current time and the
 * audit record the request's start, and one shared cache would flip between the two
 * seconds at every boundary.
 */
export function isoTimestampCache(): (ms: number) => string {
  let cachedSecond = Number.NaN;
  // "2026-11-21T19:31:22." — everything but the milliseconds and the "Z".
  let secondPrefix = '';
  return (ms) => {
    // Date truncates a fractional millisecond; outside [0, 8.64e15] (before 1970, invalid)
    // Date's own formatting (or its RangeError) applies.
    const whole = Math.trunc(ms);
    if (!(whole >= 0 && whole <= 8.64e15)) return new Date(ms).toISOString();
    const millisecond = whole % 1000;
    const second = whole - millisecond;
    if (second !== cachedSecond) {
      const iso = new Date(second).toISOString();
      secondPrefix = iso.slice(0, iso.length - 4);
      cachedSecond = second;
    }
    return secondPrefix + MILLISECOND_TEXT[millisecond]!;
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
