// The JSON guard (nesting depth, repeated keys) against a model: for JSON text with repeated
// keys written in any escaped form, any nesting and any whitespace, parseJsonBody answers
// invalid_json exactly when the text nests deeper than the limit or an object repeats a key,
// and otherwise gives JSON.parse's value.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../src/errors.js';
import { PARSE_FIRST_MAX_CHARS } from '../../src/http/json-guard.js';
import { parseJsonBody } from '../../src/http/validate-chat-request.js';
import { referenceJsonShape } from '../helpers/reference-json-shape.js';

/** A key written as JSON text, each character plain or \u-escaped, so equal keys can look different. */
const KEY_CHARS = ['a', 'b', '_', '"', '\\', '{', '[', ':', ',', 'é', '0'];
const keyText = fc
  .array(fc.tuple(fc.constantFrom(...KEY_CHARS), fc.boolean()), { maxLength: 3 })
  .map((chars) => `"${chars.map(([c, escaped]) => (escaped || c === '"' || c === '\\' ? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}` : c)).join('')}"`);
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

function outcome(text: string, maxJsonDepth: number): { value: unknown } | string {
  try {
    return { value: parseJsonBody(Buffer.from(text), { maxJsonDepth }) };
  } catch (error) {
    if (!(error instanceof GatewayError)) throw error;
    expect(error.type).toBe('invalid_json');
    return error.message;
  }
}

describe('parseJsonBody: depth and repeated keys (property)', () => {
  it('refuses exactly the texts that nest too deep or repeat a key, and parses the rest as JSON.parse does', () => {
    fc.assert(
      // Padding moves a text past PARSE_FIRST_MAX_CHARS, from the parse-first path to the scan-first one.
      fc.property(fc.oneof(jsonText, deepText), fc.integer({ min: 1, max: 70 }), fc.boolean(), (unpadded, maxJsonDepth, pad) => {
        const text = pad ? `${' '.repeat(PARSE_FIRST_MAX_CHARS)}${unpadded}\n` : unpadded;
        const shape = referenceJsonShape(text);
        const got = outcome(text, maxJsonDepth);
        if (shape.depth > maxJsonDepth) expect(got).toBe(`The request body nests objects and arrays more than ${maxJsonDepth} levels deep.`);
        else if (shape.duplicateKey) expect(got).toBe('The request body repeats a key within one JSON object; send each key once.');
        else expect(got).toEqual({ value: JSON.parse(text) });
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
      expect(outcome(text, 64), text).toBe('The request body repeats a key within one JSON object; send each key once.');
    }
    for (const text of ['['.repeat(500_000) + ']'.repeat(500_000), '{"a":'.repeat(100_000), '['.repeat(1_000_000)]) {
      expect(outcome(text, 64)).toBe('The request body nests objects and arrays more than 64 levels deep.');
    }
    // Brackets and colons inside strings are text, not structure, short or long.
    for (const n of [10, 1_000]) {
      expect(outcome(`{"message":"${'[{:'.repeat(n)}","a\\"[":1,"b":"\\\\"}`, 2)).toEqual({ value: { message: '[{:'.repeat(n), 'a"[': 1, b: '\\' } });
      expect(outcome(`{"message":"${':'.repeat(n)}","a":1,"a":2}`, 2)).toBe('The request body repeats a key within one JSON object; send each key once.');
    }
    // The same key in different objects is not a repeat.
    expect(outcome('{"a":{"a":1},"b":[{"a":1},{"a":2}]}', 64)).toEqual({ value: { a: { a: 1 }, b: [{ a: 1 }, { a: 2 }] } });
  });
});
