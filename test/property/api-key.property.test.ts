// The key parser against the offline check docs/keys.md gives secret scanners (regex, then
// zlib's CRC32 in base62), and the Bearer header parser against a regex model: any string,
// near-keys included, gets the same verdict from both, and nothing throws.
import { crc32 } from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { extractBearerToken } from '../../src/auth/bearer-token.js';
import { API_KEY_LENGTH, BASE62_ALPHABET, generateApiKey, parseApiKey } from '../../src/keys/key-format.js';

/** docs/keys.md "Offline validation", transcribed from its Python. */
function documentedIsKey(key: string): boolean {
  if (!/^ha_[0-9A-Za-z]{38}$/.test(key)) return false;
  let value = 0;
  for (const ch of key.slice(35)) value = value * 62 + BASE62_ALPHABET.indexOf(ch);
  return crc32(Buffer.from(key.slice(0, 35), 'ascii')) === value;
}

function base62(value: number, digits: number): string {
  let out = '';
  for (let i = 0; i < digits; i++) {
    out = BASE62_ALPHABET[value % 62]! + out;
    value = Math.floor(value / 62);
  }
  return out;
}

const base62Char = fc.constantFrom(...BASE62_ALPHABET);
const secret = fc.string({ unit: base62Char, minLength: 32, maxLength: 32 });
/** Keys built with zlib's CRC32, not the gateway's table: valid by an independent construction. */
const independentlyValidKey = secret.map((s) => `ha_${s}${base62(crc32(Buffer.from(`ha_${s}`, 'ascii')), 6)}`);
/** Strings near the key shape: right length, mostly base62, sometimes a stray character or prefix. */
const nearKey = fc.oneof(
  fc.string({ unit: fc.oneof(base62Char, fc.constantFrom('_', '-', ' ', 'é', '\u0000', '\uD83C', 'ｈ')), minLength: API_KEY_LENGTH, maxLength: API_KEY_LENGTH }),
  fc.tuple(fc.constantFrom('ha_', 'HA_', 'ha-', 'hb_', 'ha_ha_', ''), fc.string({ unit: base62Char, minLength: 30, maxLength: 45 })).map(([p, s]) => p + s),
  independentlyValidKey.chain((key) =>
    fc.tuple(fc.nat({ max: API_KEY_LENGTH - 1 }), fc.constantFrom(...BASE62_ALPHABET, 'é', ' ')).map(([i, c]) => key.slice(0, i) + c + key.slice(i + 1)),
  ),
);

describe('API key parser (property)', () => {
  it('accepts every key whose checksum zlib agrees with', () => {
    fc.assert(
      fc.property(independentlyValidKey, (key) => {
        expect(parseApiKey(key)).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it('agrees with the documented offline check on any string, near-keys and junk alike', () => {
    fc.assert(
      fc.property(fc.oneof(nearKey, fc.string({ unit: 'binary', maxLength: 60 }), fc.string({ maxLength: 60 })), (text) => {
        expect(parseApiKey(text)).toBe(documentedIsKey(text));
      }),
      { numRuns: 3_000 },
    );
  });

  it('generated keys pass the documented check', () => {
    for (let i = 0; i < 200; i++) expect(documentedIsKey(generateApiKey().rawKey)).toBe(true);
  });
});

/** RFC 9110 credentials with a Bearer scheme, as docs/keys.md describes them; '' when absent. */
function modelBearer(header: string | undefined): string {
  if (header === undefined) return '';
  const match = /^[ \t]*bearer[ \t]+(.*?)[ \t]*$/is.exec(header);
  return match ? match[1]! : '';
}

const space = fc.constantFrom(' ', '\t', '  ', '');
const scheme = fc.constantFrom('Bearer', 'bearer', 'BEARER', 'bEaReR', 'Basic', 'Bearer:', 'Bear', 'Token', '');
const tokenish = fc.oneof(independentlyValidKey, fc.string({ unit: fc.oneof(base62Char, fc.constantFrom(' ', '\t', '"', ',', '=', 'é')), maxLength: 50 }));

describe('Bearer header parser (property)', () => {
  it('extracts exactly what the model does from any header, and never throws', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.tuple(space, scheme, space, tokenish, space).map((parts) => parts.join('')),
          fc.string({ unit: 'binary', maxLength: 80 }),
          fc.constant(undefined),
        ),
        (header) => {
          expect(extractBearerToken(header)).toBe(modelBearer(header));
        },
      ),
      { numRuns: 3_000 },
    );
  });

  it('finds a valid key behind any accepted spelling of the scheme and spacing', () => {
    fc.assert(
      fc.property(space, fc.constantFrom('Bearer', 'bearer', 'BEARER', 'bEARER'), fc.constantFrom(' ', '\t', ' \t '), independentlyValidKey, space, (lead, s, gap, key, trail) => {
        const token = extractBearerToken(`${lead}${s}${gap}${key}${trail}`);
        expect(token).toBe(key);
        expect(parseApiKey(token)).toBe(true);
      }),
      { numRuns: 300 },
    );
  });
});
