// Reads the embedded mode's usage files (usage-files.ts) for a report. Each file is read
// through an index of where each group's line is (built on first read, kept while the file's
// inode, size and mtime stay the same: a past day's files never change, the current day's
// are replaced by each flush), so a report that wants a few groups reads only their lines
// (positioned reads) instead of decoding whole files (decision 0024 measured why).
import { open, type FileHandle } from 'node:fs/promises';
import type { UsageFamily, UsageSpan } from './usage-buckets.js';
import { usageFilePath } from './usage-files.js';
import type { UsageSource } from './usage-report.js';

interface FileIndex {
  ino: number;
  size: number;
  mtimeMs: number;
  /** Group → [start, end) of its columns (after the tab, before the newline). */
  lines: Map<string, [number, number]>;
}

/** Indexes kept; the oldest is dropped past this (≈ 100 KB each for 1,000 groups). */
const MAX_INDEXES = 512;
/** Up to this many wanted lines are read one by one; more, and the whole file is read. */
const MAX_LINE_READS = 32;

function indexOf(buffer: Buffer, stat: { ino: number; size: number; mtimeMs: number }): FileIndex {
  const lines = new Map<string, [number, number]>();
  let at = 0;
  while (at < buffer.length) {
    let end = buffer.indexOf(10, at);
    if (end < 0) end = buffer.length;
    const tab = buffer.indexOf(9, at);
    if (tab > at && tab < end) lines.set(buffer.toString('utf8', at, tab), [tab + 1, end]);
    at = end + 1;
  }
  return { ino: stat.ino, size: stat.size, mtimeMs: stat.mtimeMs, lines };
}

export class FileUsageSource implements UsageSource {
  private readonly indexes = new Map<string, FileIndex>();

  constructor(private readonly dir: string) {}

  /** The file's index, and its contents when they had to be read to build it. */
  private async indexed(handle: FileHandle, path: string): Promise<{ index: FileIndex; buffer?: Buffer }> {
    const stat = await handle.stat();
    const known = this.indexes.get(path);
    if (known && known.ino === stat.ino && known.size === stat.size && known.mtimeMs === stat.mtimeMs) return { index: known };
    const buffer = Buffer.allocUnsafe(stat.size);
    const { bytesRead } = await handle.read(buffer, 0, stat.size, 0);
    const index = indexOf(buffer.subarray(0, bytesRead), stat);
    this.indexes.delete(path);
    this.indexes.set(path, index);
    if (this.indexes.size > MAX_INDEXES) this.indexes.delete(this.indexes.keys().next().value!);
    return { index, buffer };
  }

  /** Runs `use` on the open file, or returns `absent` when there is no such file. */
  private async withFile<T>(path: string, absent: T, use: (handle: FileHandle) => Promise<T>): Promise<T> {
    let handle: FileHandle;
    try {
      handle = await open(path, 'r');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return absent;
      throw err;
    }
    try {
      return await use(handle);
    } finally {
      await handle.close();
    }
  }

  async groupNames(family: UsageFamily, days: readonly string[]): Promise<Set<string>> {
    const perDay = await Promise.all(
      days.map((day) => {
        const path = usageFilePath(this.dir, day, family, 'd');
        return this.withFile(path, [] as string[], async (handle) => [...(await this.indexed(handle, path)).index.lines.keys()]);
      }),
    );
    return new Set(perDay.flat());
  }

  /** The columns of the wanted groups' lines in one file. */
  private linesOf(path: string, groups: readonly string[]): Promise<Map<string, string[]>> {
    return this.withFile(path, new Map<string, string[]>(), async (handle) => {
      const { index, buffer } = await this.indexed(handle, path);
      const out = new Map<string, string[]>();
      const wanted = groups.filter((group) => index.lines.has(group));
      let contents = buffer;
      if (contents === undefined && wanted.length > MAX_LINE_READS) {
        contents = Buffer.allocUnsafe(index.size);
        await handle.read(contents, 0, index.size, 0);
      }
      for (const group of wanted) {
        const [start, end] = index.lines.get(group)!;
        let text: string;
        if (contents !== undefined) text = contents.toString('utf8', start, end);
        else {
          const part = Buffer.allocUnsafe(end - start);
          await handle.read(part, 0, end - start, start);
          text = part.toString('utf8');
        }
        out.set(group, text.split('\t'));
      }
      return out;
    });
  }

  async readGroups(family: UsageFamily, span: UsageSpan, periods: readonly string[], groups: readonly string[]): Promise<(string | null)[][]> {
    const days = [...new Set(periods.map((period) => period.slice(0, 10)))];
    const lines = await Promise.all(days.map((day) => this.linesOf(usageFilePath(this.dir, day, family, span), groups)));
    const files = new Map(days.map((day, i) => [day, lines[i]!]));
    return periods.map((period) => {
      const file = files.get(period.slice(0, 10))!;
      const column = span === 'd' ? 0 : Number(period.slice(11, 13));
      return groups.map((group) => file.get(group)?.[column] || null);
    });
  }
}
