// The pieces of a validating single-pass JSON scan over bytes (tokens-used.ts): each returns
// the index after what it read, or FALLBACK when the bytes are not JSON it handles, so the
// caller can leave the body to JSON.parse. They never decide a body is invalid themselves.

/** Nesting deeper than this is left to JSON.parse (the scan recurses). */
export const MAX_DEPTH = 64;
/** Ask JSON.parse. */
export const FALLBACK = -1;

export const QUOTE = 0x22;
export const BACKSLASH = 0x5c;
export const COMMA = 0x2c;
export const COLON = 0x3a;
export const OPEN_OBJECT = 0x7b;
export const CLOSE_OBJECT = 0x7d;
export const OPEN_ARRAY = 0x5b;
export const CLOSE_ARRAY = 0x5d;
export const MINUS = 0x2d;
const DOT = 0x2e;
export const ZERO = 0x30;
export const NINE = 0x39;

export function skipSpace(b: Uint8Array, i: number): number {
  for (;;) {
    const c = b[i];
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return i;
    i += 1;
  }
}

/** The closing quote of a key without escapes; FALLBACK for an escape or a control character. */
export function plainKeyEnd(b: Uint8Array, i: number): number {
  for (;;) {
    const c = b[i];
    if (c === QUOTE) return i;
    if (c === undefined || c < 0x20 || c === BACKSLASH) return FALLBACK;
    i += 1;
  }
}

export function equalsAt(b: Uint8Array, start: number, end: number, word: Buffer): boolean {
  if (end - start !== word.length) return false;
  for (let k = 0; k < word.length; k++) if (b[start + k] !== word[k]) return false;
  return true;
}

/** The index after the value starting at `i` (which is not whitespace), or FALLBACK. */
export function skipValue(b: Uint8Array, i: number, depth: number): number {
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
export function skipString(b: Uint8Array, i: number): number {
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
