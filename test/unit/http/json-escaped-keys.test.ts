// V8's escaped-key bug (nodejs/node#63785; src/http/exact-json-reader.ts): on Node 24 and 26,
// once a JSON.parse made an object with a key holding a backslash, a later parse reads an
// escaped key whose written characters start with that key as that key. Each case first
// "poisons" the process with such a parse, then checks that the JSON guard answers from the
// text, not from JSON.parse's keys. On Node 22 the poison does nothing and the cases hold
// anyway; on 24 and 26 the first four fail without the exact reader (the last two hold the
// reader itself to JSON.parse's value and refusals).
import { isDeepStrictEqual } from 'node:util';
import { describe, expect, it } from 'vitest';
import { jsonBodyOutcome } from '../../helpers/json-body-outcome.js';
import { PARSE_FIRST_MAX_CHARS } from '../../../src/http/json-guard.js';

const REPEATED = 'The request body repeats a key within one JSON object; send each key once.';
const tooDeep = (max: number): string => `The request body nests objects and arrays more than ${max} levels deep.`;

/** The text short (parsed first) and padded past PARSE_FIRST_MAX_CHARS (scanned first). */
const bothPaths = (text: string): string[] => [text, `${' '.repeat(PARSE_FIRST_MAX_CHARS)}${text}\n`];

/** Makes an object with these keys, in order, through JSON.parse: the poison. */
function poison(...keys: string[]): void {
  JSON.parse(`{${keys.map((key, i) => `${JSON.stringify(key)}:${i === 0 ? '[]' : '0'}`).join(',')}}`);
}

describe('parseJsonBody after a JSON.parse made a key with a backslash (nodejs/node#63785)', () => {
  it('refuses a one-character key repeated through an escape: {",":1,"\\u002c":1}', () => {
    for (const text of bothPaths('{",":1,"\\u002c":1}')) {
      poison(',', '\\');
      expect(jsonBodyOutcome(text)).toBe(REPEATED);
    }
  });

  it('refuses a longer key repeated through an escape: {"m":1,"ab":1,"a\\u0062":2}', () => {
    for (const text of bothPaths('{"m":1,"ab":1,"a\\u0062":2}')) {
      poison('m', 'ab', 'a\\');
      expect(jsonBodyOutcome(text)).toBe(REPEATED);
    }
  });

  it('does not refuse {"g":1,"\\n":1,"\\\\":1}, whose keys differ, and gives keys "g", "\\n" and "\\\\"', () => {
    for (const text of bothPaths('{"g":1,"\\n":1,"\\\\":1}')) {
      poison('g', '\\', '\\\\');
      const got = jsonBodyOutcome(text);
      expect(got).toStrictEqual({ value: { g: 1, '\n': 1, '\\': 1 } });
      expect(Object.keys((got as { value: object }).value)).toEqual(['g', '\n', '\\']);
    }
  });

  it('gives an escaped key its own value: "\\n", "\\u0022", "\\"", "a\\n", "\\u0000", in nested objects too', () => {
    const cases: [string[], string, unknown][] = [
      [['h', '\\'], '{"h":1,"\\n":2}', { h: 1, '\n': 2 }],
      [['q', '\\'], '{"q":1,"\\u0022":2}', { q: 1, '"': 2 }],
      [['r', '\\'], '{"r":1,"\\"":2}', { r: 1, '"': 2 }],
      [['s', '\\'], '{"s":1,"\\u0000":2}', { s: 1, '\u0000': 2 }],
      [['m', 'a\\'], '{"m":1,"a\\n":2}', { m: 1, 'a\n': 2 }],
    ];
    for (const [keys, text, value] of cases) {
      for (const padded of bothPaths(text)) {
        poison(...keys);
        expect(jsonBodyOutcome(padded), text).toStrictEqual({ value });
      }
    }
    // A nested object: the poison's key sits one level down.
    JSON.parse('{"x":{"\\\\":0}}');
    expect(jsonBodyOutcome('{"x":{"\\t":1}}')).toStrictEqual({ value: { x: { '\t': 1 } } });
  });

  it('the exact reader makes "__proto__" an own key and gives JSON.parse\'s value, with Object.prototype', () => {
    const text = '{"\\\\":1,"__proto__":{"polluted":true},"toString":2,"constructor":[],"n":[-0,1e400,0.1,-2.5E-3,9007199254740993],"s":"a\\"b\\u00e9\\/","t":[true,false,null,{}],"2":"x","1":"y"}';
    for (const padded of bothPaths(text)) {
      const got = jsonBodyOutcome(padded) as { value: Record<string, unknown> };
      // Hand-built: what JSON.parse gives without the bug (the key order integer keys first, as for any object).
      const expected: Record<string, unknown> = { '\\': 1 };
      Object.defineProperty(expected, '__proto__', { value: { polluted: true }, writable: true, enumerable: true, configurable: true });
      Object.assign(expected, { toString: 2, constructor: [], n: [-0, Infinity, 0.1, -0.0025, 9007199254740992], s: 'a"bé/', t: [true, false, null, {}], 2: 'x', 1: 'y' });
      // node:util's deep strict equality: vitest's toStrictEqual compares `.constructor`, which is a key here.
      expect(got.value).toEqual(expected);
      expect(isDeepStrictEqual(got.value, expected)).toBe(true);
      expect(Object.getPrototypeOf(got.value)).toBe(Object.prototype);
      expect(Object.keys(got.value)).toEqual(['1', '2', '\\', '__proto__', 'toString', 'constructor', 'n', 's', 't']);
      expect(Object.is((got.value.n as number[])[0], -0)).toBe(true);
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      expect(Object.getPrototypeOf((got.value.t as object[])[3])).toBe(Object.prototype);
    }
    for (const padded of bothPaths('{"\\\\":1,"__proto__":1,"__proto__":2}')) expect(jsonBodyOutcome(padded)).toBe(REPEATED);
    for (const padded of bothPaths('{"\\\\":1,"a":{"b":1,"\\u0062":2}}')) expect(jsonBodyOutcome(padded)).toBe(REPEATED);
  });

  it('the exact reader refuses too deep a nesting first, also nesting that a misread key merged away', () => {
    // { and [[[ : four levels.
    for (const padded of bothPaths('{"\\\\":[[[1]]]}')) {
      expect(jsonBodyOutcome(padded, 3)).toBe(tooDeep(3));
      expect(jsonBodyOutcome(padded, 4)).toStrictEqual({ value: { '\\': [[[1]]] } });
    }
    // A repeated key before the deep part: too deep is still the answer, as without a backslash key.
    for (const padded of bothPaths('{"\\\\":1,"a":1,"a":2,"d":[[[[1]]]]}')) expect(jsonBodyOutcome(padded, 3)).toBe(tooDeep(3));
    // JSON.parse merges "\n" (misread as "\") with the real "\" and drops the deep value: the
    // answer must come from the text.
    for (const padded of bothPaths('{"g":1,"\\n":[[[[1]]]],"\\\\":1}')) {
      poison('g', '\\', '\\\\');
      expect(jsonBodyOutcome(padded, 3)).toBe(tooDeep(3));
    }
  });
});
