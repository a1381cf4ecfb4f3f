// pino logger: JSON lines, key material redacted wherever it could appear. Humans at a
// terminal get a compact one-line-per-entry rendering instead (pino-pretty is not a
// dependency); anything else — pipes, files, containers — always gets JSON.
import { pino, type Logger, type DestinationStream } from 'pino';
import { isoTimestampCache } from './clock.js';
import { BatchedLogDestination } from './log-destination.js';
import { formatPrettyLine } from './log-format.js';

export { formatPrettyLine, wantsPrettyLogs } from './log-format.js';

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
  /** Human-readable lines on stdout instead of JSON (see `wantsPrettyLogs`). Ignored with `file`. */
  pretty?: boolean;
  /** Extra fields on every line, e.g. `{ worker: 2 }` in a cluster worker. */
  base?: Record<string, unknown>;
}

/**
 * Lines are written in batches of about 64 KiB, and at least every 250 ms, instead of one write
 * (and one thread-pool hop) per line: at thousands of requests a second the per-line writes
 * cost more CPU than building the lines (decision 0003). flushLogger() writes what is buffered
 * before exit; a SIGKILL can lose up to 250 ms of lines.
 */
const logTimestamp = isoTimestampCache();

export function createLogger(options: LoggerOptions): Logger {
  const destination =
    options.destination ??
    (options.pretty && !options.file ? prettyDestination(process.stdout) : new BatchedLogDestination({ target: options.file ?? 1 }));
  return pino(
    {
      level: options.level,
      base: { pid: process.pid, ...options.base },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      // pino's isoTime, through the one-millisecond cache.
      timestamp: () => `,"time":"${logTimestamp(Date.now())}"`,
      formatters: { level: (label) => ({ level: label }) },
    },
    destination,
  );
}

/** A pino destination that renders each line for a human; pino has already redacted it. */
export function prettyDestination(out: NodeJS.WriteStream): DestinationStream {
  const colour = out.isTTY === true && out.hasColors?.() === true;
  return { write: (line: string) => void out.write(formatPrettyLine(line, colour)) };
}

/** Resolves once buffered lines are written (before `process.exit`). */
export function flushLogger(logger: Logger): Promise<void> {
  return new Promise((resolve) => {
    try {
      logger.flush(() => resolve());
    } catch {
      resolve();
    }
  });
}

/** A logger that discards everything: for library code run from tests and the CLI. */
export const silentLogger: Logger = pino({ level: 'silent' });
