// fast-check generators for event streams: well-formed streams with the events they must
// yield, and SSE-flavoured garbage (line breaks of every kind, colons, field names, broken UTF-8).
import fc from 'fast-check';
import type { ReferenceEvent } from './reference-sse.js';

export interface GeneratedStream {
  bytes: Buffer;
  events: ReferenceEvent[];
  tokensUsed: number | null;
}

const lineEnding = fc.constantFrom('\n', '\r\n', '\r');
/** Text with no line break: ASCII, accents, emoji (multi-byte UTF-8 to split), JSON punctuation. */
const lineText = fc.string({ unit: fc.constantFrom('a', 'Z', '0', ' ', ':', '"', '{', '}', 'é', '日', '🌍', '\t', ','), maxLength: 24 });
const eventName = fc.constantFrom('token', 'tool_call', 'done', 'message', 'usage', 'é-vent');

interface EventModel {
  name: string | null;
  dataLines: string[];
  extras: Array<'comment' | 'id' | 'retry'>;
  tokens: number | null;
}

const eventModel: fc.Arbitrary<EventModel> = fc.record({
  name: fc.option(eventName, { nil: null }),
  dataLines: fc.array(lineText, { minLength: 1, maxLength: 3 }),
  extras: fc.array(fc.constantFrom('comment' as const, 'id' as const, 'retry' as const), { maxLength: 2 }),
  tokens: fc.option(fc.nat({ max: 100_000 }), { nil: null }),
});

/** One field line; `spaced` decides whether a space follows the colon (the parser strips one). */
function fieldLine(field: string, value: string, spaced: boolean): { line: string; parsedValue: string } {
  const line = spaced ? `${field}: ${value}` : `${field}:${value}`;
  return { line, parsedValue: !spaced && value.startsWith(' ') ? value.slice(1) : value };
}

/** Streams of 0–8 events with random line endings, comments and id/retry lines between fields. */
export const wellFormedStream: fc.Arbitrary<GeneratedStream> = fc
  .record({
    models: fc.array(eventModel, { maxLength: 8 }),
    endings: fc.array(lineEnding, { minLength: 64, maxLength: 64 }),
    spacing: fc.array(fc.boolean(), { minLength: 64, maxLength: 64 }),
  })
  .map(({ models, endings, spacing }) => {
    let text = '';
    let n = 0;
    const next = (): number => n++ % 64;
    const events: ReferenceEvent[] = [];
    let tokensUsed: number | null = null;
    for (const model of models) {
      const name = model.name ?? 'message';
      const dataLines = name === 'done' ? [model.tokens === null ? '{"latency_ms":3}' : `{"tokens_used":${model.tokens},"latency_ms":3}`] : model.dataLines;
      for (const extra of model.extras) {
        text += (extra === 'comment' ? ': keep-alive' : extra === 'id' ? 'id: 42' : 'retry: 1500') + endings[next()]!;
      }
      if (model.name !== null) text += `event: ${model.name}${endings[next()]!}`;
      const parsed: string[] = [];
      let ending = '\n';
      for (const value of dataLines) {
        const { line, parsedValue } = fieldLine('data', value, spacing[next()]!);
        ending = endings[next()]!;
        text += line + ending;
        parsed.push(parsedValue);
      }
      // The blank line repeats the last ending: "\r" then "\n" would be one CRLF, not a blank line.
      text += ending;
      events.push({ name, data: parsed.join('\n') });
      if (name === 'done') tokensUsed = model.tokens;
    }
    return { bytes: Buffer.from(text, 'utf8'), events, tokensUsed };
  });

/** Bytes an upstream might send by mistake or malice: SSE syntax, every line break, invalid UTF-8. */
export const sseGarbage: fc.Arbitrary<Buffer> = fc
  .array(
    fc.oneof(
      fc
        .constantFrom('\n', '\r', '\r\n', '\n\n', '\r\r', ':', ' ', 'data', 'data:', 'data: x', 'event:', 'event: done', 'id', 'retry: 9', 'x', '{"tokens_used":7}', 'é', '🌍')
        .map((text) => Buffer.from(text, 'utf8')),
      // Raw bytes, broken UTF-8 included; never 0xEF, so no byte-order mark appears by chance.
      fc.uint8Array({ minLength: 1, maxLength: 4 }).map((bytes) => Buffer.from(bytes.map((b) => (b === 0xef ? 0xee : b)))),
    ),
    { maxLength: 60 },
  )
  .map((parts) => Buffer.concat(parts));

/** Cut offsets for splitting a stream of `length` bytes into chunks (including one-byte chunks). */
export function cutsFor(maxLength: number): fc.Arbitrary<number[]> {
  return fc.array(fc.integer({ min: 1, max: Math.max(1, maxLength) }), { maxLength: 40 });
}
