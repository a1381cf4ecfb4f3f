import { describe, expect, it } from 'vitest';
import { LeaseBook, MAX_LEASE_MS, MAX_LEASE_UNITS, type LeaseGrant } from '../../../src/ratelimit/rate-limit-leases.js';
import type { RateWindow } from '../../../src/ratelimit/rate-limiter.js';

const WINDOWS: RateWindow[] = [{ name: 'minute', limit: 1_000, windowMs: 60_000 }, { name: 'day', limit: 50_000, windowMs: 86_400_000 }];
const SERVER_NOW = 1_700_000_000_250;

function grant(units: number, validMs = 600): LeaseGrant {
  return { units, validMs, serverNowMs: SERVER_NOW, remaining: [900, 40_000], resetMs: [0, 0], oldestMs: [30_000, 80_000_000] };
}

describe('LeaseBook', () => {
  it('asks for nothing at first sight, then doubles while leases run out within their bucket, capped', () => {
    const book = new LeaseBook();
    expect(book.wanted('s', WINDOWS, 2, 0)).toBe(0);
    book.granted('s', WINDOWS, 0, grant(0), false);
    expect(book.wanted('s', WINDOWS, 2, 10)).toBe(2);
    book.granted('s', WINDOWS, 10, grant(2), true);
    expect(book.take('s', WINDOWS, 11)).toBeDefined();
    expect(book.take('s', WINDOWS, 12)).toBeDefined();
    expect(book.take('s', WINDOWS, 13)).toBeUndefined();
    expect(book.wanted('s', WINDOWS, 1, 13)).toBe(5);
    book.granted('s', WINDOWS, 13, grant(800), true);
    expect(book.wanted('s', WINDOWS, 1, 14)).toBe(MAX_LEASE_UNITS);
  });

  it('asks for what the last lease used once it expired, and for nothing while another call may bring one', () => {
    const book = new LeaseBook();
    book.granted('s', WINDOWS, 0, grant(10, 100), true);
    for (let i = 0; i < 4; i += 1) expect(book.take('s', WINDOWS, 50)).toBeDefined();
    expect(book.take('s', WINDOWS, 100)).toBeUndefined();
    expect(book.wanted('s', WINDOWS, 1, 100)).toBe(4);
    book.requesting('s');
    expect(book.wanted('s', WINDOWS, 1, 100)).toBe(0);
    book.failed('s');
    expect(book.wanted('s', WINDOWS, 1, 100)).toBe(4);
  });

  it('ends a lease with its bucket, and never later than MAX_LEASE_MS', () => {
    const book = new LeaseBook();
    book.granted('a', WINDOWS, 1_000, grant(5, 300), true);
    expect(book.take('a', WINDOWS, 1_299)).toBeDefined();
    expect(book.take('a', WINDOWS, 1_300)).toBeUndefined();
    book.granted('b', WINDOWS, 0, grant(5, 24 * 60_000), true);
    expect(book.take('b', WINDOWS, MAX_LEASE_MS - 1)).toBeDefined();
    expect(book.take('b', WINDOWS, MAX_LEASE_MS)).toBeUndefined();
  });

  it('reports the call\'s remaining plus the units not handed out yet, and its times moved on', () => {
    const book = new LeaseBook();
    book.granted('s', WINDOWS, 1_000, grant(3), true);
    const first = book.take('s', WINDOWS, 1_200)!;
    expect(first.allowed).toBe(true);
    expect(first.windows.map((w) => w.remaining)).toEqual([902, 40_002]);
    expect(first.windows.map((w) => w.recoverMs)).toEqual([29_800, 79_999_800]);
    expect(first.windows.every((w) => w.resetMs === 0)).toBe(true);
    expect(book.take('s', WINDOWS, 1_201)!.windows[0]!.remaining).toBe(901);
    expect(book.take('s', WINDOWS, 1_202)!.windows[0]!.remaining).toBe(900);
  });

  it('never serves a lease for other windows (a reload), and hands its unused units back with their buckets', () => {
    const book = new LeaseBook();
    book.granted('s', WINDOWS, 0, grant(7), true);
    book.take('s', WINDOWS, 1);
    const reloaded: RateWindow[] = WINDOWS.map((w) => ({ ...w }));
    expect(book.take('s', reloaded, 2)).toBeUndefined();
    // Still valid for its own windows: nothing to reclaim for them.
    expect(book.reclaim('s', 2, WINDOWS)).toBeUndefined();
    const refund = book.reclaim('s', 2, reloaded)!;
    expect(refund).toEqual({ subject: 's', windows: WINDOWS, units: 6, buckets: [Math.floor(SERVER_NOW / 1_000), Math.floor(SERVER_NOW / 1_440_000)] });
    expect(book.reclaim('s', 3, reloaded)).toBeUndefined();
  });

  it('returns the units a newer lease displaces, and keeps a lease a call without one answers after', () => {
    const book = new LeaseBook();
    book.granted('s', WINDOWS, 0, grant(4), true);
    // A call that did not ask: the lease with units stays, and what it got (none) changes nothing.
    expect(book.granted('s', WINDOWS, 1, grant(0), false)).toBeUndefined();
    expect(book.take('s', WINDOWS, 2)).toBeDefined();
    const displaced = book.granted('s', WINDOWS, 3, grant(9), true);
    expect(displaced?.units).toBe(3);
  });

  it('sweeps ended leases, returning what they did not use, and drains everything at close', () => {
    const book = new LeaseBook();
    book.granted('used', WINDOWS, 0, grant(1, 100), true);
    book.take('used', WINDOWS, 1);
    book.granted('idle', WINDOWS, 0, grant(6, 100), true);
    book.granted('live', WINDOWS, 0, grant(2, 900), true);
    const refunds = book.sweep(500);
    expect(refunds.map((r) => [r.subject, r.units])).toEqual([['idle', 6]]);
    expect(book.size).toBe(1);
    expect(book.drain().map((r) => [r.subject, r.units])).toEqual([['live', 2]]);
    expect(book.size).toBe(0);
  });
});
