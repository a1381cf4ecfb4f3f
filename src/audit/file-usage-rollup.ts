// Usage rollups in embedded mode (no Redis stream): the same period buckets as the Redis
// script (usage-buckets.ts), kept in line files per day, family and span under
// `audit.usage_dir` (usage-files.ts). It rides the audit file sink (UsageRollupSink): a
// batch the sink has written is counted into memory, and every flushIntervalMs the counts
// are added to the files under the file lock (several processes may share the directory).
// Off the request path; a crash loses at most the counts of the last interval (the audit
// file itself keeps every record).
import { readdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { readTextIfExists, withFileLock, writeFileAtomic } from '../files.js';
import type { Logger } from '../logger.js';
import type { AuditLine } from './audit-record.js';
import { escapeSessionId, parseRollupRecord, usableRecord, type RollupRecord } from './rollup-record.js';
import type { AuditSink } from './audit-sink.js';
import { addPacked, countRecord, groupsOf, hourOf, packFields, tupleGroup, USAGE_SPANS, type BucketFields } from './usage-buckets.js';
import { parseUsageFile, serializeUsageFile, USAGE_FILE, usageFileColumns, usageFilePath } from './usage-files.js';

const DAY_MS = 86_400_000;

export interface FileUsageRollupOptions {
  dir: string;
  retentionMs: number;
  logger: Logger;
  /** How often counted batches are added to the files (default 1 s). */
  flushIntervalMs?: number;
  now?: () => number;
}

/** One (hour, key, account, agent, session)'s counts since the last flush: what a record adds to. */
interface TupleCounts {
  record: RollupRecord;
  fields: BucketFields;
}

/** Counts waiting for one file: group → per column (hour, or the day's one) its fields. */
type PendingFile = Map<string, (BucketFields | undefined)[]>;

function addFields(into: BucketFields, from: BucketFields): void {
  for (const [field, n] of from) into.set(field, (into.get(field) ?? 0) + n);
}

export class FileUsageRollup {
  /** By "hour key account agent [session]": each record costs one lookup; families and spans are filled at flush. */
  private tuples = new Map<string, TupleCounts>();
  /** By file path. */
  private pending = new Map<string, PendingFile>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();
  private lastPruneMs = 0;

  constructor(private readonly options: FileUsageRollupOptions) {}

  /** Counts a written batch; the files get it at the next flush. */
  add(lines: readonly AuditLine[]): void {
    for (const line of lines) {
      const record = parseRollupRecord(line);
      if (record === undefined || !usableRecord(record)) continue;
      // The session joins the tuple's name (escaped: sessionGroup), so a tuple's counts
      // belong to one run, and the session family gets its own from the spread.
      const tuple = tupleGroup(record.key_id, record.account, record.agent);
      const id = record.session_id ? `${hourOf(record.ts)} ${tuple} ${escapeSessionId(record.session_id)}` : `${hourOf(record.ts)} ${tuple}`;
      let counts = this.tuples.get(id);
      if (counts === undefined) this.tuples.set(id, (counts = { record, fields: new Map() }));
      countRecord(counts.fields, record);
    }
    if (this.timer === undefined && this.tuples.size > 0) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        void this.flush();
      }, this.options.flushIntervalMs ?? 1_000);
      this.timer.unref();
    }
  }

  /** Spreads the counted tuples over their files: four or five families, an hour and a day bucket each. */
  private spreadTuples(): void {
    for (const { record, fields } of this.tuples.values()) {
      const hour = hourOf(record.ts);
      const day = hour.slice(0, 10);
      for (const [family, group] of groupsOf(record)) {
        for (const span of USAGE_SPANS) {
          const path = usageFilePath(this.options.dir, day, family, span);
          let file = this.pending.get(path);
          if (file === undefined) this.pending.set(path, (file = new Map()));
          let columns = file.get(group);
          if (columns === undefined) file.set(group, (columns = []));
          const column = span === 'd' ? 0 : Number(hour.slice(11, 13));
          addFields((columns[column] ??= new Map()), fields);
        }
      }
    }
    this.tuples = new Map();
  }

  /** Adds everything counted so far to the files (one flush at a time, in order). */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.flushOnce());
    return this.flushing;
  }

  async close(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.flush();
  }

  private async flushOnce(): Promise<void> {
    this.spreadTuples();
    const pending = this.pending;
    this.pending = new Map();
    for (const [path, counted] of pending) {
      try {
        await withFileLock(path, async () => {
          const lines = parseUsageFile(await readTextIfExists(path));
          const width = usageFileColumns(path.endsWith('.d.tsv') ? 'd' : 'h');
          for (const [group, columns] of counted) {
            const stored = lines.get(group) ?? [];
            const merged: string[] = new Array<string>(width).fill('');
            for (let c = 0; c < width; c++) {
              const add = columns[c];
              if (add === undefined) merged[c] = stored[c] ?? '';
              else {
                const fields: BucketFields = new Map();
                addPacked(fields, stored[c]);
                addFields(fields, add);
                merged[c] = packFields(fields);
              }
            }
            lines.set(group, merged);
          }
          await writeFileAtomic(path, serializeUsageFile(lines));
        });
      } catch (err) {
        // Kept for the next flush rather than lost: counts are only added once written.
        this.options.logger.error({ err, file: path }, 'cannot write the usage rollup file; retrying at the next flush');
        const again = this.pending.get(path);
        if (again === undefined) this.pending.set(path, counted);
        else {
          for (const [group, columns] of counted) {
            const into = again.get(group) ?? [];
            columns.forEach((fields, c) => fields && addFields((into[c] ??= new Map()), fields));
            again.set(group, into);
          }
        }
      }
    }
    await this.prune();
  }

  /** Removes files of days past the retention, at most once an hour. */
  private async prune(): Promise<void> {
    const nowMs = (this.options.now ?? Date.now)();
    if (nowMs - this.lastPruneMs < 3_600_000) return;
    this.lastPruneMs = nowMs;
    const names = await readdir(this.options.dir).catch(() => [] as string[]);
    for (const name of names) {
      const match = USAGE_FILE.exec(name);
      if (match && Date.parse(`${match[1]}T00:00:00Z`) + DAY_MS + this.options.retentionMs < nowMs) {
        await unlink(join(this.options.dir, name)).catch(() => {});
      }
    }
  }
}

/** An audit sink that counts every batch it has written into a FileUsageRollup. */
export class UsageRollupSink implements AuditSink {
  readonly name;

  constructor(
    private readonly inner: AuditSink,
    private readonly rollup: FileUsageRollup,
  ) {
    this.name = inner.name;
  }

  async write(lines: readonly AuditLine[]): Promise<void> {
    await this.inner.write(lines);
    this.rollup.add(lines);
  }

  async close(): Promise<void> {
    await this.inner.close();
    await this.rollup.close();
  }
}
