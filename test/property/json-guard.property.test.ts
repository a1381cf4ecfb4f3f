// The JSON guard (nesting depth, repeated keys) against a model: for JSON text with repeated
// keys written in any escaped form, any nesting and any whitespace, parseJsonBody answers
// invalid_json exactly when the text nests deeper than the limit or an object repeats a key,
// and otherwise gives the text's value (the model's, built without JSON.parse: V8's JSON.parse
// in Node 24 and 26 can misread an escaped key, nodejs/node#63785). Before each case with an
// escaped key a "poison" parse aims that bug at one of them (test/helpers/escaped-key-poison.ts).
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PARSE_FIRST_MAX_CHARS } from '../../src/http/json-guard.js';
import { escapedKeyPoison } from '../helpers/escaped-key-poison.js';
import { jsonBodyOutcome } from '../helpers/json-body-outcome.js';
import { referenceJsonShape } from '../helpers/reference-json-shape.js';

/** A key written as JSON text, each character plain or escaped (\u or, where JSON has one, the short escape), so equal keys can look different. */
const KEY_CHARS = ['a', 'b', '_', '"', '\\', '{', '[', ':', ',', 'é', '0', '\n', '/'];
const SHORT_ESCAPES: Record<string, string> = { '"': '\\"', '\\': '\\\\', '\n': '\\n', '/': '\\/' };
/** Written escaped whatever the choice: JSON has no plain form for them. */
const MUST_ESCAPE = new Set(['"', '\\', '\n']);
const writeChar = (c: string, escape: 'none' | 'u' | 'short'): string => {
  const short = SHORT_ESCAPES[c];
  if (escape === 'short' && short !== undefined) return short;
  if (escape !== 'none' || MUST_ESCAPE.has(c)) return `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
  return c;
};
const keyText = fc
  .array(fc.tuple(fc.constantFrom(...KEY_CHARS), fc.constantFrom<'none' | 'u' | 'short'>('none', 'u', 'short')), { maxLength: 3 })
  .map((chars) => `"${chars.map(([c, escape]) => writeChar(c, escape)).join('')}"`);
const space = fc.constantFrom('', ' ', '\n', '\t ');
const leaf = fc.oneof(fc.constantFrom('1', '-2.5e3', 'true', 'null', '"x"', '"a\\"b{["', '"\\\\"', '"]}:,"'));

const { value: jsonText } = fc.letrec<{ value: string }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    leaf,
    fc.array(tie('value'), { maxLength: 3 }).chain((items) => space.map((s) => `[${s}${items.join(`,${s}`)}]`)),
    fc.array(fc.tuple(keyText, tie('value')), { maxLength: 4 }).chain((members) => space.map((s) => `{${s}${members.map(([k, v]) => `${k}${s}:${s}${v}`).join(`,${s}`)}${s}}`)),
  ),
}));
/** Deep chains of one kind of bracket or mixed, around an ordinary value. */
const deepText = fc.tuple(fc.integer({ min: 1, max: 80 }), fc.array(fc.boolean(), { minLength: 80, maxLength: 80 }), jsonText).map(([depth, kinds, inner]) => {
  let text = inner;
  for (let d = 0; d < depth; d++) text = kinds[d] ? `[${text}]` : `{"k":${text}}`;
  return text;
});

describe('parseJsonBody: depth and repeated keys (property)', () => {
  it('refuses exactly the texts that nest too deep or repeat a key, and parses the rest to the text\'s value', () => {
    fc.assert(
      // Padding moves a text past PARSE_FIRST_MAX_CHARS, from the parse-first path to the scan-first one.
      fc.property(fc.oneof(jsonText, deepText), fc.integer({ min: 1, max: 70 }), fc.boolean(), fc.nat(), (unpadded, maxJsonDepth, pad, poisonChoice) => {
        const text = pad ? `${' '.repeat(PARSE_FIRST_MAX_CHARS)}${unpadded}\n` : unpadded;
        const shape = referenceJsonShape(text);
        const poison = escapedKeyPoison(shape.objectKeyTexts, poisonChoice);
        if (poison !== undefined) JSON.parse(poison);
        const got = jsonBodyOutcome(text, maxJsonDepth);
        if (shape.depth > maxJsonDepth) expect(got).toBe(`The request body nests objects and arrays more than ${maxJsonDepth} levels deep.`);
        else if (shape.duplicateKey) expect(got).toBe('The request body repeats a key within one JSON object; send each key once.');
        else {
          expect(got).toEqual({ value: shape.value });
          // toEqual passes {} for { __proto__: {} } when the key is not own; this does not.
          expect(isDeepStrictEqual((got as { value: unknown }).value, shape.value)).toBe(true);
        }
      }),
      { numRuns: 3_000 },
    );
  });

  it('the issue\'s examples: a repeated max_tokens or tools, escaped or not, and a body nested 500,000 deep', () => {
    for (const text of [
      '{"message":"a","max_tokens":99999999,"max_tokens":5}',
      '{"message":"a","tools":["shell"],"tools":["search"]}',
      '{"message":"a","max_tokens":5,"max\\u005ftokens":99999999}',
      '{"message":"a","context":{"user_id":"u","user_id":"v"}}',
      '{"message":"a","__proto__":1,"__proto__":2}',
    ]) {
      expect(jsonBodyOutcome(text, 64), text).toBe('The request body repeats a key within one JSON object; send each key once.');
    }
    for (const text of ['['.repeat(500_000) + ']'.repeat(500_000), '{"a":'.repeat(100_000), '['.repeat(1_000_000)]) {
      expect(jsonBodyOutcome(text, 64)).toBe('The request body nests objects and arrays more than 64 levels deep.');
    }
    // Brackets and colons inside strings are text, not structure, short or long.
    for (const n of [10, 1_000]) {
      expect(jsonBodyOutcome(`{"message":"${'[{:'.repeat(n)}","a\\"[":1,"b":"\\\\"}`, 2)).toEqual({ value: { message: '[{:'.repeat(n), 'a"[': 1, b: '\\' } });
      expect(jsonBodyOutcome(`{"message":"${':'.repeat(n)}","a":1,"a":2}`, 2)).toBe('The request body repeats a key within one JSON object; send each key once.');
    }
    // The same key in different objects is not a repeat.
    expect(jsonBodyOutcome('{"a":{"a":1},"b":[{"a":1},{"a":2}]}', 64)).toEqual({ value: { a: { a: 1 }, b: [{ a: 1 }, { a: 2 }] } });
  });
});
