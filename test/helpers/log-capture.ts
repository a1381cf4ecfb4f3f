// A pino logger whose lines the test reads back as objects, the level by name ("warn").
import { Writable } from 'node:stream';
import { pino } from 'pino';
import type { Logger } from '../../src/logger.js';

export interface CapturedLogLine {
  level: string;
  msg: string;
}

export function captureLogLines(): { logger: Logger; lines: CapturedLogLine[] } {
  const lines: CapturedLogLine[] = [];
  const logger = pino(
    { formatters: { level: (label) => ({ level: label }) } },
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(JSON.parse(chunk.toString()));
        done();
      },
    }),
  );
  return { logger, lines };
}
