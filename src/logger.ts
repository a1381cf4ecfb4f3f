// pino logger: JSON lines, key material redacted wherever it could appear.
import { pino, destination as pinoDestination, stdTimeFunctions, type Logger, type DestinationStream } from 'pino';

export type { Logger };

export const REDACT_PATHS = [
  'authorization',
  '*.authorization',
  'headers.authorization',
  'req.headers.authorization',
  'request.headers.authorization',
  'key',
  '*.key',
  'rawKey',
  '*.rawKey',
];

export interface LoggerOptions {
  level: string;
  /** A file path to append to; stdout when absent. */
  file?: string | undefined;
  destination?: DestinationStream;
}

export function createLogger(options: LoggerOptions): Logger {
  const destination = options.destination ?? pinoDestination({ dest: options.file ?? 1, sync: false, mkdir: true });
  return pino(
    {
      level: options.level,
      base: { pid: process.pid },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      timestamp: stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    destination,
  );
}

/** A logger that discards everything: for library code run from tests and the CLI. */
export const silentLogger: Logger = pino({ level: 'silent' });
