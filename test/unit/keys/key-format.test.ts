import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { crc32 } from 'node:zlib';
import { createHash } from 'node:crypto';
import { API_KEY_LENGTH, API_KEY_PATTERN, BASE62_ALPHABET, KEY_ID_PATTERN, checksumOf, crc32Ascii, encodeChecksum, generateApiKey, hashApiKey, parseApiKey } from '../../../src/keys/key-format.js';

describe('key format', () => {
  it('generates ha_ + 32 base62 + 6 base62 checksum, a random key_id and the sha256 hex', () => {
    const { rawKey, keyId, hash } = generateApiKey();
    expect(rawKey).toMatch(API_KEY_PATTERN);
    expect(rawKey).toHaveLength(API_KEY_LENGTH);
    expect(rawKey.startsWith('ha_')).toBe(true);
    expect(keyId).toMatch(KEY_ID_PATTERN);
    expect(hash).toBe(createHash('sha256').update(rawKey).digest('hex'));
    expect(hashApiKey(rawKey)).toBe(hash);
    expect(parseApiKey(rawKey)).toBe(true);
    // key_id is not derived from the secret
    expect(rawKey).not.toContain(keyId.slice(4));
  });

  it('checksum is CRC32 of "ha_<secret>" as 6 base62 digits, most significant first', () => {
    const body = 'ha_' + 'a'.repeat(32);
    let value = crc32(body);
    let digits = '';
    for (let i = 0; i < 6; i++) {
      digits = BASE62_ALPHABET[value % 62] + digits;
      value = Math.floor(value / 62);
    }
    expect(checksumOf(body)).toBe(digits);
    expect(parseApiKey(body + digits)).toBe(true);
    expect(encodeChecksum(0)).toBe('000000');
    expect(encodeChecksum(0xffffffff)).toBe('4gfFC3');
  });

  it('the table CRC32 equals zlib.crc32 (IEEE) on ASCII text', () => {
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom(...BASE62_ALPHABET, '_'), maxLength: 64 }), (text) => crc32Ascii(text) === crc32(text)),
      { numRuns: 500 },
    );
  });

  it('keys are distinct', () => {
    const keys = new Set(Array.from({ length: 500 }, () => generateApiKey().rawKey));
    expect(keys.size).toBe(500);
  });

  it('rejects wrong prefix, length, alphabet and checksum', () => {
    const { rawKey } = generateApiKey();
    expect(parseApiKey('')).toBe(false);
    expect(parseApiKey('ha_')).toBe(false);
    expect(parseApiKey('HA_' + rawKey.slice(3))).toBe(false);
    expect(parseApiKey('hb_' + rawKey.slice(3))).toBe(false);
    expect(parseApiKey(rawKey + 'A')).toBe(false);
    expect(parseApiKey(rawKey.slice(0, -1))).toBe(false);
    expect(parseApiKey(rawKey.slice(0, 10) + '-' + rawKey.slice(11))).toBe(false);
    expect(parseApiKey(rawKey.slice(0, 10) + 'é' + rawKey.slice(11))).toBe(false);
    expect(parseApiKey(` ${rawKey.slice(1)}`)).toBe(false);
    // a valid shape with a tampered checksum
    const last = rawKey.at(-1)!;
    expect(parseApiKey(rawKey.slice(0, -1) + (last === '0' ? '1' : '0'))).toBe(false);
    // a checksum that is all base62 but too large for 32 bits never matches
    expect(parseApiKey(rawKey.slice(0, -6) + 'zzzzzz')).toBe(false);
  });

  it('any single-character substitution of a valid key fails parse (property)', () => {
    const chars = [...BASE62_ALPHABET, '_', '-', ' ', '.', 'é', '\u0000'];
    fc.assert(
      fc.property(fc.integer({ min: 0, max: API_KEY_LENGTH - 1 }), fc.constantFrom(...chars), fc.integer({ min: 0, max: 1_000_000 }), (position, replacement, _seed) => {
        const { rawKey } = generateApiKey();
        fc.pre(rawKey[position] !== replacement);
        const mutated = rawKey.slice(0, position) + replacement + rawKey.slice(position + 1);
        return parseApiKey(mutated) === false;
      }),
      { numRuns: 3000 },
    );
  });

  it('any single-character insertion or deletion fails parse (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: API_KEY_LENGTH }), fc.constantFrom(...BASE62_ALPHABET), fc.boolean(), (position, inserted, insert) => {
        const { rawKey } = generateApiKey();
        fc.pre(insert || position < API_KEY_LENGTH);
        const mutated = insert ? rawKey.slice(0, position) + inserted + rawKey.slice(position) : rawKey.slice(0, position) + rawKey.slice(position + 1);
        return parseApiKey(mutated) === false;
      }),
      { numRuns: 1000 },
    );
  });
});
