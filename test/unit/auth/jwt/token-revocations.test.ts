// Revocations in memory (src/auth/jwt/token-revocations.ts) and the Redis layout's decoder:
// by jti and by sub, until a time, never shortened, lapsed ones gone; a stored field the
// decoder does not know is ignored, never trusted.
import { describe, expect, it } from 'vitest';
import { decodeRevocationField, MemoryTokenRevocations } from '../../../../src/auth/jwt/token-revocations.js';

describe('MemoryTokenRevocations', () => {
  it('refuses by jti and by sub until the time, and never shortens a revocation', async () => {
    let now = 1_000;
    const revocations = new MemoryTokenRevocations({ now: () => now });
    expect(revocations.refuses('s', 'j', now)).toBe(false);
    await revocations.revoke({ kind: 'jti', value: 'j', untilMs: 5_000 });
    await revocations.revoke({ kind: 'sub', value: 'person', untilMs: 3_000 });
    await revocations.revoke({ kind: 'sub', value: 'person', untilMs: 2_000 });
    expect(revocations.refuses('other', 'j', now)).toBe(true);
    expect(revocations.refuses('other', 'k', now)).toBe(false);
    expect(revocations.refuses('other', null, now)).toBe(false);
    expect(revocations.refuses('person', null, now)).toBe(true);
    now = 2_500;
    expect(revocations.refuses('person', 'k', now)).toBe(true);
    now = 3_000;
    expect(revocations.refuses('person', 'k', now)).toBe(false);
    expect(revocations.refuses('person', 'j', now)).toBe(true);
    now = 5_000;
    expect(revocations.refuses('person', 'j', now)).toBe(false);
  });
});

describe('decodeRevocationField', () => {
  it('decodes the two kinds and ignores anything else', () => {
    expect(decodeRevocationField('jti:abc:def', '123')).toEqual({ kind: 'jti', value: 'abc:def', untilMs: 123 });
    expect(decodeRevocationField('sub:x', '9')).toEqual({ kind: 'sub', value: 'x', untilMs: 9 });
    expect(decodeRevocationField('key:x', '9')).toBeUndefined();
    expect(decodeRevocationField('nocolon', '9')).toBeUndefined();
    expect(decodeRevocationField('jti:x', 'soon')).toBeUndefined();
    expect(decodeRevocationField('jti:x', '1.5')).toBeUndefined();
  });
});
