import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isoTimestampCache } from '../../src/clock.js';

describe('isoTimestampCache', () => {
  it('is Date#toISOString for any millisecond, asked in any order and repeatedly', () => {
    // Includes repeats (the cached path) and jumps back and forth (the refresh path).
    const ms = fc.integer({ min: 0, max: 4_102_444_800_000 });
    fc.assert(
      fc.property(fc.array(fc.oneof(ms, fc.constant(1_700_000_000_000), fc.constant(1_700_000_000_001)), { minLength: 1, maxLength: 20 }), (stamps) => {
        const isoTimestamp = isoTimestampCache();
        for (const stamp of stamps) expect(isoTimestamp(stamp)).toBe(new Date(stamp).toISOString());
      }),
    );
  });

  it('agrees with Date at the edges: second and year boundaries, fractions, six-digit years, before 1970, invalid', () => {
    const isoTimestamp = isoTimestampCache();
    const edges = [0, 999, 1000, 1_700_000_000_999, 1_700_000_001_000, 1_767_225_599_999, 1_767_225_600_000, 1_700_000_000_123.9, 253_402_300_799_999, 253_402_300_800_000, 8.64e15, -1, -1000.5];
    for (const stamp of edges) expect(isoTimestamp(stamp)).toBe(new Date(stamp).toISOString());
    for (const invalid of [Number.NaN, 8.64e15 + 1, Number.POSITIVE_INFINITY]) {
      expect(() => isoTimestamp(invalid)).toThrow(RangeError);
      expect(() => new Date(invalid).toISOString()).toThrow(RangeError);
    }
  });

  it('agrees with Date for any run of times, fractional milliseconds included', () => {
    const stamp = fc.double({ min: -1e12, max: 8.64e15, noNaN: true });
    fc.assert(
      fc.property(fc.array(stamp, { minLength: 1, maxLength: 20 }), (stamps) => {
        const isoTimestamp = isoTimestampCache();
        for (const value of stamps) expect(isoTimestamp(value)).toBe(new Date(value).toISOString());
      }),
    );
  });
});
