// Where the expiry sweeper's next warning window starts (nextWarnedUntil): past the window
// when a page held all of it; otherwise just before the page's last expiry, so keys sharing
// it are read again, and past it only when a whole page shares one expiry (no endless loop).
import { describe, expect, it } from 'vitest';
import { nextWarnedUntil } from '../../../src/keys/key-expiry-sweeper.js';

const page = (...ms: number[]) => ms.map((expiresAtMs) => ({ expiresAtMs }));

describe('nextWarnedUntil', () => {
  it('moves to the window end when the page was not full', () => {
    expect(nextWarnedUntil(page(110, 120), 3, 100, 500)).toBe(500);
    expect(nextWarnedUntil(page(), 3, 100, 500)).toBe(500);
  });

  it('stops just before the last expiry of a full page, so its ties are read again', () => {
    expect(nextWarnedUntil(page(110, 120, 130), 3, 100, 500)).toBe(129);
  });

  it('always moves forward, even when a whole page shares one expiry', () => {
    expect(nextWarnedUntil(page(101, 101, 101), 3, 100, 500)).toBe(101);
    for (const from of [0, 50, 99, 100]) expect(nextWarnedUntil(page(from + 1, from + 1, from + 1), 3, from, 500)).toBeGreaterThan(from);
  });
});
