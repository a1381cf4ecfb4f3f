// Reading `metadata.tokens_used` by scanning the bytes must agree with JSON.parse for any
// body: arbitrary JSON, bodies with metadata/tokens_used at several depths and duplicated
// (JSON.parse keeps the last), odd whitespace, escapes, invalid UTF-8 inside strings, and
// every kind of breakage (truncation, stray bytes), however the body is cut into chunks.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { scanTokensUsed, tokensByJsonParse, tokensFromChatResponse } from '../../src/proxy/tokens-used.js';
import { splitAt } from '../helpers/split-at.js';

/** Chunks as undici might deliver them, empty ones included (cuts at 0 or the end). */
function chunked(body: Buffer, cuts: number[]): Buffer[] {
  return splitAt(body, cuts.map((cut) => cut % (body.length + 1)));
}

function agrees(body: Buffer, cuts: number[] = []): void {
  const expected = tokensByJsonParse(body);
  expect(tokensFromChatResponse(chunked(body, cuts), body.length)).toBe(expected);
  // The scan alone, when it answers, answers the same.
  const scanned = scanTokensUsed(body);
  if (scanned !== undefined) expect(scanned).toBe(expected);
}

const space = fc.constantFrom('', ' ', '\n', '\t', '\r\n  ');
/** Not JSON whitespace, malformed numbers and literals, an unknown escape. */
const invalidPiece = fc.constantFrom('\u000b', '\u00a0', '00', '1.', '.5', '-', '+1', '0x10', 'nul', '1e', '"\\x"');
const scalar = fc.oneof(
  fc.constantFrom('0', '-0', '14', '1.0', '1e2', '1E+2', '2.5', '-3', '1e400', '9007199254740993', '123456789012345', '1234567890123456'),
  fc.integer({ min: 0, max: 1_000_000 }).map(String),
  fc.double().map((value) => JSON.stringify(value)),
  fc.constantFrom('null', 'true', 'false', '"14"', '[]', '{}', '[14]', '{"tokens_used":3}'),
  fc.json({ maxDepth: 2 }),
);
const key = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('model', 'response', 'meta', 'metadata ', '__proto__', '', 'tokens_used', 'metadata') },
  { weight: 2, arbitrary: fc.string({ maxLength: 6 }).map((text) => JSON.stringify(text).slice(1, -1)) },
  { weight: 1, arbitrary: fc.constantFrom('metad\\u0061ta', 'tokens\\u005fused') },
);

type Member = [string, string];

/** An object's text built by hand, so keys can repeat and values can be anything. */
function objectText(member: fc.Arbitrary<Member>, gap: fc.Arbitrary<string>): fc.Arbitrary<string> {
  return fc
    .tuple(gap, fc.array(fc.tuple(member, gap, gap, gap), { maxLength: 4 }))
    .map(([before, members]) => `{${before}${members.map(([[name, value], a, b, c]) => `"${name}"${a}:${b}${value}${c}`).join(',')}}`);
}

function bodies(gap: fc.Arbitrary<string>, value: fc.Arbitrary<string>): fc.Arbitrary<string> {
  const tokens = fc.oneof({ weight: 3, arbitrary: fc.integer({ min: 0, max: 1_000_000 }).map(String) }, value);
  const metadataMember = fc.oneof({ weight: 2, arbitrary: fc.tuple(fc.constant('tokens_used'), tokens) }, fc.tuple(key, fc.oneof(value, objectText(fc.tuple(key, value), gap))));
  const metadata = objectText(metadataMember, gap);
  const topMember = fc.oneof(
    { weight: 2, arbitrary: fc.tuple(fc.constant('metadata'), fc.oneof({ weight: 4, arbitrary: metadata }, value)) },
    fc.tuple(key, fc.oneof(value, metadata, fc.array(metadata, { maxLength: 2 }).map((items) => `[${items.join(',')}]`))),
  );
  return fc.tuple(objectText(topMember, gap), gap).map(([object, after]) => object + after);
}
const validBody = bodies(space, scalar);
const invalidBody = bodies(fc.oneof({ weight: 30, arbitrary: space }, invalidPiece), fc.oneof({ weight: 30, arbitrary: scalar }, invalidPiece));

/** Breaks a valid text: truncation, a stray byte, a byte removed. */
const breakage = fc.tuple(fc.nat(), fc.constantFrom('truncate', 'insert', 'delete'), fc.constantFrom(0x22, 0x5c, 0x2c, 0x7d, 0x5d, 0x3a, 0x00, 0x0a, 0x31, 0xff, 0xc3, 0x20));
function broken(body: Buffer, [at, how, byte]: [number, string, number]): Buffer {
  const index = at % (body.length + 1);
  if (how === 'truncate') return body.subarray(0, index);
  if (how === 'insert') return Buffer.concat([body.subarray(0, index), Buffer.from([byte]), body.subarray(index)]);
  return Buffer.concat([body.subarray(0, index), body.subarray(index + 1)]);
}

const cuts = fc.array(fc.nat(), { maxLength: 3 });

describe('tokens_used by scanning', () => {
  it('agrees with JSON.parse on arbitrary JSON', () => {
    fc.assert(fc.property(fc.json(), cuts, (text, at) => agrees(Buffer.from(text), at)), { numRuns: 1000 });
  });

  it('agrees on hand-built bodies: duplicates, nesting, escapes, odd numbers', () => {
    fc.assert(fc.property(validBody, cuts, (text, at) => agrees(Buffer.from(text), at)), { numRuns: 3000 });
  });

  it('agrees on hand-built bodies with an invalid piece here and there', () => {
    fc.assert(fc.property(invalidBody, (text) => agrees(Buffer.from(text))), { numRuns: 2000 });
  });

  it('agrees on broken bodies', () => {
    fc.assert(fc.property(validBody, breakage, (text, how) => agrees(broken(Buffer.from(text), how))), { numRuns: 3000 });
  });

  it('agrees when strings hold any bytes, invalid UTF-8 included', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 12 }), fc.constantFrom(1, 14, 0), (bytes, tokens) => {
        const body = Buffer.concat([Buffer.from('{"response":"'), bytes, Buffer.from(`","metadata":{"model":"`), bytes, Buffer.from(`","tokens_used":${tokens}}}`)]);
        agrees(body);
      }),
      { numRuns: 2000 },
    );
  });

  it('reads the usual answer itself, without JSON.parse', () => {
    const body = Buffer.from('{"response":"Hello! \\"quoted\\" \\u00e9","tool_calls":[{"name":"search","args":{"q":[1,2.5e3,null,true]}}],"metadata":{"model":"m-1","tokens_used":14,"latency_ms":1}}\n');
    expect(scanTokensUsed(body)).toBe(14);
    expect(scanTokensUsed(Buffer.from('{"metadata":{"tokens_used":3},"metadata":{"model":"x"}}'))).toBeNull();
    expect(scanTokensUsed(Buffer.from('{"metadata":{"tokens_used":3,"tokens_used":1e1}}'))).toBe(10);
    expect(scanTokensUsed(Buffer.from('{"metadata":{"tokens_used":-1}}'))).toBeNull();
    expect(tokensFromChatResponse([Buffer.from('{"metadata":{"tokens_used":7}'), Buffer.from('}')], 30)).toBe(7);
  });

  it('leaves deep nesting and escaped keys to JSON.parse', () => {
    const deep = `{"a":${'['.repeat(200)}${']'.repeat(200)},"metadata":{"tokens_used":5}}`;
    expect(scanTokensUsed(Buffer.from(deep))).toBeUndefined();
    expect(tokensFromChatResponse([Buffer.from(deep)], deep.length)).toBe(5);
    expect(scanTokensUsed(Buffer.from('{"metad\\u0061ta":{"tokens_used":5}}'))).toBeUndefined();
    expect(tokensFromChatResponse([Buffer.from('{"metad\\u0061ta":{"tokens_used":5}}')], 35)).toBe(5);
  });
});
