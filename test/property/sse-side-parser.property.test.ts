// The SSE side-parser against a spec-written reference (reference-sse.ts): whatever the
// runner sends and however TCP chunks it, the gateway sees the events (and tokens_used) a
// client sees; and its boundary flags only promise what a client's parser will honour,
// since the gateway inserts pings and its final error event at those boundaries.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SseSideParser } from '../../src/proxy/sse-parser.js';
import { tokensFromDoneData } from '../../src/proxy/tokens-used.js';
import { parseSseReference, type ReferenceEvent } from '../helpers/reference-sse.js';
import { cutsFor, sseGarbage, wellFormedStream } from '../helpers/sse-arbitraries.js';
import { splitAtInside } from '../helpers/split-at.js';

interface SideParse {
  /** Per dispatched event: its data when it is named `done`, else null (the side-parser decodes no other). */
  events: (string | null)[];
  tokensUsed: number | null;
  atEventBoundary: boolean;
  atLineBoundary: boolean;
}

/** What the gateway learns from a stream: its events, `done.tokens_used` as sse-relay.ts reads it, the flags. */
function sideParse(chunks: Buffer[]): SideParse {
  const events: (string | null)[] = [];
  let tokensUsed: number | null = null;
  const parser = new SseSideParser({
    onEvent(doneData) {
      events.push(doneData);
      if (doneData !== null) tokensUsed = tokensFromDoneData(doneData);
    },
  });
  for (const chunk of chunks) parser.push(chunk);
  return { events, tokensUsed, atEventBoundary: parser.atEventBoundary, atLineBoundary: parser.atLineBoundary };
}

/** The reference's events as the side-parser reports them: one entry per event, data for `done` ones. */
function asSeen(events: readonly ReferenceEvent[]): (string | null)[] {
  return events.map((event) => (event.name === 'done' ? event.data : null));
}

/** Events whose lines come in any order: `event` lines after `data` lines, several `event` lines, names close to `done`. */
const shuffledFieldsStream: fc.Arbitrary<Buffer> = fc
  .array(
    fc.record({
      lines: fc.array(
        fc.oneof(
          fc.constantFrom('done', 'token', 'don', 'donee', ' done', '', 'é').map((name) => `event: ${name}`),
          fc.string({ unit: fc.constantFrom('a', ' ', ':', 'é', '🌍', '{', '"'), maxLength: 12 }).map((value) => `data:${value}`),
          fc.constantFrom('data', 'event', 'event:done', 'id: 1', 'retry: 5', ': c', 'x: y'),
        ),
        { maxLength: 6 },
      ),
      ending: fc.constantFrom('\n', '\r\n', '\r'),
    }),
    { maxLength: 6 },
  )
  .map((events) => Buffer.from(events.map(({ lines, ending }) => lines.map((line) => line + ending).join('') + ending).join(''), 'utf8'));

const ERROR_EVENT = 'event: error\ndata: {"type":"upstream_error","message":"m","request_id":"r"}\n\n';
const CONTINUATION = fc.oneof(
  wellFormedStream.map((s) => s.bytes),
  sseGarbage,
  fc.constantFrom('\n', '\ndata: more\n\n', '\r\n\r\n', 'data: y\n\n').map((t) => Buffer.from(t)),
);

describe('SSE side-parser (property)', () => {
  it('any chunking of a well-formed stream yields exactly its events and its tokens_used', () => {
    fc.assert(
      fc.property(wellFormedStream, cutsFor(4_000), (stream, cuts) => {
        const parsed = sideParse(splitAtInside(stream.bytes, cuts));
        expect(parsed.events).toEqual(asSeen(stream.events));
        expect(parsed.tokensUsed).toBe(stream.tokensUsed);
        // The reference agrees with the model: the generator is not fooling both parsers.
        expect(parseSseReference(stream.bytes).events).toEqual(stream.events);
        if (stream.events.length > 0) expect(parsed.atEventBoundary).toBe(true);
      }),
      { numRuns: 400 },
    );
  });

  it('any chunking of garbage yields the events a client would count, and the same flags as one chunk', () => {
    fc.assert(
      fc.property(sseGarbage, cutsFor(300), (bytes, cuts) => {
        const whole = sideParse([bytes]);
        const chunked = sideParse(splitAtInside(bytes, cuts));
        expect(chunked).toEqual(whole);
        const reference = parseSseReference(bytes, 'any-field');
        expect(chunked.events).toEqual(asSeen(reference.events));
        expect(chunked.tokensUsed).toBe(reference.tokensUsed);
      }),
      { numRuns: 600 },
    );
  });

  it('any chunking of events with their fields in any order yields the done events a client would see', () => {
    fc.assert(
      fc.property(shuffledFieldsStream, cutsFor(400), (bytes, cuts) => {
        const chunked = sideParse(splitAtInside(bytes, cuts));
        const reference = parseSseReference(bytes, 'any-field');
        expect(chunked.events).toEqual(asSeen(reference.events));
        expect(chunked.tokensUsed).toBe(reference.tokensUsed);
        expect(chunked).toEqual(sideParse([bytes]));
      }),
      { numRuns: 600 },
    );
  });

  it('at an event boundary a whole event can be inserted without changing what the client sees', () => {
    fc.assert(
      fc.property(fc.oneof(sseGarbage, wellFormedStream.map((s) => s.bytes)), CONTINUATION, cutsFor(300), (prefix, rest, cuts) => {
        const flags = sideParse(splitAtInside(prefix, cuts));
        fc.pre(flags.atEventBoundary);
        const original = parseSseReference(Buffer.concat([prefix, rest])).events;
        expect(parseSseReference(Buffer.concat([prefix, Buffer.from(': ping\n\n'), rest])).events).toEqual(original);
        expect(parseSseReference(Buffer.concat([prefix, Buffer.from(ERROR_EVENT)])).events.at(-1)).toEqual({ name: 'error', data: '{"type":"upstream_error","message":"m","request_id":"r"}' });
      }),
      { numRuns: 600 },
    );
  });

  it('at a line boundary a comment line can be inserted without splitting or merging events', () => {
    fc.assert(
      fc.property(fc.oneof(sseGarbage, wellFormedStream.map((s) => s.bytes)), CONTINUATION, cutsFor(300), (prefix, rest, cuts) => {
        const flags = sideParse(splitAtInside(prefix, cuts));
        fc.pre(flags.atLineBoundary && !flags.atEventBoundary);
        const original = parseSseReference(Buffer.concat([prefix, rest])).events;
        expect(parseSseReference(Buffer.concat([prefix, Buffer.from(': ping\n'), rest])).events).toEqual(original);
        // One more line break ends the event, so an event written after it stands on its own.
        expect(parseSseReference(Buffer.concat([prefix, Buffer.from('\n'), Buffer.from(ERROR_EVENT)])).events.at(-1)?.name).toBe('error');
      }),
      { numRuns: 600 },
    );
  });

  it('mid-line, a blank line and a new event always stand on their own', () => {
    fc.assert(
      fc.property(sseGarbage, cutsFor(300), (prefix, cuts) => {
        const flags = sideParse(splitAtInside(prefix, cuts));
        fc.pre(!flags.atLineBoundary);
        const events = parseSseReference(Buffer.concat([prefix, Buffer.from('\n\n'), Buffer.from(ERROR_EVENT)])).events;
        expect(events.at(-1)).toEqual({ name: 'error', data: '{"type":"upstream_error","message":"m","request_id":"r"}' });
      }),
      { numRuns: 400 },
    );
  });
});
