// Reading the answer's facts (metadata.model, tool_calls[].tool) in the same scan as
// tokens_used must agree with JSON.parse for any body: models and tool names of every length
// around the bounds, escapes, invalid UTF-8, non-strings, duplicates (JSON.parse keeps the
// last), elements that are not objects, more calls than are recorded, and broken bodies.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { answerByJsonParse, scanAnswer, tokensFromChatResponse, tokensFromDoneData, readToolCallData } from '../../src/proxy/tokens-used.js';
import { ChatAnswerScan, ToolCallEventScan } from '../../src/proxy/answer-scans.js';
import { MAX_SCAN_DEPTH } from '../../src/proxy/json-stream-scan.js';
import { MAX_TOOL_CALLS_RECORDED, type AnswerFacts } from '../../src/request/answer-facts.js';
import { splitAt } from '../helpers/split-at.js';

const fresh = (): AnswerFacts => ({ model: null, toolCalls: null });

function agrees(body: Buffer, cuts: number[] = []): void {
  const expected = fresh();
  const expectedTokens = answerByJsonParse(body, expected);
  const got = fresh();
  const chunks = splitAt(body, cuts.map((cut) => cut % (body.length + 1)));
  expect(tokensFromChatResponse(chunks, body.length, got)).toBe(expectedTokens);
  expect(got).toEqual(expected);
  // The scan alone, when it answers, answers the same; when it does not, it wrote nothing.
  const scanned = fresh();
  const tokens = scanAnswer(body, scanned);
  if (tokens === undefined) expect(scanned).toEqual(fresh());
  else {
    expect(tokens).toBe(expectedTokens);
    expect(scanned).toEqual(expected);
  }
}

const space = fc.constantFrom('', ' ', '\n', '\t');
/** Strings as JSON text, near the bounds (64 for tools, 128 for models), with escapes and non-ASCII. */
const name = fc.oneof(
  fc.constantFrom('', 'web_search', 'calculator', 'm-1', 'x'.repeat(64), 'x'.repeat(65), 'y'.repeat(128), 'y'.repeat(129), 'é'.repeat(64), 'é'.repeat(65), '😀'.repeat(32), '😀'.repeat(33)),
  fc.string({ maxLength: 8 }),
  fc.string({ unit: 'binary', maxLength: 70 }),
).map((text) => JSON.stringify(text));
const escapedName = fc.constantFrom('"web\\u005fsearch"', '"\\ud83d\\ude00"', '"\\ud800"', `"${'\\u0041'.repeat(64)}"`, `"${'\\u0041'.repeat(65)}"`, '"a\\"b"', '"\\n"');
const stringValue = fc.oneof({ weight: 4, arbitrary: name }, escapedName);
const other = fc.oneof(fc.constantFrom('null', 'true', '14', '[]', '{}', '["web_search"]', '{"tool":"x"}'), fc.json({ maxDepth: 2 }));
const value = fc.oneof({ weight: 3, arbitrary: stringValue }, other);

type Member = [string, string];
function objectText(member: fc.Arbitrary<Member>): fc.Arbitrary<string> {
  return fc
    .tuple(space, fc.array(fc.tuple(member, space, space), { maxLength: 4 }))
    .map(([before, members]) => `{${before}${members.map(([[key, text], a, b]) => `"${key}"${a}:${b}${text}`).join(',')}}`);
}
const callKey = fc.constantFrom('tool', 'tool', 'input', 'output', 'tools', 'to\\u006fl');
const call = fc.oneof({ weight: 4, arbitrary: objectText(fc.tuple(callKey, value)) }, other);
const toolCalls = fc.oneof(
  { weight: 4, arbitrary: fc.array(call, { maxLength: 6 }).map((calls) => `[${calls.join(',')}]`) },
  // More calls than are recorded.
  fc.integer({ min: MAX_TOOL_CALLS_RECORDED - 2, max: MAX_TOOL_CALLS_RECORDED + 3 }).map((n) => `[${Array.from({ length: n }, (_, k) => `{"tool":"t${k}"}`).join(',')}]`),
  other,
);
const metadataKey = fc.constantFrom('model', 'model', 'tokens_used', 'latency_ms', 'models');
const metadata = objectText(fc.tuple(metadataKey, fc.oneof(value, fc.integer({ min: 0, max: 100 }).map(String))));
const topKey = fc.constantFrom('metadata', 'tool_calls', 'response', 'model', 'tool');
const topMember = fc.oneof(
  { weight: 3, arbitrary: fc.tuple(fc.constant('metadata'), fc.oneof({ weight: 3, arbitrary: metadata }, value)) },
  { weight: 3, arbitrary: fc.tuple(fc.constant('tool_calls'), toolCalls) },
  fc.tuple(topKey, value),
);
const body = objectText(topMember);

const breakage = fc.tuple(fc.nat(), fc.constantFrom('truncate', 'insert', 'delete'), fc.constantFrom(0x22, 0x5c, 0x2c, 0x7d, 0x5d, 0x5b, 0x3a, 0x00, 0xff, 0xc3));
function broken(bytes: Buffer, [at, how, byte]: [number, string, number]): Buffer {
  const index = at % (bytes.length + 1);
  if (how === 'truncate') return bytes.subarray(0, index);
  if (how === 'insert') return Buffer.concat([bytes.subarray(0, index), Buffer.from([byte]), bytes.subarray(index)]);
  return Buffer.concat([bytes.subarray(0, index), bytes.subarray(index + 1)]);
}

describe('answer facts by scanning', () => {
  it('agree with JSON.parse on hand-built answers', () => {
    fc.assert(fc.property(body, fc.array(fc.nat(), { maxLength: 3 }), (text, cuts) => agrees(Buffer.from(text), cuts)), { numRuns: 4000 });
  });

  it('agree with JSON.parse on broken answers', () => {
    fc.assert(fc.property(body, breakage, (text, how) => agrees(broken(Buffer.from(text), how))), { numRuns: 3000 });
  });

  it('agree with JSON.parse on arbitrary JSON', () => {
    fc.assert(fc.property(fc.json(), (text) => agrees(Buffer.from(text))), { numRuns: 1000 });
  });

  it('agree when names hold any bytes, invalid UTF-8 included', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 70 }), (bytes) => {
        const text = Buffer.concat([Buffer.from('{"tool_calls":[{"tool":"'), bytes, Buffer.from('"}],"metadata":{"model":"'), bytes, Buffer.from('","tokens_used":3}}')]);
        agrees(text);
      }),
      { numRuns: 2000 },
    );
  });

  it('reads the usual answer itself, in order, and the same model twice', () => {
    const text = Buffer.from('{"response":"hi","tool_calls":[{"tool":"calculator","input":{"a":1}},{"tool":"web_search"},{"tool":7}],"metadata":{"model":"m-1","tokens_used":14}}');
    for (let round = 0; round < 2; round++) {
      const facts = fresh();
      expect(scanAnswer(text, facts)).toBe(14);
      expect(facts).toEqual({ model: 'm-1', toolCalls: ['calculator', 'web_search'] });
    }
    // Asked for nothing, it writes nothing and still reads the tokens.
    expect(scanAnswer(text, null)).toBe(14);
  });

  it('records at most MAX_TOOL_CALLS_RECORDED calls, the first ones', () => {
    const calls = Array.from({ length: 300 }, (_, k) => `{"tool":"t${k}"}`).join(',');
    const facts = fresh();
    tokensFromChatResponse([Buffer.from(`{"tool_calls":[${calls}]}`)], 0, facts);
    expect(facts.toolCalls).toHaveLength(MAX_TOOL_CALLS_RECORDED);
    expect(facts.toolCalls![0]).toBe('t0');
    expect(facts.toolCalls!.at(-1)).toBe(`t${MAX_TOOL_CALLS_RECORDED - 1}`);
  });
});

describe('stream facts', () => {
  it('done: model at the top or in metadata, bounded; hostile data records nothing', () => {
    const facts = fresh();
    expect(tokensFromDoneData('{"tokens_used":5,"model":"m-2"}', facts)).toBe(5);
    expect(facts.model).toBe('m-2');
    const nested = fresh();
    tokensFromDoneData('{"tokens_used":5,"metadata":{"model":"m-3"}}', nested);
    expect(nested.model).toBe('m-3');
    for (const data of ['{"model":""}', `{"model":"${'y'.repeat(129)}"}`, '{"model":7}', 'not json', 'null', '[]']) {
      const hostile = fresh();
      tokensFromDoneData(data, hostile);
      expect(hostile).toEqual(fresh());
    }
  });

  it('tool_call: the tool name in order, only strings of 1..64 characters, at most MAX_TOOL_CALLS_RECORDED', () => {
    const facts = fresh();
    for (const data of ['{"tool":"a"}', '{"tool":""}', `{"tool":"${'x'.repeat(65)}"}`, '{"tool":null}', 'nope', '["tool"]', 'null', '{"tool":"b","input":{}}']) readToolCallData(data, facts);
    expect(facts.toolCalls).toEqual(['a', 'b']);
    for (let k = 0; k < 200; k++) readToolCallData('{"tool":"c"}', facts);
    expect(facts.toolCalls).toHaveLength(MAX_TOOL_CALLS_RECORDED);
  });
});

/** The bounded streaming scan (answers too large to hold, issue 45 H3-03) must read what JSON.parse reads. */
function streamAgrees(body: Buffer, cuts: number[] = []): void {
  const expected = fresh();
  answerByJsonParse(body, expected);
  const got = fresh();
  const scan = new ChatAnswerScan();
  for (const chunk of splitAt(body, cuts.map((cut) => cut % (body.length + 1)))) scan.push(chunk);
  scan.finishInto(got);
  expect(got).toEqual(expected);
  // A tool_call event's data: its top-level `tool`, as readToolCallData reads it.
  const event = fresh();
  readToolCallData(body.toString('utf8'), event);
  const eventScan = new ToolCallEventScan();
  eventScan.push(body);
  const tool = eventScan.finish();
  expect(tool === null ? null : [tool]).toEqual(event.toolCalls);
}

describe('answer facts by the streaming scan', () => {
  it('agree with JSON.parse on hand-built answers, however chunked', () => {
    fc.assert(fc.property(body, fc.array(fc.nat(), { maxLength: 4 }), (text, cuts) => streamAgrees(Buffer.from(text), cuts)), { numRuns: 4000 });
  });

  it('agree with JSON.parse on broken answers', () => {
    fc.assert(fc.property(body, breakage, fc.array(fc.nat(), { maxLength: 2 }), (text, how, cuts) => streamAgrees(broken(Buffer.from(text), how), cuts)), { numRuns: 3000 });
  });

  it('agree with JSON.parse on arbitrary JSON and on tool_call event data', () => {
    fc.assert(fc.property(fc.json(), fc.array(fc.nat(), { maxLength: 2 }), (text, cuts) => streamAgrees(Buffer.from(text), cuts)), { numRuns: 1000 });
    fc.assert(fc.property(objectText(fc.tuple(callKey, value)), (text) => streamAgrees(Buffer.from(text))), { numRuns: 2000 });
  });

  it('agree when names hold any bytes, invalid UTF-8 included', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 70 }), (bytes) => {
        streamAgrees(Buffer.concat([Buffer.from('{"tool_calls":[{"tool":"'), bytes, Buffer.from('"}],"metadata":{"model":"'), bytes, Buffer.from('","tokens_used":3}}')]));
      }),
      { numRuns: 2000 },
    );
  });

  it('reads the tool calls of a 3 MB answer in small chunks as in one, and of an answer nested past its bound', () => {
    const filler = JSON.stringify({ page: 'p'.repeat(1_000_000), nested: [[[{ tool: 'not-a-call' }]]] });
    const text = `{"response":"r","tool_calls":[{"tool":"fetch","output":${filler}},{"tool":"search","output":${filler}},{"output":${filler},"tool":"fetch"}],"metadata":{"model":"m-9"}}`;
    const whole = new ChatAnswerScan();
    whole.push(Buffer.from(text));
    const facts = fresh();
    whole.finishInto(facts);
    expect(facts).toEqual({ model: 'm-9', toolCalls: ['fetch', 'search', 'fetch'] });
    const small = new ChatAnswerScan();
    const bytes = Buffer.from(text);
    for (let at = 0; at < bytes.length; at += 4096) small.push(bytes.subarray(at, at + 4096));
    const chunked = fresh();
    small.finishInto(chunked);
    expect(chunked).toEqual(facts);
    // Nesting past the kept levels is skimmed: the calls around it still count, as JSON.parse reads them.
    const levels = MAX_SCAN_DEPTH * 50;
    streamAgrees(Buffer.from(`{"tool_calls":[{"tool":"x","input":${'[{"a":"]}\\"",'.repeat(levels)}1${']'.repeat(levels)}},{"tool":"y"}]}`), [levels, levels * 7]);
    const deep = fresh();
    const scan = new ChatAnswerScan();
    scan.push(Buffer.from(`{"tool_calls":[{"tool":"x","input":${'['.repeat(levels)}${']'.repeat(levels)}},{"tool":"y"}]}`));
    scan.finishInto(deep);
    expect(deep.toolCalls).toEqual(['x', 'y']);
  });
});
