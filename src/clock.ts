// The injected clock: window math, key expiry and audit timestamps read time only through this.
export interface Clock {
  /** Wall-clock milliseconds since the epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

let isoCachedMs = Number.NaN;
let isoCached = '';

/**
 * `new Date(ms).toISOString()`, remembered for the last millisecond asked: the request log
 * line and the audit record each stamp every request, and at thousands a second most of them
 * share their millisecond with the one before.
 */
export function isoTimestamp(ms: number): string {
  if (ms !== isoCachedMs) {
    isoCached = new Date(ms).toISOString();
    isoCachedMs = ms;
  }
  return isoCached;
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
