import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SseSideParser, tokensFromDoneData } from '../../../src/proxy/sse-parser.js';

function parseAll(chunks: Buffer[]): { events: [string, string][]; parser: SseSideParser } {
  const events: [string, string][] = [];
  const parser = new SseSideParser({ onEvent: (name, data) => events.push([name, data]) });
  for (const chunk of chunks) parser.push(chunk);
  return { events, parser };
}

const STREAM =
  'event: token\ndata: {"content":"Hé"}\n\n' +
  ': ping\n\n' +
  'event: token\r\ndata: {"content":"llo 🌍"}\r\n\r\n' +
  'data: plain\ndata: second line\n\n' +
  'event: tool_call\rdata: {"tool":"search"}\r\r' +
  'event: done\ndata: {"tokens_used":7,"latency_ms":12}\n\n';

const EXPECTED: [string, string][] = [
  ['token', '{"content":"Hé"}'],
  ['token', '{"content":"llo 🌍"}'],
  ['message', 'plain\nsecond line'],
  ['tool_call', '{"tool":"search"}'],
  ['done', '{"tokens_used":7,"latency_ms":12}'],
];

describe('SseSideParser', () => {
  it('parses LF, CRLF and CR line endings, comments and multi-line data', () => {
    const { events, parser } = parseAll([Buffer.from(STREAM)]);
    expect(events).toEqual(EXPECTED);
    expect(parser.atEventBoundary).toBe(true);
  });

  it('reports boundaries mid-event and mid-line', () => {
    const events: string[] = [];
    const parser = new SseSideParser({ onEvent: (name) => events.push(name) });
    parser.push(Buffer.from('event: tok'));
    expect(parser.atLineBoundary).toBe(false);
    expect(parser.atEventBoundary).toBe(false);
    parser.push(Buffer.from('en\n'));
    expect(parser.atLineBoundary).toBe(true);
    expect(parser.atEventBoundary).toBe(false);
    parser.push(Buffer.from('data: x\n\n'));
    expect(parser.atEventBoundary).toBe(true);
    expect(events).toEqual(['token']);
  });

  it('yields the same events for any chunking of the stream, including splits inside UTF-8 and CRLF', () => {
    const bytes = Buffer.from(STREAM);
    fc.assert(
      fc.property(fc.uniqueArray(fc.integer({ min: 1, max: bytes.length - 1 }), { maxLength: 40 }), (cuts) => {
        const sorted = [...cuts].sort((a, b) => a - b);
        const chunks: Buffer[] = [];
        let start = 0;
        for (const cut of sorted) {
          chunks.push(bytes.subarray(start, cut));
          start = cut;
        }
        chunks.push(bytes.subarray(start));
        expect(parseAll(chunks).events).toEqual(EXPECTED);
      }),
      { numRuns: 300 },
    );
  });

  it('caps a hostile endless line without failing', () => {
    const { events } = parseAll([Buffer.alloc(300 * 1024, 0x61), Buffer.from('\n\nevent: done\ndata: {"tokens_used":1}\n\n')]);
    expect(events).toEqual([['done', '{"tokens_used":1}']]);
  });
});

describe('tokensFromDoneData', () => {
  it('reads a non-negative integer and rejects anything else', () => {
    expect(tokensFromDoneData('{"tokens_used":42}')).toBe(42);
    expect(tokensFromDoneData('{"tokens_used":-1}')).toBeNull();
    expect(tokensFromDoneData('{"tokens_used":"42"}')).toBeNull();
    expect(tokensFromDoneData('not json')).toBeNull();
    expect(tokensFromDoneData('{}')).toBeNull();
  });
});
