// The directly built request log line against pino's own: for random field values (quotes,
// backslashes, control characters, unicode, lone surrogates, strings either side of pino's
// 100-unit fast path, non-finite numbers, missing fields) the bytes handed to the
// destination are identical, for the production logger and the test gateway's plain one.
// Loggers the direct path cannot reproduce go through pino; disabled levels write nothing.
import { Writable } from 'node:stream';
import fc from 'fast-check';
import { pino, type Logger } from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { jsonString, requestLogWriter, type RequestLogFields } from '../../src/http/request-log-line.js';
import { createLogger, REDACT_PATHS } from '../../src/logger.js';

function capture(): { destination: Writable; lines: string[] } {
  const lines: string[] = [];
  const destination = new Writable({
    decodeStrings: false,
    write(chunk: string | Buffer, _encoding, callback) {
      lines.push(chunk.toString());
      callback();
    },
  });
  return { destination, lines };
}

const awkwardUnit = fc.constantFrom('"', '\\', '\n', '\u0000', '\u001f', '\u007f', '\u2028', 'é', '日', '🌍', '\ud800', '\udfff', '/', '<');
const anyUnit = fc.integer({ min: 0, max: 0xffff }).map((code) => String.fromCharCode(code));
const text = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.array(fc.oneof(awkwardUnit, anyUnit, fc.constant('a')), { maxLength: 130 }).map((units) => units.join('')),
  fc.string({ minLength: 95, maxLength: 110 }),
);
const number = fc.oneof(fc.double(), fc.integer(), fc.constantFrom(0, -0, NaN, Infinity, -Infinity, 0.1 + 0.2, 1e21, 5e-324));

const fields: fc.Arbitrary<RequestLogFields> = fc.record({
  request_id: text,
  trace_id: text,
  agent: text,
  route: text,
  key_id: fc.option(text, { nil: undefined }),
  status: number,
  outcome: text,
  error: fc.option(text, { nil: undefined }),
  upstream_failure: fc.option(text, { nil: undefined }),
  latency_ms: number,
  upstream_latency_ms: fc.option(number, { nil: undefined }),
  tokens_used: fc.option(number, { nil: null }),
  client_ip: text,
});

// What a gateway's own line holds: every string plain (ids, names, addresses), so the writer
// takes its quotes-in-the-constant-pieces path; the units either side of what needs escaping.
const plainText = fc.string({ maxLength: 120, unit: fc.constantFrom('a', 'Z', '0', '-', ':', '.', ' ', '~', '\u007f', 'é', '日', '\u2028', '\uffff') });
const plainFields: fc.Arbitrary<RequestLogFields> = fc.record({
  request_id: plainText,
  trace_id: plainText,
  agent: plainText,
  route: plainText,
  key_id: fc.option(plainText, { nil: undefined }),
  status: number,
  outcome: plainText,
  error: fc.option(plainText, { nil: undefined }),
  upstream_failure: fc.option(plainText, { nil: undefined }),
  latency_ms: number,
  upstream_latency_ms: fc.option(number, { nil: undefined }),
  tokens_used: fc.option(number, { nil: null }),
  client_ip: plainText,
});

/** The gateway's own setup: a child without redaction (src/http/chat-pipeline.ts). */
function requestLogger(build: (destination: Writable) => Logger): { logger: Logger; lines: string[] } {
  const { destination, lines } = capture();
  return { logger: build(destination).child({}, { redact: [] }), lines };
}

const loggers: Record<string, (destination: Writable) => Logger> = {
  'production (createLogger)': (destination) => createLogger({ level: 'info', destination, base: { worker: 2 } }),
  'test gateway (plain pino)': (destination) => pino({ level: 'info', redact: { paths: REDACT_PATHS, censor: '[redacted]' } }, destination),
  'debug level, epoch time, bindings': (destination) => pino({ level: 'debug', timestamp: pino.stdTimeFunctions.epochTime }, destination).child({ role: 'worker "1"' }),
};

describe('request log line', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['Date'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  for (const [name, build] of Object.entries(loggers)) {
    it(`is byte-identical to pino's line: ${name}`, () => {
      const { logger, lines } = requestLogger(build);
      const viaPino = vi.spyOn(logger, 'info');
      const write = requestLogWriter(logger);
      fc.assert(
        fc.property(fc.oneof(fields, plainFields), fc.integer({ min: 0, max: 4_102_444_800_000 }), (entry, now) => {
          vi.setSystemTime(now);
          lines.length = 0;
          logger.info(entry, 'request');
          write(entry);
          expect(lines).toHaveLength(2);
          expect(lines[1]).toBe(lines[0]);
        }),
        { numRuns: 500 },
      );
      // Only the comparison's own calls went through pino: the writer built its lines itself.
      expect(viaPino.mock.calls.length).toBeGreaterThanOrEqual(500);
      const ownCalls = viaPino.mock.calls.length;
      write(fc.sample(fields, 1)[0]!);
      expect(viaPino.mock.calls.length).toBe(ownCalls);
    });
  }

  it('escapes strings exactly as JSON.parse reads them back', () => {
    fc.assert(
      fc.property(text, (value) => {
        expect(JSON.parse(jsonString(value))).toBe(value);
      }),
    );
  });

  it('writes nothing when info is disabled, also after a level change', () => {
    const { logger, lines } = requestLogger((destination) => createLogger({ level: 'warn', destination }));
    const write = requestLogWriter(logger);
    const entry = fc.sample(fields, 1)[0]!;
    write(entry);
    expect(lines).toEqual([]);
    logger.level = 'info';
    write(entry);
    logger.info(entry, 'request');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toBe(lines[1]);
    logger.level = 'silent';
    write(entry);
    expect(lines).toHaveLength(2);
  });

  it('leaves loggers it cannot reproduce to pino', () => {
    const unusual: ((destination: Writable) => Logger)[] = [
      (destination) => pino({ mixin: () => ({ extra: 1 }) }, destination),
      (destination) => pino({ formatters: { log: (object) => ({ ...object, wrapped: true }) } }, destination),
      (destination) => pino({ serializers: { agent: () => 'serialised' } }, destination),
      (destination) => pino({ msgPrefix: '[gw] ' }, destination),
      (destination) => pino({ nestedKey: 'payload' }, destination),
      (destination) => pino({ errorKey: 'error' }, destination),
      (destination) => pino({ hooks: { streamWrite: (line) => line.toUpperCase() } }, destination),
    ];
    for (const build of unusual) {
      const { destination, lines } = capture();
      const logger = build(destination);
      const viaPino = vi.spyOn(logger, 'info');
      const entry = fc.sample(fields, 1)[0]!;
      requestLogWriter(logger)(entry);
      expect(viaPino).toHaveBeenCalledWith(entry, 'request');
      expect(lines).toHaveLength(1);
    }
  });
});
