// The end user's hash (src/ratelimit/end-user-hash.ts): the remembered answer is always the
// hash itself (proven against SHA-256 computed here), and what is remembered stays bounded
// whatever ids the clients send.
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { END_USER_HASHES_KEPT, endUserHash, endUserHashesRemembered } from '../../../src/ratelimit/end-user-hash.js';

/** The definition: 128 bits of SHA-256 over subject, a NUL and the user id, base64url. */
function reference(subject: string, userId: string | null): string {
  return createHash('sha256').update(subject).update('\0').update(userId ?? '').digest('base64url').slice(0, 22);
}

describe('endUserHash', () => {
  it('equals the reference on first sight and when remembered, for any subject and id (unicode, NULs, none)', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 40 }), fc.option(fc.string({ unit: 'grapheme', maxLength: 256 })), (subject, userId) => {
        const expected = reference(subject, userId);
        expect(endUserHash(subject, userId)).toBe(expected);
        expect(endUserHash(subject, userId)).toBe(expected);
      }),
      { numRuns: 500 },
    );
  });

  it('keeps subjects apart: one id under two accounts hashes twice, and no id collides with the anonymous one', () => {
    expect(endUserHash('account:a', 'u-1')).not.toBe(endUserHash('account:b', 'u-1'));
    expect(endUserHash('account:a', null)).toBe(endUserHash('account:a', ''));
    expect(endUserHash('account:a', null)).not.toBe(endUserHash('account:a', 'u-1'));
    // The NUL separates the two parts: moving characters across it changes the hash.
    expect(endUserHash('account:a', 'b')).not.toBe(endUserHash('account:', 'ab'));
  });

  it(`remembers at most ${END_USER_HASHES_KEPT} end users, the oldest forgotten first, the answers unchanged`, () => {
    for (let i = 0; i < END_USER_HASHES_KEPT * 2; i += 1) endUserHash('account:cycling', `user-${i}`);
    expect(endUserHashesRemembered()).toBe(END_USER_HASHES_KEPT);
    // Forgotten and remembered ids alike still get their hash.
    for (const i of [0, END_USER_HASHES_KEPT * 2 - 1]) expect(endUserHash('account:cycling', `user-${i}`)).toBe(reference('account:cycling', `user-${i}`));
    expect(endUserHashesRemembered()).toBe(END_USER_HASHES_KEPT);
  });
});
