// Why this exists: V8's JSON.parse in Node 24 and 26 (not 22) can give an object key that is
// not the one in the text, nodejs/node#63785 (V8: https://issues.chromium.org/issues/521080746).
// Once any earlier JSON.parse in the process (or an object literal in code) made an object
// whose key K holds a backslash (the key "\" is enough), a later parse whose object has the same keys before it reads an
// escaped key as K when the key's first characters *as written* are K's (`"\n"` and
// `"\u002c"` both read as "\"; `"a\n"` as "a\" once "a\" was seen). So a key can be read
// as a key it is not, and two equal keys as different ones, which would defeat the
// repeated-key refusal. A wrong key always holds a backslash (it is the text's own
// characters, escape included), so the guard sends only bodies with such a key here:
// decision docs/decisions/0032-v8-escaped-key-bug.md.
//
// The reader builds the value itself: structure walked by hand, each string (key or value)
// that holds an escape decoded by JSON.parse of that one string token (a lone string is not
// read through the broken key path), numbers with Number (JSON's number grammar is a subset
// of Number's, same rounding). It refuses what the guard refuses, with the same errors.
//
// Remove it (and the guard's backslash check) when every Node line in package.json
// `engines` ships a V8 with the fix; test/unit/http/json-escaped-keys.test.ts then passes
// without it.
import { repeatedKey, tooDeep } from './json-refusals.js';

const BACKSLASH = 0x5c;
const QUOTE = 0x22;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
/** RFC 8259's number. */
const JSON_NUMBER = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$/;

/**
 * The value of JSON text that JSON.parse accepted, as JSON.parse would give it, built without
 * JSON.parse's object keys; throws `invalid_json` when objects and arrays nest deeper than
 * `maxDepth` (first, as the guard does) or an object repeats a key. Text that is not JSON
 * throws a SyntaxError; no input makes it loop.
 */
export function readJsonExactly(text: string, maxDepth: number): unknown {
  const reader = new ExactJsonReader(text, maxDepth);
  const value = reader.readDocument();
  if (reader.repeated) throw repeatedKey();
  return value;
}

class ExactJsonReader {
  /** Set at the first repeated key; reading goes on, since too deep a nesting anywhere is the answer that wins. */
  repeated = false;
  private at = 0;
  /** See nextBackslash; -2 until the first look. */
  private backslashAt = -2;

  constructor(
    private readonly text: string,
    private readonly maxDepth: number,
  ) {}

  readDocument(): unknown {
    const value = this.readValue(0);
    this.skipWhitespace();
    if (this.at !== this.text.length) throw this.unexpected();
    return value;
  }

  /** One value starting at or after `at` (after whitespace), in a container at nesting `depth`. */
  private readValue(depth: number): unknown {
    this.skipWhitespace();
    const unit = this.text.charCodeAt(this.at);
    if (unit === OPEN_BRACE) return this.readObject(depth + 1);
    if (unit === OPEN_BRACKET) return this.readArray(depth + 1);
    if (unit === QUOTE) return this.readString();
    return this.readLiteral();
  }

  private readObject(depth: number): Record<string, unknown> {
    const object: Record<string, unknown> = {};
    if (this.enterEmpty(depth, CLOSE_BRACE)) return object;
    for (;;) {
      this.skipWhitespace();
      if (this.text.charCodeAt(this.at) !== QUOTE) throw this.unexpected();
      const key = this.readString();
      this.skipWhitespace();
      if (this.text.charCodeAt(this.at) !== COLON) throw this.unexpected();
      this.at++;
      const value = this.readValue(depth);
      if (Object.hasOwn(object, key)) this.repeated = true;
      // An own data property, as JSON.parse makes it, also for a key the prototype has:
      // assignment would call Object.prototype's __proto__ setter instead of making an own
      // "__proto__" key (and would throw on a frozen prototype's "toString").
      if (key in object) Object.defineProperty(object, key, { value, writable: true, enumerable: true, configurable: true });
      else object[key] = value;
      if (this.endOfMembers(CLOSE_BRACE)) return object;
    }
  }

  private readArray(depth: number): unknown[] {
    const array: unknown[] = [];
    if (this.enterEmpty(depth, CLOSE_BRACKET)) return array;
    for (;;) {
      array.push(this.readValue(depth));
      if (this.endOfMembers(CLOSE_BRACKET)) return array;
    }
  }

  /**
   * Steps into the object or array opened at `at`, at nesting `depth` (too deep throws, as the
   * guard does); true, past its closing bracket, when it is empty.
   */
  private enterEmpty(depth: number, close: number): boolean {
    if (depth > this.maxDepth) throw tooDeep(this.maxDepth);
    this.at++;
    this.skipWhitespace();
    if (this.text.charCodeAt(this.at) !== close) return false;
    this.at++;
    return true;
  }

  /** After a member: true past the closing bracket, false past a comma; anything else is not JSON. */
  private endOfMembers(close: number): boolean {
    this.skipWhitespace();
    const unit = this.text.charCodeAt(this.at++);
    if (unit === close) return true;
    if (unit === COMMA) return false;
    throw this.unexpected();
  }

  /** The string whose opening quote is at `at`; JSON.parse decodes it alone when it holds an escape. */
  private readString(): string {
    const open = this.at;
    let close = this.text.indexOf('"', open + 1);
    for (;;) {
      if (close === -1) throw this.unexpected();
      // Escaped when an odd number of backslashes precede it (the opening quote stops the count).
      let backslashes = 0;
      while (this.text.charCodeAt(close - 1 - backslashes) === BACKSLASH) backslashes++;
      if ((backslashes & 1) === 0) break;
      close = this.text.indexOf('"', close + 1);
    }
    this.at = close + 1;
    const backslash = this.nextBackslash(open);
    if (backslash === -1 || backslash > close) return this.text.slice(open + 1, close);
    return JSON.parse(this.text.slice(open, close + 1)) as string;
  }

  /**
   * The first backslash at or after `from`, or -1. Remembered, and looked for again only once
   * reading has passed it: a text with one backslash at its end is searched once, not once per string.
   */
  private nextBackslash(from: number): number {
    if (this.backslashAt !== -1 && this.backslashAt < from) this.backslashAt = this.text.indexOf('\\', from);
    return this.backslashAt;
  }

  /** A number, true, false or null: its characters run to the next delimiter. */
  private readLiteral(): unknown {
    const start = this.at;
    while (this.at < this.text.length && !isDelimiter(this.text.charCodeAt(this.at))) this.at++;
    const token = this.text.slice(start, this.at);
    if (token === 'true') return true;
    if (token === 'false') return false;
    if (token === 'null') return null;
    // Number() also takes what JSON does not ('', '-Infinity', '0x1', '.5'); JSON.parse refused
    // such texts before the reader was asked, and the grammar check keeps it from making one up.
    if (!JSON_NUMBER.test(token)) throw this.unexpected();
    return Number(token);
  }

  private skipWhitespace(): void {
    for (;;) {
      const unit = this.text.charCodeAt(this.at);
      if (unit !== 0x20 && unit !== 0x0a && unit !== 0x0d && unit !== 0x09) return;
      this.at++;
    }
  }

  private unexpected(): SyntaxError {
    return new SyntaxError(`Unexpected JSON at position ${this.at}`);
  }
}

/** Ends a number or literal: whitespace, a comma, a closing bracket, or anything structural. */
function isDelimiter(unit: number): boolean {
  return unit === COMMA || unit === CLOSE_BRACE || unit === CLOSE_BRACKET || unit === 0x20 || unit === 0x0a || unit === 0x0d || unit === 0x09 || unit === COLON || unit === QUOTE || unit === OPEN_BRACE || unit === OPEN_BRACKET;
}
