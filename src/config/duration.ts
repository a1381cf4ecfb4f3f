// Duration strings of the config ("100ms", "15s", "1m", "2h", "1d") to milliseconds.
const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const DURATION_PATTERN = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$/;

/** Returns milliseconds, or undefined when the text is not a duration with a unit. */
export function parseDurationMs(text: string): number | undefined {
  const match = DURATION_PATTERN.exec(text);
  if (!match) return undefined;
  const value = Number(match[1]);
  const unit = match[2] as keyof typeof UNIT_MS;
  const ms = Math.round(value * UNIT_MS[unit]);
  return Number.isFinite(ms) ? ms : undefined;
}

/** Formats milliseconds back to the shortest exact duration string, for messages and docs. */
export function formatDurationMs(ms: number): string {
  for (const unit of ['d', 'h', 'm', 's'] as const) {
    if (ms >= UNIT_MS[unit] && ms % UNIT_MS[unit] === 0) return `${ms / UNIT_MS[unit]}${unit}`;
  }
  return `${ms}ms`;
}
