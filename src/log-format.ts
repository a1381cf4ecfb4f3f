// How a log line reads for a human at a terminal, and when that rendering is used. A file of
// its own, without pino, so the cluster primary's line writer (cli/primary-log.ts) renders its
// lines as logger.ts renders everyone else's (decision 0112).

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
