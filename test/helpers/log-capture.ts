// A pino logger whose lines the test reads back, parsed (the level by name, "warn") and as
// written (to search for what must never be logged).
import { Writable } from 'node:stream';
import { pino } from 'pino';
import type { Logger } from '../../src/logger.js';

export interface CapturedLogLine {
  level: string;
  msg: string;
}

/** `Line` names the fields a test reads beyond level and msg. */
export function captureLogLines<Line extends CapturedLogLine = CapturedLogLine>(): { logger: Logger; lines: Line[]; text: string[] } {
  const lines: Line[] = [];
  const text: string[] = [];
  const logger = pino(
    { formatters: { level: (label) => ({ level: label }) } },
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        text.push(chunk.toString());
        lines.push(JSON.parse(chunk.toString()) as Line);
        done();
      },
    }),
  );
  return { logger, lines, text };
}
