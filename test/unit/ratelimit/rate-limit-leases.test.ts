import { describe, expect, it } from 'vitest';
import { LeaseBook, MAX_LEASE_MS, MAX_LEASE_UNITS, RENEW_BEFORE_MS, type LeaseGrant } from '../../../src/ratelimit/rate-limit-leases.js';
import type { RateWindow } from '../../../src/ratelimit/rate-limiter.js';

const WINDOWS: RateWindow[] = [{ name: 'minute', limit: 1_000, windowMs: 60_000, kind: 'requests' as const, scope: 'subject' as const }, { name: 'day', limit: 50_000, windowMs: 86_400_000, kind: 'requests' as const, scope: 'subject' as const }];
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

describe('LeaseBook beside a token budget', () => {
  const BUDGETED: RateWindow[] = [{ name: 'minute', limit: 1_000, windowMs: 60_000, kind: 'requests' as const, scope: 'subject' as const }, { name: 'tokens-hour', limit: 100_000, windowMs: 3_600_000, kind: 'tokens' as const, scope: 'subject' as const }];
  const tokenGrant = (units: number, tokens: number, validMs = 600): LeaseGrant => ({
    units,
    tokens,
    validMs,
    serverNowMs: SERVER_NOW,
    remaining: [900, 50_000],
    resetMs: [0, 0],
    oldestMs: [30_000, 3_000_000],
  });

  it('asks for no lease until an answer was charged, then for units and as many average answers of tokens', () => {
    const book = new LeaseBook();
    book.granted('s', BUDGETED, 0, tokenGrant(0, 0), false);
    expect(book.wanted('s', BUDGETED, 1, 10)).toBe(0);
    // No lease yet: the whole charge is the caller's to send.
    expect(book.charge('s', BUDGETED, { tokens: 40 }, 10).tokens).toBe(40);
    expect(book.wanted('s', BUDGETED, 1, 11)).toBe(1);
    expect(book.tokensWanted('s', 1)).toBe(40);
    // The average follows later answers with a weight of 1/8.
    expect(book.charge('s', BUDGETED, { tokens: 120 }, 12).tokens).toBe(120);
    expect(book.tokensWanted('s', 4)).toBe(4 * 50);
  });

  it('admits only while it has a unit and a token; charges pay from the reserve first', () => {
    const book = new LeaseBook();
    book.granted('s', BUDGETED, 0, tokenGrant(0, 0), false);
    book.charge('s', BUDGETED, { tokens: 30 }, 1);
    book.granted('s', BUDGETED, 2, tokenGrant(5, 45), true);
    const first = book.take('s', BUDGETED, 3)!;
    // The budget's remaining counts the reserve not spent yet; the request window its units.
    expect(first.windows.map((w) => w.remaining)).toEqual([904, 50_045]);
    expect(book.charge('s', BUDGETED, { tokens: 30 }, 4).tokens).toBe(0);
    expect(book.take('s', BUDGETED, 5)!.windows[1]!.remaining).toBe(50_015);
    // 15 tokens left: an answer of 30 pays 15 from it, 15 go to the batched charge.
    expect(book.charge('s', BUDGETED, { tokens: 30 }, 6).tokens).toBe(15);
    expect(book.take('s', BUDGETED, 7)).toBeUndefined();
    // It can admit no more: its 3 unused units go back with the next call, without tokens.
    expect(book.reclaim('s', 8, BUDGETED)).toEqual({ subject: 's', windows: BUDGETED, units: 3, buckets: [Math.floor(SERVER_NOW / 1_000), Math.floor(SERVER_NOW / 60_000)] });
  });

  it('gives back unused tokens with unused units: when the units ran out, displaced, swept, drained; not after its bucket', () => {
    const book = new LeaseBook();
    book.granted('s', BUDGETED, 0, tokenGrant(0, 0), false);
    book.charge('s', BUDGETED, { tokens: 10 }, 1);
    book.granted('s', BUDGETED, 2, tokenGrant(1, 30), true);
    book.take('s', BUDGETED, 3);
    // No unit left, 30 tokens: nothing to admit from, so the rest goes back with the next call.
    expect(book.reclaim('s', 4, BUDGETED)).toMatchObject({ units: 0, tokens: 30 });
    // Charges after the lease gave its tokens back go to the batched charge.
    expect(book.charge('s', BUDGETED, { tokens: 10 }, 5).tokens).toBe(10);
    book.granted('s', BUDGETED, 6, tokenGrant(4, 40), true);
    expect(book.granted('s', BUDGETED, 7, tokenGrant(2, 20), true)).toMatchObject({ units: 4, tokens: 40 });
    // After its bucket a reserve pays nothing more; the sweep gives back units and tokens.
    expect(book.charge('s', BUDGETED, { tokens: 5 }, 7 + 600).tokens).toBe(5);
    expect(book.sweep(7 + 600).map((r) => [r.units, r.tokens])).toEqual([[2, 20]]);
    book.granted('t', BUDGETED, 0, tokenGrant(3, 9), true);
    expect(book.drain().map((r) => [r.subject, r.units, r.tokens])).toEqual([['t', 3, 9]]);
  });
});

describe('LeaseBook beside a cost budget (decision 0076)', () => {
  const COSTED: RateWindow[] = [
    { name: 'minute', limit: 1_000, windowMs: 60_000, kind: 'requests' as const, scope: 'subject' as const },
    { name: 'tokens-hour', limit: 50_000, windowMs: 3_600_000, kind: 'tokens' as const, scope: 'subject' as const },
    { name: 'cost-month', limit: 1_000_000, windowMs: 30 * 86_400_000, kind: 'cost' as const, scope: 'subject' as const },
  ];
  const costGrant = (units: number, tokens: number, cost: number): LeaseGrant => ({
    units,
    tokens,
    cost,
    validMs: 600,
    serverNowMs: SERVER_NOW,
    remaining: [900, 50_000, 500_000],
    resetMs: [0, 0, 0],
    oldestMs: [30_000, 3_000_000, 80_000_000],
  });

  it('asks for no lease until an answer\'s cost was charged, then for micro-dollars of as many average answers (at least one)', () => {
    const book = new LeaseBook();
    book.granted('s', COSTED, 0, costGrant(0, 0, 0), false);
    // Tokens alone are not enough: the cost reserve is not sized yet.
    book.charge('s', COSTED, { tokens: 40 }, 1);
    expect(book.wanted('s', COSTED, 1, 2)).toBe(0);
    book.charge('s', COSTED, { tokens: 40, microUsd: 80 }, 3);
    expect(book.wanted('s', COSTED, 1, 4)).toBe(1);
    expect([book.tokensWanted('s', 3), book.costWanted('s', 3)]).toEqual([120, 240]);
    // Free answers (a model priced at 0) still lease, with a reserve of one micro-dollar.
    const free = new LeaseBook();
    free.granted('f', COSTED, 0, costGrant(0, 0, 0), false);
    free.charge('f', COSTED, { tokens: 10, microUsd: 0 }, 1);
    expect([free.wanted('f', COSTED, 1, 2), free.costWanted('f', 5)]).toEqual([1, 1]);
  });

  it('admits only while it has a unit, a token and a micro-dollar; charges pay both reserves first; the rest goes back apart', () => {
    const book = new LeaseBook();
    book.granted('s', COSTED, 0, costGrant(0, 0, 0), false);
    book.charge('s', COSTED, { tokens: 10, microUsd: 50 }, 1);
    book.granted('s', COSTED, 2, costGrant(5, 100, 120), true);
    // Each budget's remaining counts its own reserve not spent yet.
    expect(book.take('s', COSTED, 3)!.windows.map((w) => w.remaining)).toEqual([904, 50_100, 500_120]);
    expect(book.charge('s', COSTED, { tokens: 10, microUsd: 50 }, 4)).toEqual({ tokens: 0, microUsd: 0 });
    book.take('s', COSTED, 5);
    // 70 micro-dollars left: an answer of 100 pays 70 from it, 30 go to the batched charge.
    expect(book.charge('s', COSTED, { tokens: 10, microUsd: 100, toolCalls: null }, 6)).toEqual({ tokens: 0, microUsd: 30, toolCalls: null });
    // No micro-dollar left: it admits nothing more, though it has units and tokens.
    expect(book.take('s', COSTED, 7)).toBeUndefined();
    expect(book.reclaim('s', 8, COSTED)).toMatchObject({ units: 3, tokens: 80 });
    expect(book.reclaim('s', 8, COSTED)?.cost).toBeUndefined();
    // A displaced lease gives back its micro-dollars with its units and tokens.
    book.granted('s', COSTED, 9, costGrant(4, 40, 200), true);
    expect(book.granted('s', COSTED, 10, costGrant(2, 20, 100), true)).toMatchObject({ units: 4, tokens: 40, cost: 200 });
    expect(book.drain().map((r) => [r.units, r.tokens, r.cost])).toEqual([[2, 20, 100]]);
  });

  it('marks a lease due once most of its micro-dollars are spent, and renews with a cost reserve', () => {
    const book = new LeaseBook();
    book.granted('s', COSTED, 0, costGrant(0, 0, 0), false);
    book.charge('s', COSTED, { tokens: 1, microUsd: 10 }, 1);
    book.granted('s', COSTED, 2, costGrant(100, 1_000, 100), true);
    book.take('s', COSTED, 3);
    expect(book.hasDue).toBe(false);
    book.charge('s', COSTED, { tokens: 1, microUsd: 76 }, 4);
    book.take('s', COSTED, 5);
    expect(book.takeDue()).toEqual(['s']);
    const renewal = book.renewal('s', 6)!;
    expect(renewal.cost).toBe(Math.ceil(renewal.units * (10 + (76 - 10) / 8)));
  });
});

describe('LeaseBook renewal ahead (decision 0029)', () => {
  it('marks a lease due once near its end, and renews it from its end (server time), sized by the pace', () => {
    const book = new LeaseBook();
    // Valid 600 ms from local 0: due from local 350 on.
    book.granted('s', WINDOWS, 0, grant(1_000), true);
    for (let t = 1; t <= 300; t += 1) expect(book.take('s', WINDOWS, t)).toBeDefined();
    expect(book.hasDue).toBe(false);
    expect(book.take('s', WINDOWS, 600 - RENEW_BEFORE_MS)).toBeDefined();
    expect(book.takeDue()).toEqual(['s']);
    // Once per lease.
    expect(book.take('s', WINDOWS, 400)).toBeDefined();
    expect(book.hasDue).toBe(false);
    const renewal = book.renewal('s', 400);
    // 302 units in 400 ms, for the 200 ms left and the 1 s bucket after.
    expect(renewal).toMatchObject({ units: Math.ceil((302 / 400) * 1_200), tokens: 0, leaseFromMs: SERVER_NOW + 600 });
    // On its way: no second one.
    expect(book.renewal('s', 401)).toBeUndefined();
  });

  it('replaces the lease with the answer: the unused units of the old one go back to its bucket, those of the new one later to the bucket ahead', () => {
    const book = new LeaseBook();
    book.granted('s', WINDOWS, 0, grant(1_000), true);
    for (let t = 1; t <= 400; t += 1) book.take('s', WINDOWS, t);
    book.takeDue();
    book.renewal('s', 400);
    // The script counted it 200 ms ahead (at the old lease's end, in the next minute bucket).
    const next = { ...grant(700, 1_200), serverNowMs: SERVER_NOW + 400, aheadMs: 200 };
    const displaced = book.renewed('s', WINDOWS, 400, next);
    expect(displaced).toMatchObject({ units: 600, buckets: [Math.floor(SERVER_NOW / 1_000), Math.floor(SERVER_NOW / 1_440_000)] });
    // The new lease admits at once, until 400 + min(1_200, 200 + MAX_LEASE_MS).
    expect(book.take('s', WINDOWS, 401)).toBeDefined();
    expect(book.stateOf('s')).toMatchObject({ units: 699, granted: 700, expiresAtMs: 1_600, renewing: false });
    const [refund] = book.drain();
    expect(refund).toMatchObject({ units: 699, buckets: [Math.floor((SERVER_NOW + 600) / 1_000), Math.floor((SERVER_NOW + 600) / 1_440_000)] });
  });

  it('renews early when the units would not last to the end of the lease, asking for enough to reach it', () => {
    const book = new LeaseBook();
    book.granted('s', WINDOWS, 0, grant(100, 1_000), true);
    // 80 units in 160 ms: 20 left, 840 ms to go at one per 2 ms.
    for (let i = 1; i <= 80; i += 1) book.take('s', WINDOWS, 2 * i);
    expect(book.takeDue()).toEqual(['s']);
    expect(book.renewal('s', 160)).toMatchObject({ units: Math.ceil(1.5 * (80 / 160) * 840), leaseFromMs: 0 });
  });

  it('a renewal that fails or brings no units leaves the lease as it was, and it is not renewed again', () => {
    for (const outcome of ['failed', 'empty'] as const) {
      const book = new LeaseBook();
      book.granted('s', WINDOWS, 0, grant(10, 1_000), true);
      for (let t = 1; t <= 8; t += 1) book.take('s', WINDOWS, t);
      expect(book.takeDue()).toEqual(['s']);
      expect(book.renewal('s', 8)).toBeDefined();
      if (outcome === 'failed') book.failed('s');
      else expect(book.renewed('s', WINDOWS, 8, grant(0))).toBeUndefined();
      expect(book.stateOf('s')).toMatchObject({ units: 2, granted: 10, requesting: false, renewing: true });
      expect(book.take('s', WINDOWS, 9)).toBeDefined();
      expect(book.take('s', WINDOWS, 10)).toBeDefined();
      expect(book.take('s', WINDOWS, 11)).toBeUndefined();
      expect(book.hasDue).toBe(false);
    }
  });

  it('off: never marks a lease due', () => {
    const book = new LeaseBook(false);
    book.granted('s', WINDOWS, 0, grant(10, 1_000), true);
    for (let t = 1; t <= 10; t += 1) book.take('s', WINDOWS, t * 99);
    expect(book.hasDue).toBe(false);
  });
});
