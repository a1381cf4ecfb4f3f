// Event ids: `evt_` + a ULID (48-bit millisecond time, then 80 random bits, Crockford base 32),
// so ids sort by publication time (the events list pages by id) and never collide across
// instances. Within one millisecond a process increments the random part, keeping its own ids
// in publication order.
import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
let lastMs = -1;
let lastRandom: number[] = [];

export const EVENT_ID_PATTERN = /^evt_[0-9A-HJKMNP-TV-Z]{26}$/;

export function newEventId(nowMs: number): string {
  if (nowMs === lastMs) {
    // Increment the 16-digit random part as a base-32 number.
    for (let i = lastRandom.length - 1; i >= 0; i--) {
      if (lastRandom[i]! < 31) {
        lastRandom[i]! += 1;
        break;
      }
      lastRandom[i] = 0;
    }
  } else {
    lastMs = nowMs;
    const bytes = randomBytes(16);
    // The first digit stays below 16 so incrementing cannot overflow in practice.
    lastRandom = [...bytes].map((b, i) => (i === 0 ? b & 15 : b & 31));
  }
  return `${eventIdTimePrefix(nowMs)}${lastRandom.map((d) => ALPHABET[d]).join('')}`;
}

/** `evt_` and the time part of every id published at `ms`: ids below it are older. */
export function eventIdTimePrefix(ms: number): string {
  let time = '';
  let rest = Math.max(0, Math.floor(ms));
  for (let i = 0; i < 10; i++) {
    time = ALPHABET[rest % 32]! + time;
    rest = Math.floor(rest / 32);
  }
  return `evt_${time}`;
}

/** The publication time an id carries, in ms since the epoch. */
export function eventIdTimeMs(id: string): number {
  let ms = 0;
  for (const char of id.slice(4, 14)) ms = ms * 32 + ALPHABET.indexOf(char);
  return ms;
}
