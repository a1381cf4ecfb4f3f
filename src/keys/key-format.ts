// The API key format (docs/design.md, "Keys"; docs/keys.md): `ha_` + 32 base62 secret
// characters + 6 base62 characters of CRC32 over everything before them. The checksum lets the
// gateway (and secret scanners, offline) reject a mistyped or made-up key without a store
// lookup.
import { hash as oneShotHash, randomBytes } from 'node:crypto';

export const API_KEY_PREFIX = 'ha_';
export const KEY_ID_PREFIX = 'key_';
/** 32 base62 characters ≈ 190 bits of randomness (docs/design.md, "Keys", asks for ≥ 128). */
export const SECRET_LENGTH = 32;
/** 62^6 > 2^32, so six digits hold any CRC32 value. */
export const CHECKSUM_LENGTH = 6;
export const API_KEY_LENGTH = API_KEY_PREFIX.length + SECRET_LENGTH + CHECKSUM_LENGTH;
const KEY_ID_RANDOM_LENGTH = 16;

export const BASE62_ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

export const API_KEY_PATTERN = /^ha_[0-9A-Za-z]{38}$/;
export const KEY_ID_PATTERN = /^key_[0-9A-Za-z]{16}$/;
export const KEY_HASH_PATTERN = /^[0-9a-f]{64}$/;

// Char code → base62 digit value, or -1. A flat table keeps parsing branch-light.
const DIGIT_VALUE = new Int8Array(128).fill(-1);
for (let i = 0; i < BASE62_ALPHABET.length; i++) DIGIT_VALUE[BASE62_ALPHABET.charCodeAt(i)] = i;

/** Uniform base62 text from the CSPRNG (rejection sampling: no modulo bias). */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    const bytes = randomBytes(length * 2);
    for (let i = 0; i < bytes.length && out.length < length; i++) {
      const byte = bytes[i]!;
      // 248 = 4 × 62: bytes at or above it would favour the first digits.
      if (byte < 248) out += BASE62_ALPHABET[byte % 62];
    }
  }
  return out;
}

// CRC-32/ISO-HDLC (the zlib/gzip/PNG CRC32), table-driven over char codes. zlib.crc32
// computes the same value but must first encode the JS string, which costs more than the
// CRC itself on a 35-character key.
const CRC_TABLE = new Int32Array(256);
for (let n = 0; n < 256; n++) {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  CRC_TABLE[n] = c;
}

/** CRC32 of the first `end` characters of an ASCII string. */
export function crc32Ascii(text: string, end: number = text.length): number {
  let crc = -1;
  for (let i = 0; i < end; i++) crc = CRC_TABLE[(crc ^ text.charCodeAt(i)) & 0xff]! ^ (crc >>> 8);
  return (crc ^ -1) >>> 0;
}

/** Fixed-width, most-significant-digit-first base62 of an unsigned 32-bit value. */
export function encodeChecksum(value: number): string {
  let out = '';
  let rest = value >>> 0;
  for (let i = 0; i < CHECKSUM_LENGTH; i++) {
    out = BASE62_ALPHABET[rest % 62]! + out;
    rest = Math.floor(rest / 62);
  }
  return out;
}

/** CRC32 (IEEE, as zlib/gzip) of the ASCII text `ha_<secret>`, base62, 6 characters. */
export function checksumOf(prefixAndSecret: string): string {
  return encodeChecksum(crc32Ascii(prefixAndSecret));
}

/** Lowercase hex SHA-256 of the full raw key: the only form a key is ever stored in. */
export function hashApiKey(rawKey: string): string {
  return oneShotHash('sha256', rawKey, 'hex');
}

export function generateKeyId(): string {
  return KEY_ID_PREFIX + randomBase62(KEY_ID_RANDOM_LENGTH);
}

export interface GeneratedApiKey {
  rawKey: string;
  /** Random, not derived from the secret: knowing it reveals nothing about the key. */
  keyId: string;
  hash: string;
}

export function generateApiKey(): GeneratedApiKey {
  const body = API_KEY_PREFIX + randomBase62(SECRET_LENGTH);
  const rawKey = body + checksumOf(body);
  return { rawKey, keyId: generateKeyId(), hash: hashApiKey(rawKey) };
}

/**
 * True when `text` has the exact shape of an API key and its checksum matches. Runs on
 * every request before any lookup, so it avoids regexes and allocations.
 */
const EMBEDDED_API_KEY = /ha_[0-9A-Za-z]{38}/;

/**
 * Whether client text that the gateway would echo, log, audit or forward carries something
 * shaped like a key (request ids, context ids): such text is refused, never stored.
 */
export function containsApiKey(text: string): boolean {
  return text.length >= API_KEY_LENGTH && EMBEDDED_API_KEY.test(text);
}

export function parseApiKey(text: string): boolean {
  if (text.length !== API_KEY_LENGTH) return false;
  if (text.charCodeAt(0) !== 104 /* h */ || text.charCodeAt(1) !== 97 /* a */ || text.charCodeAt(2) !== 95 /* _ */) return false;
  const checksumStart = API_KEY_LENGTH - CHECKSUM_LENGTH;
  for (let i = API_KEY_PREFIX.length; i < checksumStart; i++) {
    const code = text.charCodeAt(i);
    if (code > 127 || DIGIT_VALUE[code]! < 0) return false;
  }
  let expected = 0;
  for (let i = checksumStart; i < API_KEY_LENGTH; i++) {
    const code = text.charCodeAt(i);
    const digit = code > 127 ? -1 : DIGIT_VALUE[code]!;
    if (digit < 0) return false;
    expected = expected * 62 + digit;
  }
  return crc32Ascii(text, checksumStart) === expected;
}

export function isKeyId(text: string): boolean {
  return KEY_ID_PATTERN.test(text);
}
