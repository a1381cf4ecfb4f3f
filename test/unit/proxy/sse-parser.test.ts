import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SseSideParser } from '../../../src/proxy/sse-parser.js';
import { readToolCallData } from '../../../src/proxy/tokens-used.js';
import type { AnswerFacts } from '../../../src/request/answer-facts.js';
import { splitAt } from '../../helpers/split-at.js';

/** Each dispatched event as the sink sees it: a `done` event's data, or null for any other event. */
function parseAll(chunks: Buffer[]): { events: (string | null)[]; parser: SseSideParser } {
  const events: (string | null)[] = [];
  const parser = new SseSideParser({ onEvent: (doneData) => events.push(doneData) });
  for (const chunk of chunks) parser.push(chunk);
  return { events, parser };
}

const parse = (...chunks: string[]): (string | null)[] => parseAll(chunks.map((chunk) => Buffer.from(chunk))).events;

/** Every way of cutting `bytes` into up to three chunks (two cuts), including inside characters and CRLF. */
function* twoCuts(bytes: Buffer): Generator<Buffer[]> {
  for (let a = 0; a <= bytes.length; a++) {
    for (let b = a; b <= bytes.length; b++) yield [bytes.subarray(0, a), bytes.subarray(a, b), bytes.subarray(b)];
  }
}

const STREAM =
  'event: token\ndata: {"content":"Hé"}\n\n' +
  ': ping\n\n' +
  'event: token\r\ndata: {"content":"llo 🌍"}\r\n\r\n' +
  'data: plain\ndata: second line\n\n' +
  'event: tool_call\rdata: {"tool":"search"}\r\r' +
  'event: done\ndata: {"tokens_used":7,"latency_ms":12}\n\n';

const EXPECTED: (string | null)[] = [null, null, null, null, '{"tokens_used":7,"latency_ms":12}'];

/** The same events, all named `done`: their data is decoded, so the data parsing is checked too. */
const DONE_STREAM =
  'event: done\ndata: {"content":"Hé"}\n\n' +
  ': ping\n\n' +
  'event: done\r\ndata: {"content":"llo 🌍"}\r\n\r\n' +
  'event:done\ndata: plain\ndata:second line\ndata\ndata:  two spaces\n\n' +
  'event: done\rdata: {"tool":"search"}\r\r' +
  'data: {"tokens_used":7,"latency_ms":12}\nevent: done\n\n';

const DONE_EXPECTED: (string | null)[] = [
  '{"content":"Hé"}',
  '{"content":"llo 🌍"}',
  'plain\nsecond line\n\n two spaces',
  '{"tool":"search"}',
  '{"tokens_used":7,"latency_ms":12}',
];

describe('SseSideParser', () => {
  it('parses LF, CRLF and CR line endings, comments and multi-line data', () => {
    const { events, parser } = parseAll([Buffer.from(STREAM)]);
    expect(events).toEqual(EXPECTED);
    expect(parser.atEventBoundary).toBe(true);
  });

  it('decodes the data of done events only, whatever their line endings and field order', () => {
    const { events, parser } = parseAll([Buffer.from(DONE_STREAM)]);
    expect(events).toEqual(DONE_EXPECTED);
    expect(parser.atEventBoundary).toBe(true);
  });

  it('reports boundaries mid-event and mid-line', () => {
    const events: (string | null)[] = [];
    const parser = new SseSideParser({ onEvent: (doneData) => events.push(doneData) });
    parser.push(Buffer.from('event: tok'));
    expect(parser.atLineBoundary).toBe(false);
    expect(parser.atEventBoundary).toBe(false);
    parser.push(Buffer.from('en\n'));
    expect(parser.atLineBoundary).toBe(true);
    expect(parser.atEventBoundary).toBe(false);
    parser.push(Buffer.from('data: x\n\n'));
    expect(parser.atEventBoundary).toBe(true);
    expect(events).toEqual([null]);
  });

  it('yields the same events for any chunking of the stream, including splits inside UTF-8 and CRLF', () => {
    for (const [stream, expected] of [
      [STREAM, EXPECTED],
      [DONE_STREAM, DONE_EXPECTED],
    ] as const) {
      const bytes = Buffer.from(stream);
      fc.assert(
        fc.property(fc.uniqueArray(fc.integer({ min: 1, max: bytes.length - 1 }), { maxLength: 40 }), (cuts) => {
          expect(parseAll(splitAt(bytes, cuts)).events).toEqual(expected);
        }),
        { numRuns: 300 },
      );
    }
  });

  it('caps a hostile endless line without failing', () => {
    const { events } = parseAll([Buffer.alloc(300 * 1024, 0x61), Buffer.from('\n\nevent: done\ndata: {"tokens_used":1}\n\n')]);
    expect(events).toEqual(['{"tokens_used":1}']);
  });

  it('turns an event into done when its event line comes after its data lines', () => {
    const bytes = Buffer.from('data: {"tokens_used":3}\ndata: more\nevent: done\n\n');
    for (const chunks of twoCuts(bytes)) expect(parseAll(chunks).events).toEqual(['{"tokens_used":3}\nmore']);
    expect(parse('event: token\ndata: x\nevent: done\n\n')).toEqual(['x']);
  });

  it('lets the last event line win', () => {
    expect(parse('event: done\ndata: x\nevent: token\n\n')).toEqual([null]);
    expect(parse('event: done\nevent:\ndata: x\n\n')).toEqual([null]);
    expect(parse('event: token\nevent: done\ndata: x\n\n')).toEqual(['x']);
    expect(parse('event: done\nevent: done\ndata: x\n\n')).toEqual(['x']);
  });

  it('matches the name done exactly, and field names exactly', () => {
    for (const line of ['event: donee', 'event: don', 'event:  done', 'event: Done', 'event: done ', 'event', 'event:', 'eventdone', 'Event: done', 'event : done']) {
      expect(parse(`${line}\ndata: x\n\n`)).toEqual([null]);
    }
    expect(parse('event:done\ndata: x\n\n')).toEqual(['x']);
    // "data" without a colon is a data line with an empty value; "datax" and "dat" are no field at all.
    expect(parse('event: done\ndata\ndatax: y\ndat: z\ndata: w\n\n')).toEqual(['\nw']);
    // No field counted: no event; a comment, an unknown field or an over-long line is not one.
    expect(parse(': comment\nfoo: bar\n\n', 'id\n\n', 'retry: 5\n\n', 'event\n\n')).toEqual([null, null, null]);
  });

  it('reads a done name split across chunks', () => {
    expect(parse('ev', 'ent: do', 'ne\n', 'data: {"tokens_used":4}\n\n')).toEqual(['{"tokens_used":4}']);
    expect(parse('e', 'v', 'e', 'n', 't', ':', ' ', 'd', 'o', 'n', 'e', '\n', 'data: y\n\n')).toEqual(['y']);
    expect(parse('ev', 'ent: do', 'nee\n', 'data: y\n\n')).toEqual([null]);
  });

  it('decodes a multi-byte character of done data split across chunks', () => {
    const data = '{"content":"é🌍日"}';
    const bytes = Buffer.from(`event: done\ndata: ${data}\ndata: 🌍\n\n`);
    for (const chunks of twoCuts(bytes)) expect(parseAll(chunks).events).toEqual([`${data}\n🌍`]);
    // Byte by byte, too.
    expect(parseAll([...bytes].map((byte) => Buffer.from([byte]))).events).toEqual([`${data}\n🌍`]);
  });

  it('treats a CRLF split across chunks as one line break', () => {
    const bytes = Buffer.from('event: done\r\ndata: a\r\n\r\n');
    for (const chunks of twoCuts(bytes)) expect(parseAll(chunks).events).toEqual(['a']);
    const events: (string | null)[] = [];
    const parser = new SseSideParser({ onEvent: (doneData) => events.push(doneData) });
    parser.push(Buffer.from('event: done\r'));
    expect(parser.atLineBoundary).toBe(false);
    parser.push(Buffer.from('\ndata: a\r'));
    expect(parser.atLineBoundary).toBe(false);
    // The LF completes the CRLF: not a blank line, so the event is not dispatched yet.
    parser.push(Buffer.from('\n'));
    expect(events).toEqual([]);
    expect(parser.atLineBoundary).toBe(true);
    expect(parser.atEventBoundary).toBe(false);
    parser.push(Buffer.from('\r'));
    expect(events).toEqual(['a']);
    expect(parser.atEventBoundary).toBe(true);
    parser.push(Buffer.from('\n'));
    expect(events).toEqual(['a']);
    expect(parser.atEventBoundary).toBe(true);
  });

  it('caps the data kept of an event by decoded length; past the cap it is scanned, not kept, and a done reads as no count', () => {
    const a = 'a'.repeat(40_000);
    const b = 'b'.repeat(30_000);
    // 40 000 + 30 000 > 64 KiB: the data is scanned instead of kept; a `done` this large has no readable count.
    const capped = `event: done\ndata: ${a}\ndata: ${b}\ndata: c\n\n`;
    expect(parse(capped)).toEqual(['{}']);
    // The cap counts decoded UTF-16 units, not bytes: 60 000 bytes of "é" are 30 000 units.
    const accents = 'é'.repeat(30_000);
    expect(parse(`data: ${accents}\ndata: ${b}\nevent: done\n\n`)).toEqual([`${accents}\n${b}`]);
    // A data line over MAX_LINE_BYTES is still a field (its event is dispatched), never held.
    expect(parse(`data: ${'z'.repeat(140_000)}\n\n`)).toEqual([null]);
    expect(parse(`event: done\ndata: ${'z'.repeat(140_000)}\ndata: ok\n\n`)).toEqual(['{}']);
    // The same, however the stream is chunked (small chunks split each line into many parts).
    const bytes = Buffer.from(capped);
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 5_000 }), (size) => {
        const chunks: Buffer[] = [];
        for (let at = 0; at < bytes.length; at += size) chunks.push(bytes.subarray(at, at + size));
        expect(parseAll(chunks).events).toEqual(['{}']);
      }),
      { numRuns: 30 },
    );
  });

  it('reads the tool of a tool_call event of any size, however chunked, holding none of its data (H3-03)', () => {
    const filler = 'x'.repeat(200_000);
    const streams = [
      // One data line of 200 KB (over MAX_LINE_BYTES).
      `event: tool_call\ndata: {"input":{"q":"${filler}"},"tool":"web_search"}\n\n`,
      // Many lines past the 64 KiB cap, the tool on the last one, `event:` after the data.
      `data: {"output":"${'y'.repeat(50_000)}",\ndata: "more":"${'y'.repeat(50_000)}",\ndata:\ndata: "tool":"fetch"}\nevent: tool_call\n\n`,
      // A duplicate `tool`: the last is the one JSON.parse keeps; a tool deeper down is not the event's.
      `event: tool_call\ndata: {"tool":"first","input":{"tool":"deep","q":"${filler}"},"tool":"last"}\n\n`,
      // Not JSON once whole: no tool.
      `event: tool_call\ndata: {"tool":"broken","q":"${filler}"\n\n`,
    ];
    const expected = [['web_search'], ['fetch'], ['last'], []];
    streams.forEach((stream, index) => {
      const bytes = Buffer.from(stream);
      for (const size of [bytes.length, 65_536, 16_384, 1_000, 97]) {
        const facts: AnswerFacts = { model: null, toolCalls: null };
        const parser = new SseSideParser({ onEvent: () => undefined, onToolCall: (data) => readToolCallData(data, facts) }, true);
        for (let at = 0; at < bytes.length; at += size) parser.push(bytes.subarray(at, at + size));
        expect(facts.toolCalls ?? []).toEqual(expected[index]);
      }
    });
  });

  it('keeps every line of a done event with many data lines', () => {
    const lines = Array.from({ length: 300 }, (_, i) => `line ${i} é`);
    const stream = Buffer.from(`${lines.map((line) => `data: ${line}\n`).join('')}event: done\n\n`);
    expect(parseAll([stream]).events).toEqual([lines.join('\n')]);
    const chunks: Buffer[] = [];
    for (let at = 0; at < stream.length; at += 5) chunks.push(stream.subarray(at, at + 5));
    expect(parseAll(chunks).events).toEqual([lines.join('\n')]);
  });
});

describe('SseSideParser reading tool_call events (a traced stream)', () => {
  const TOOL_STREAM =
    'event: token\ndata: {"content":"a"}\n\n' +
    'event: tool_call\r\ndata: {"tool":"search",\r\ndata: "input":{"q":"x"}}\r\n\r\n' +
    'event: tool_calls\ndata: {"tool":"not-this-one"}\n\n' +
    'event: tool_cal\ndata: {"tool":"nor-this"}\n\n' +
    'data: {"tool":"calculator"}\nevent:tool_call\n\n' +
    'event: done\ndata: {"tokens_used":1}\n\n';

  function parseTools(chunks: Buffer[], readToolCalls: boolean): { events: (string | null)[]; tools: string[] } {
    const events: (string | null)[] = [];
    const tools: string[] = [];
    const parser = new SseSideParser({ onEvent: (doneData) => events.push(doneData), onToolCall: (data) => tools.push(data) }, readToolCalls);
    for (const chunk of chunks) parser.push(chunk);
    return { events, tools };
  }

  it('hands each tool_call event\'s data to onToolCall, exactly that name, however the bytes are cut', () => {
    const expected = JSON.stringify({
      events: [null, null, null, null, null, '{"tokens_used":1}'],
      tools: ['{"tool":"search",\n"input":{"q":"x"}}', '{"tool":"calculator"}'],
    });
    const wrong: string[] = [];
    let cuts = 0;
    for (const chunks of twoCuts(Buffer.from(TOOL_STREAM))) {
      cuts++;
      const got = JSON.stringify(parseTools(chunks, true));
      if (got !== expected) wrong.push(`${chunks.map((c) => c.length).join('+')}: ${got}`);
    }
    expect(cuts).toBeGreaterThan(10_000);
    expect(wrong.slice(0, 3)).toEqual([]);
  });

  it('never decodes them when not asked to', () => {
    expect(parseTools([Buffer.from(TOOL_STREAM)], false)).toEqual({ events: [null, null, null, null, null, '{"tokens_used":1}'], tools: [] });
  });
});
