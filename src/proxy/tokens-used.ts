// `tokens_used`, the audit record's token count (docs/design.md, "Usage audit records"), as
// the runner reports it: in a `/chat` answer's `metadata`, or in a stream's `done` event. One
// check of the value serves both (validTokens).
//
// A `/chat` answer is read by one pass over its bytes instead of JSON.parse: parsing builds
// every string and object of the answer only to read one number, per request. The scan
// validates the JSON it walks as it goes — strings, escapes, numbers, literals, nesting,
// nothing after the end — so for any body its answer is JSON.parse's; whatever it does not
// handle itself (a key with an escape, a top level that is not an object, very deep nesting)
// goes to JSON.parse. test/property/tokens-used.property.test.ts compares the two.

import { isTokenCount } from '../audit/audit-record.js';

/** Nesting deeper than this is left to JSON.parse (the scan recurses). */
const MAX_DEPTH = 64;
/** Ask JSON.parse. */
const FALLBACK = -1;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const MINUS = 0x2d;
const DOT = 0x2e;
const ZERO = 0x30;
const NINE = 0x39;

const METADATA = Buffer.from('metadata');
const TOKENS_USED = Buffer.from('tokens_used');

/** Tokens from a `/chat` answer's bytes: a non-negative integer, else null (unparsable, absent or not such a number). */
export function tokensFromChatResponse(chunks: Buffer[], length: number): number | null {
  const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, length);
  const scanned = scanTokensUsed(body);
  return scanned === undefined ? tokensByJsonParse(body) : scanned;
}

/** The plain way, and the reference the scan must agree with. */
export function tokensByJsonParse(body: Buffer): number | null {
  try {
    const parsed: unknown = JSON.parse(body.toString('utf8'));
    return validTokens((parsed as { metadata?: { tokens_used?: unknown } } | null)?.metadata?.tokens_used);
  } catch {
    return null;
  }
}

/** Tokens from a `done` event's data, by the same rule. */
export function tokensFromDoneData(data: string): number | null {
  try {
    const parsed: unknown = JSON.parse(data);
    return validTokens((parsed as { tokens_used?: unknown } | null)?.tokens_used);
  } catch {
    // A malformed done event still ends the stream; the token count is simply unknown.
    return null;
  }
}

/** The one check of a reported count: an integer from 0 to MAX_TOKENS_USED, else unknown (null): an invalid runner answer. */
function validTokens(tokens: unknown): number | null {
  return isTokenCount(tokens) ? tokens : null;
}

/**
 * The scan: tokens, or null when the body is valid JSON without usable tokens, or
 * undefined when JSON.parse has to decide — anything malformed included: the scan never
 * calls a body invalid itself.
 */
export function scanTokensUsed(b: Uint8Array): number | null | undefined {
  let i = skipSpace(b, 0);
  if (b[i] !== OPEN_OBJECT) return undefined;
  // Where the last top-level `metadata` member's last `tokens_used` number is, as JSON.parse
  // keeps the last of duplicate keys; -1 while there is none.
  let tokensStart = -1;
  let tokensEnd = -1;
  i = skipSpace(b, i + 1);
  if (b[i] === CLOSE_OBJECT) return finish(b, i + 1, -1, -1);
  for (;;) {
    if (b[i] !== QUOTE) return undefined;
    const keyEnd = plainKeyEnd(b, i + 1);
    if (keyEnd < 0) return undefined;
    const isMetadata = equalsAt(b, i + 1, keyEnd, METADATA);
    i = skipSpace(b, keyEnd + 1);
    if (b[i] !== COLON) return undefined;
    i = skipSpace(b, i + 1);
    if (isMetadata) {
      tokensStart = -1;
      tokensEnd = -1;
    }
    if (isMetadata && b[i] === OPEN_OBJECT) {
      // The metadata object, member by member.
      i = skipSpace(b, i + 1);
      if (b[i] !== CLOSE_OBJECT) {
        for (;;) {
          if (b[i] !== QUOTE) return undefined;
          const innerKeyEnd = plainKeyEnd(b, i + 1);
          if (innerKeyEnd < 0) return undefined;
          const isTokens = equalsAt(b, i + 1, innerKeyEnd, TOKENS_USED);
          i = skipSpace(b, innerKeyEnd + 1);
          if (b[i] !== COLON) return undefined;
          i = skipSpace(b, i + 1);
          const valueStart = i;
          i = skipValue(b, i, 2);
          if (i < 0) return undefined;
          if (isTokens) {
            const first = b[valueStart]!;
            const isNumber = first === MINUS || (first >= ZERO && first <= NINE);
            tokensStart = isNumber ? valueStart : -1;
            tokensEnd = isNumber ? i : -1;
          }
          i = skipSpace(b, i);
          if (b[i] === COMMA) {
            i = skipSpace(b, i + 1);
            continue;
          }
          if (b[i] === CLOSE_OBJECT) break;
          return undefined;
        }
      }
      i += 1;
    } else {
      i = skipValue(b, i, 1);
      if (i < 0) return undefined;
    }
    i = skipSpace(b, i);
    if (b[i] === COMMA) {
      i = skipSpace(b, i + 1);
      continue;
    }
    if (b[i] === CLOSE_OBJECT) return finish(b, i + 1, tokensStart, tokensEnd);
    return undefined;
  }
}

function finish(b: Uint8Array, end: number, tokensStart: number, tokensEnd: number): number | null | undefined {
  // Only whitespace may follow the top-level object.
  if (skipSpace(b, end) !== b.length) return undefined;
  if (tokensStart < 0) return null;
  return validTokens(numberValue(b, tokensStart, tokensEnd));
}

/** A validated JSON number's value: digits only are summed here, anything else via Number(). */
function numberValue(b: Uint8Array, start: number, end: number): number {
  if (end - start <= 15) {
    let value = 0;
    let i = start;
    for (; i < end; i++) {
      const c = b[i]!;
      if (c < ZERO || c > NINE) break;
      value = value * 10 + (c - ZERO);
    }
    if (i === end) return value;
  }
  return Number(Buffer.from(b.buffer, b.byteOffset + start, end - start).toString('latin1'));
}

function skipSpace(b: Uint8Array, i: number): number {
  for (;;) {
    const c = b[i];
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return i;
    i += 1;
  }
}

/** The closing quote of a key without escapes; FALLBACK for an escape or a control character. */
function plainKeyEnd(b: Uint8Array, i: number): number {
  for (;;) {
    const c = b[i];
    if (c === QUOTE) return i;
    if (c === undefined || c < 0x20 || c === BACKSLASH) return FALLBACK;
    i += 1;
  }
}

function equalsAt(b: Uint8Array, start: number, end: number, word: Buffer): boolean {
  if (end - start !== word.length) return false;
  for (let k = 0; k < word.length; k++) if (b[start + k] !== word[k]) return false;
  return true;
}

/** The index after the value starting at `i` (which is not whitespace), or FALLBACK. */
function skipValue(b: Uint8Array, i: number, depth: number): number {
  const c = b[i];
  if (c === QUOTE) return skipString(b, i + 1);
  if (c === OPEN_OBJECT || c === OPEN_ARRAY) return depth >= MAX_DEPTH ? FALLBACK : skipContainer(b, i, depth + 1);
  if (c === MINUS || (c !== undefined && c >= ZERO && c <= NINE)) return skipNumber(b, i);
  if (c === 0x74) return literalEnd(b, i, 'true');
  if (c === 0x66) return literalEnd(b, i, 'false');
  if (c === 0x6e) return literalEnd(b, i, 'null');
  return FALLBACK;
}

function skipContainer(b: Uint8Array, i: number, depth: number): number {
  const isObject = b[i] === OPEN_OBJECT;
  const close = isObject ? CLOSE_OBJECT : CLOSE_ARRAY;
  i = skipSpace(b, i + 1);
  if (b[i] === close) return i + 1;
  for (;;) {
    if (isObject) {
      if (b[i] !== QUOTE) return FALLBACK;
      i = skipString(b, i + 1);
      if (i < 0) return FALLBACK;
      i = skipSpace(b, i);
      if (b[i] !== COLON) return FALLBACK;
      i = skipSpace(b, i + 1);
    }
    i = skipValue(b, i, depth);
    if (i < 0) return FALLBACK;
    i = skipSpace(b, i);
    if (b[i] === COMMA) {
      i = skipSpace(b, i + 1);
      continue;
    }
    return b[i] === close ? i + 1 : FALLBACK;
  }
}

/** From just after the opening quote to just after the closing one; escapes checked. */
function skipString(b: Uint8Array, i: number): number {
  for (;;) {
    const c = b[i];
    if (c === QUOTE) return i + 1;
    if (c === undefined || c < 0x20) return FALLBACK;
    if (c === BACKSLASH) {
      const e = b[i + 1];
      if (e === 0x75) {
        if (!isHex(b[i + 2]) || !isHex(b[i + 3]) || !isHex(b[i + 4]) || !isHex(b[i + 5])) return FALLBACK;
        i += 6;
        continue;
      }
      // \" \\ \/ \b \f \n \r \t
      if (e !== QUOTE && e !== BACKSLASH && e !== 0x2f && e !== 0x62 && e !== 0x66 && e !== 0x6e && e !== 0x72 && e !== 0x74) return FALLBACK;
      i += 2;
      continue;
    }
    i += 1;
  }
}

function isHex(c: number | undefined): boolean {
  return c !== undefined && ((c >= ZERO && c <= NINE) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46));
}

/** -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
function skipNumber(b: Uint8Array, i: number): number {
  if (b[i] === MINUS) i += 1;
  if (b[i] === ZERO) {
    i += 1;
  } else {
    const start = i;
    i = skipDigits(b, i);
    if (i === start) return FALLBACK;
  }
  if (b[i] === DOT) {
    const start = i + 1;
    i = skipDigits(b, start);
    if (i === start) return FALLBACK;
  }
  if (b[i] === 0x65 || b[i] === 0x45) {
    i += 1;
    if (b[i] === 0x2b || b[i] === MINUS) i += 1;
    const start = i;
    i = skipDigits(b, i);
    if (i === start) return FALLBACK;
  }
  return i;
}

function skipDigits(b: Uint8Array, i: number): number {
  for (;;) {
    const c = b[i];
    if (c === undefined || c < ZERO || c > NINE) return i;
    i += 1;
  }
}

function literalEnd(b: Uint8Array, i: number, word: string): number {
  for (let k = 0; k < word.length; k++) if (b[i + k] !== word.charCodeAt(k)) return FALLBACK;
  return i + word.length;
}
