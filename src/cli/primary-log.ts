// The cluster primary's log lines (`role: "primary"`): the JSON lines logger.ts writes through
// pino — `level` as its label, `time`, `pid`, the fields, `msg` — and the same rendering for a
// terminal (log-format.ts) and batched writes (log-destination.ts), without pino: pino and
// its streams were ≈ 10 MB of the primary's ≈ 66 MB, and the primary writes a handful of
// lines (decision 0112). Its fields are ports, pids, signals and counts: nothing to redact.
import { isoTimestampCache } from '../clock.js';
import { BatchedLogDestination } from '../log-destination.js';
import { formatPrettyLine } from '../log-format.js';

/** pino's level values: a line is written when its level's value is at least the configured one's. */
const LEVEL_VALUES: Readonly<Record<string, number>> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60, silent: Number.POSITIVE_INFINITY };

export interface PrimaryLog {
  /** log.level of the running config (a reload changes it). */
  level: string;
  info(fields: Record<string, unknown>, msg: string): void;
  error(fields: Record<string, unknown>, msg: string): void;
  /** Resolves once every line written so far has been handed to the file or stdout. */
  flush(): Promise<void>;
}

export interface PrimaryLogOptions {
  level: string;
  /** A file to append to; stdout when absent. */
  file?: string | undefined;
  /** Lines rendered for a human on stdout (wantsPrettyLogs); ignored with `file`. */
  pretty?: boolean;
  /** Where pretty lines go (tests); process.stdout by default. */
  out?: NodeJS.WritableStream & { isTTY?: boolean; hasColors?(): boolean };
}

export function createPrimaryLog(options: PrimaryLogOptions): PrimaryLog {
  const timestamp = isoTimestampCache();
  const out = options.out ?? process.stdout;
  const pretty = options.pretty === true && options.file === undefined;
  const colour = pretty && out.isTTY === true && out.hasColors?.() === true;
  const destination = pretty ? undefined : new BatchedLogDestination({ target: options.file ?? 1 });
  const log: PrimaryLog = {
    level: options.level,
    info: (fields, msg) => write('info', fields, msg),
    error: (fields, msg) => write('error', fields, msg),
    flush: () => new Promise<void>((resolve) => (destination ? destination.flush(() => resolve()) : resolve())),
  };
  function write(level: 'info' | 'error', fields: Record<string, unknown>, msg: string): void {
    if (LEVEL_VALUES[level]! < (LEVEL_VALUES[log.level] ?? LEVEL_VALUES.info!)) return;
    const line = `${JSON.stringify({ level, time: timestamp(Date.now()), pid: process.pid, role: 'primary', ...fields, msg })}\n`;
    if (destination) destination.write(line);
    else out.write(formatPrettyLine(line, colour));
  }
  return log;
}
