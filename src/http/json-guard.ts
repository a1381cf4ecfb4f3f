// JSON.parse, plus two refusals it does not make (docs/security.md):
// - nesting deeper than `limits.max_json_depth`: parsing a body nested hundreds of thousands
//   of levels deep takes long enough to stall every other request on the event loop;
// - a key repeated within one object: JSON.parse keeps the last value, the body is forwarded
//   as sent, and a runner that keeps the first would act on a value that was never validated.
// No reviver and no second parse. How the cost was kept down, and measured, is decision
// docs/decisions/0017-hostile-json-checked-around-parse.md.
// A parsed key holding a backslash sends the text to an exact reader instead: V8's JSON.parse
// in Node 24 and 26 can misread an escaped key as such a key (nodejs/node#63785,
// src/http/exact-json-reader.ts, decision docs/decisions/0032-v8-escaped-key-bug.md).
import { readJsonExactly } from './exact-json-reader.js';
import { repeatedKey, tooDeep } from './json-refusals.js';

/**
 * Up to this many UTF-16 units a body is parsed first and its depth read from the parsed
 * value: nesting in so short a text is at most half its length, which JSON.parse gets
 * through in well under a millisecond. Longer texts are scanned before they are parsed.
 */
export const PARSE_FIRST_MAX_CHARS = 1024;

const BACKSLASH = 0x5c;
const QUOTE = 0x22;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;
const COLON = 0x3a;

/** JSON.parse(text), refusing too deep a nesting and repeated keys with `invalid_json`; a SyntaxError passes through. */
export function parseGuardedJson(text: string, maxDepth: number): unknown {
  let members = -1;
  if (text.length > PARSE_FIRST_MAX_CHARS) members = scanJsonStructure(text, maxDepth);
  const value: unknown = JSON.parse(text);
  if (typeof value !== 'object' || value === null) return value;
  deepest = 0;
  // Only an escaped key can be misread, and a text without a backslash has none: the common
  // body skips the per-key check (decision 0032).
  keysMayBeMisread = text.indexOf('\\') !== -1;
  backslashInKey = false;
  const keys = countKeys(value, 1);
  if (deepest > maxDepth) throw tooDeep(maxDepth);
  // JSON.parse's keys may not be the text's: only the exact reader can say what the value is
  // and whether a key repeats. (A merge by a misread key can only hide nesting, never add
  // any, so the depth refusal above stands.)
  if (backslashInKey) return readJsonExactly(text, maxDepth);
  // Every member has a colon outside strings: as many colons in the whole text as parsed
  // keys means no key was merged. (Counting stops one past the keys.) Otherwise a colon may
  // sit inside a string: the scan counts members exactly.
  if (members === -1 && colonsUpTo(text, keys + 1) !== keys) members = scanJsonStructure(text, maxDepth);
  if (members !== -1 && members !== keys) throw repeatedKey();
  return value;
}

/**
 * Scans JSON text outside its strings: throws `invalid_json` as soon as objects and arrays
 * nest deeper than `maxDepth`, and returns the number of object members (colons outside
 * strings). Strings are skipped with indexOf, not walked character by character. Text that
 * is not JSON (an unterminated string, unbalanced brackets) is left for JSON.parse to refuse.
 */
export function scanJsonStructure(text: string, maxDepth: number): number {
  let depth = 0;
  let members = 0;
  const length = text.length;
  for (let i = 0; i < length; i++) {
    const unit = text.charCodeAt(i);
    if (unit === QUOTE) {
      i = closingQuote(text, i);
      if (i === -1) return members;
    } else if (unit === OPEN_BRACE || unit === OPEN_BRACKET) {
      if (++depth > maxDepth) throw tooDeep(maxDepth);
    } else if (unit === CLOSE_BRACE || unit === CLOSE_BRACKET) {
      depth--;
    } else if (unit === COLON) {
      members++;
    }
  }
  return members;
}

/** Index of the quote that ends the string opened at `open`, or -1 when it never ends. */
function closingQuote(text: string, open: number): number {
  let close = text.indexOf('"', open + 1);
  while (close !== -1) {
    // Escaped when an odd number of backslashes precede it.
    let backslashes = 0;
    while (text.charCodeAt(close - 1 - backslashes) === BACKSLASH) backslashes++;
    if ((backslashes & 1) === 0) return close;
    close = text.indexOf('"', close + 1);
  }
  return -1;
}

/** Colons anywhere in `text`, counted up to `limit`. */
function colonsUpTo(text: string, limit: number): number {
  let count = 0;
  let at = text.indexOf(':');
  while (at !== -1 && ++count < limit) at = text.indexOf(':', at + 1);
  return count;
}

/** The deepest nesting countKeys met (module state: the walk is synchronous, and this spares an object per request). */
let deepest = 0;
/** Whether countKeys looks for keys holding a backslash: only when the text has a backslash. */
let keysMayBeMisread = false;
/** Whether countKeys met a key holding a backslash: the only kind of key V8's bug can give in place of the text's. */
let backslashInKey = false;

/**
 * Keys of every object in `value` (an object or array at nesting `depth`); notes the deepest
 * nesting in `deepest` and, when `keysMayBeMisread`, a key with a backslash in `backslashInKey`.
 */
function countKeys(value: object, depth: number): number {
  if (depth > deepest) deepest = depth;
  let keys = 0;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      if (typeof item === 'object' && item !== null) keys += countKeys(item, depth + 1);
    }
    return keys;
  }
  const record = value as Record<string, unknown>;
  for (const key in record) {
    keys++;
    if (keysMayBeMisread && key.includes('\\')) backslashInKey = true;
    const item = record[key];
    if (typeof item === 'object' && item !== null) keys += countKeys(item, depth + 1);
  }
  return keys;
}
