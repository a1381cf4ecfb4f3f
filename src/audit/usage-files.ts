// The embedded mode's rollup files (docs/admin-api.md "Usage", decision 0024): the same
// period buckets as the Redis hashes, one file per day, family and span under
// `audit.usage_dir`:
//   usage-2026-01-31.key.d.tsv    a line per group: "<group>\t<packed day bucket>"
//   usage-2026-01-31.key.h.tsv    a line per group: "<group>\t<hour 00>\t…\t<hour 23>" (empty: none)
// Lines, not JSON: a report that wants a few groups reads only their lines (the reader
// indexes where each line is; group names hold no whitespace: usableRecord).
import { join } from 'node:path';
import type { UsageFamily, UsageSpan } from './usage-buckets.js';

/** The files' names: their day is what the retention prunes by. */
export const USAGE_FILE = /^usage-(\d{4}-\d\d-\d\d)\./;

export function usageFilePath(dir: string, day: string, family: UsageFamily, span: UsageSpan): string {
  return join(dir, `usage-${day}.${family}.${span}.tsv`);
}

/** Columns a line holds after its group. */
export function usageFileColumns(span: UsageSpan): number {
  return span === 'd' ? 1 : 24;
}

/** A file's lines as group → columns. */
export function parseUsageFile(text: string | undefined): Map<string, string[]> {
  const out = new Map<string, string[]>();
  if (text === undefined) return out;
  let at = 0;
  while (at < text.length) {
    let end = text.indexOf('\n', at);
    if (end < 0) end = text.length;
    const tab = text.indexOf('\t', at);
    if (tab > at && tab < end) out.set(text.slice(at, tab), text.slice(tab + 1, end).split('\t'));
    at = end + 1;
  }
  return out;
}

export function serializeUsageFile(lines: ReadonlyMap<string, readonly string[]>): string {
  const out: string[] = [];
  for (const [group, columns] of lines) out.push(`${group}\t${columns.join('\t')}\n`);
  return out.join('');
}
