import { describe, expect, it } from 'vitest';
import { decayedEjections, ejectionDurationMs, mayEjectAnother, type OutlierSettings } from '../../../src/proxy/outlier-ejection.js';

const SETTINGS: OutlierSettings = { consecutiveFailures: 5, baseEjectionMs: 10_000, maxEjectionMs: 35_000, maxEjectedPercent: 50 };

describe('outlier ejection arithmetic', () => {
  it('grows by the base interval per ejection, capped at max_ejection', () => {
    expect([1, 2, 3, 4, 10].map((n) => ejectionDurationMs(n, SETTINGS))).toEqual([10_000, 20_000, 30_000, 35_000, 35_000]);
  });

  it('forgets one ejection per base interval spent back in service', () => {
    expect(decayedEjections(3, 0, SETTINGS)).toBe(3);
    expect(decayedEjections(3, 9_999, SETTINGS)).toBe(3);
    expect(decayedEjections(3, 10_000, SETTINGS)).toBe(2);
    expect(decayedEjections(3, 25_000, SETTINGS)).toBe(1);
    expect(decayedEjections(3, 1_000_000, SETTINGS)).toBe(0);
    expect(decayedEjections(0, 0, SETTINGS)).toBe(0);
  });

  it('never ejects the last target, and at most max_ejected_percent of them', () => {
    expect(mayEjectAnother(0, 1, { ...SETTINGS, maxEjectedPercent: 100 })).toBe(false);
    expect(mayEjectAnother(0, 2, SETTINGS)).toBe(true);
    expect(mayEjectAnother(1, 2, SETTINGS)).toBe(false);
    expect(mayEjectAnother(1, 2, { ...SETTINGS, maxEjectedPercent: 100 })).toBe(false);
    expect(mayEjectAnother(0, 3, SETTINGS)).toBe(true);
    expect(mayEjectAnother(1, 3, SETTINGS)).toBe(false);
    expect(mayEjectAnother(1, 4, SETTINGS)).toBe(true);
    expect(mayEjectAnother(2, 4, SETTINGS)).toBe(false);
    expect(mayEjectAnother(0, 3, { ...SETTINGS, maxEjectedPercent: 0 })).toBe(false);
  });
});
