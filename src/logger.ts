// pino logger: JSON lines, key material redacted wherever it could appear. Humans at a
// terminal get a compact one-line-per-entry rendering instead (pino-pretty is not a
// dependency); anything else — pipes, files, containers — always gets JSON.
import { pino, type Logger, type DestinationStream } from 'pino';
import { isoTimestampCache } from './clock.js';
import { BatchedLogDestination } from './log-destination.js';

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

/**
 * Pretty output only when a terminal is reading stdout and nobody asked for JSON
 * (`LOG_FORMAT=json`); `LOG_FORMAT=pretty` cannot force it onto a pipe, where a log
 * collector expects JSON.
 */
export function wantsPrettyLogs(stdoutIsTty: boolean | undefined, env: NodeJS.ProcessEnv = process.env): boolean {
  return stdoutIsTty === true && env.LOG_FORMAT !== 'json';
}

const LEVEL_COLOURS: Record<string, string> = { fatal: '35', error: '31', warn: '33', info: '32', debug: '36', trace: '90' };
const HIDDEN_FIELDS = new Set(['time', 'level', 'msg', 'pid', 'hostname']);

/** One JSON log line → `12:00:01.234 INFO  request status=200 agent=support …`. */
export function formatPrettyLine(line: string, colour = false): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line.endsWith('\n') ? line : `${line}\n`;
  }
  const time = typeof entry.time === 'string' ? entry.time.slice(11, 23) : '';
  const level = String(entry.level ?? '');
  const label = level.toUpperCase().padEnd(5);
  let text = `${time} ${colour && LEVEL_COLOURS[level] ? `\x1b[${LEVEL_COLOURS[level]}m${label}\x1b[0m` : label} ${String(entry.msg ?? '')}`;
  for (const [name, value] of Object.entries(entry)) {
    if (HIDDEN_FIELDS.has(name) || value === undefined || value === null) continue;
    text += ` ${name}=${typeof value === 'string' ? value : JSON.stringify(value)}`;
  }
  return `${text}\n`;
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
