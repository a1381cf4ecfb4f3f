// Usage rollups in embedded mode (no Redis stream): the same hourly buckets as the Redis
// script (usage-buckets.ts), kept in one JSON file per day, `usage-YYYY-MM-DD.json` under
// `audit.usage_dir`:
//   {"version": 1, "buckets": {"<family>:<group>:<hour>": {"<field>": n, ...}}, "index": ["key\taccount\tagent", ...]}
// It rides the audit file sink (UsageRollupSink): a batch the sink has written is counted
// into memory, and every flushIntervalMs the counts are added to the day files under the
// file lock (several processes may share the directory). Off the request path; a crash
// loses at most the counts of the last interval (the audit file itself keeps every record).
import { readdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { readTextIfExists, withFileLock, writeFileAtomic } from '../files.js';
import type { Logger } from '../logger.js';
import type { AuditLine } from './audit-record.js';
import type { AuditSink } from './audit-sink.js';
import { addTo, groupsOf, hourOf, indexMember, latencyBucket, parseRollupRecord, type BucketFields, type RollupRecord } from './usage-buckets.js';

const DAY_FILE = /^usage-(\d{4}-\d\d-\d\d)\.json$/;
const DAY_MS = 86_400_000;

export function usageDayFile(dir: string, day: string): string {
  return join(dir, `usage-${day}.json`);
}

export interface UsageDay {
  buckets: Map<string, BucketFields>;
  index: Set<string>;
}

export function parseUsageDay(text: string | undefined): UsageDay {
  const day: UsageDay = { buckets: new Map(), index: new Set() };
  if (text === undefined || text.trim() === '') return day;
  const document = JSON.parse(text) as { version?: unknown; buckets?: Record<string, Record<string, number>>; index?: string[] };
  if (document.version !== 1) throw new Error(`unsupported usage file version ${JSON.stringify(document.version)}`);
  for (const [id, fields] of Object.entries(document.buckets ?? {})) day.buckets.set(id, new Map(Object.entries(fields)));
  for (const member of document.index ?? []) day.index.add(member);
  return day;
}

function serializeUsageDay(day: UsageDay): string {
  const buckets: Record<string, Record<string, number>> = {};
  for (const [id, fields] of day.buckets) buckets[id] = Object.fromEntries(fields);
  return `${JSON.stringify({ version: 1, buckets, index: [...day.index] })}\n`;
}

export interface FileUsageRollupOptions {
  dir: string;
  retentionMs: number;
  logger: Logger;
  /** How often counted batches are added to the day files (default 1 s). */
  flushIntervalMs?: number;
  now?: () => number;
}

/** One (hour, key, account, agent)'s counts since the last flush: what a record adds to. */
interface TupleCounts {
  record: RollupRecord;
  fields: BucketFields;
}

export class FileUsageRollup {
  /** By "hour \t key \t account \t agent": each record costs one lookup; the four families are filled at flush. */
  private tuples = new Map<string, TupleCounts>();
  private pending = new Map<string, UsageDay>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();
  private lastPruneMs = 0;

  constructor(private readonly options: FileUsageRollupOptions) {}

  /** Counts a written batch; the day files get it at the next flush. */
  add(lines: readonly AuditLine[]): void {
    for (const line of lines) {
      const record = parseRollupRecord(line);
      if (record === undefined) continue;
      const id = `${hourOf(record.ts)}\t${indexMember(record)}`;
      let counts = this.tuples.get(id);
      if (counts === undefined) this.tuples.set(id, (counts = { record, fields: new Map() }));
      const fields = counts.fields;
      addTo(fields, 'requests', 1);
      if (record.tokens_used !== null && record.tokens_used > 0) addTo(fields, 'tokens', Math.floor(record.tokens_used));
      if (record.outcome !== 'ok') addTo(fields, `e:${record.outcome}`, 1);
      addTo(fields, `l:${latencyBucket(record.latency_ms)}`, 1);
    }
    if (this.timer === undefined && this.tuples.size > 0) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        void this.flush();
      }, this.options.flushIntervalMs ?? 1_000);
      this.timer.unref();
    }
  }

  /** Spreads the counted tuples over their day's buckets (four families each) and index. */
  private spreadTuples(): void {
    for (const { record, fields } of this.tuples.values()) {
      const dayName = record.ts.slice(0, 10);
      let day = this.pending.get(dayName);
      if (day === undefined) this.pending.set(dayName, (day = { buckets: new Map(), index: new Set() }));
      const hour = hourOf(record.ts);
      for (const [family, group] of groupsOf(record)) {
        const id = `${family}:${group}:${hour}`;
        let bucket = day.buckets.get(id);
        if (bucket === undefined) day.buckets.set(id, (bucket = new Map()));
        for (const [field, n] of fields) addTo(bucket, field, n);
      }
      day.index.add(indexMember(record));
    }
    this.tuples = new Map();
  }

  /** Adds everything counted so far to the day files (one flush at a time, in order). */
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
    for (const [dayName, counted] of pending) {
      const path = usageDayFile(this.options.dir, dayName);
      try {
        await withFileLock(path, async () => {
          const day = parseUsageDay(await readTextIfExists(path));
          for (const [id, fields] of counted.buckets) {
            const stored = day.buckets.get(id) ?? new Map<string, number>();
            for (const [field, n] of fields) stored.set(field, (stored.get(field) ?? 0) + n);
            day.buckets.set(id, stored);
          }
          for (const member of counted.index) day.index.add(member);
          await writeFileAtomic(path, serializeUsageDay(day));
        });
      } catch (err) {
        // Kept for the next flush rather than lost: counts are only added once written.
        this.options.logger.error({ err, file: path }, 'cannot write the usage rollup file; retrying at the next flush');
        const again = this.pending.get(dayName);
        if (again === undefined) this.pending.set(dayName, counted);
        else {
          for (const [id, fields] of counted.buckets) {
            const merged = again.buckets.get(id) ?? new Map<string, number>();
            for (const [field, n] of fields) merged.set(field, (merged.get(field) ?? 0) + n);
            again.buckets.set(id, merged);
          }
          for (const member of counted.index) again.index.add(member);
        }
      }
    }
    await this.prune();
  }

  /** Removes day files past the retention, at most once an hour. */
  private async prune(): Promise<void> {
    const nowMs = (this.options.now ?? Date.now)();
    if (nowMs - this.lastPruneMs < 3_600_000) return;
    this.lastPruneMs = nowMs;
    const names = await readdir(this.options.dir).catch(() => [] as string[]);
    for (const name of names) {
      const match = DAY_FILE.exec(name);
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
