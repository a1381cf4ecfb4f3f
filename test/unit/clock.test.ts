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
});
