// The write-ahead journal of the usage audit (decision 0022): every record is in the OS
// (the page cache, which a SIGKILL does not touch) before its batch can be lost with the
// process. Records recorded in one event-loop turn are written with ONE writeSync at the end
// of that turn (setImmediate), never one write per request. A batch's records stay in the
// journal until every sink has written or spooled them; then the segment file holding them
// is truncated (or, past rotateBytes, rotated and deleted). On start, what a killed process
// left is read back and sent again (at-least-once: consumers drop duplicates by `id`).
// One file over 300 lines: the turn's write, the truncation once sinks are done and the read
// back at start all move the same segment files and offsets, which no second file should touch.
//
// Files: `<dir>/<stem>.<seq><ext>` (var/audit-journal.1.jsonl, ...), one owner process
// each (workers get their own path). A line torn by a crash mid-write has no newline: it is
// skipped on recovery and reported; the next write after a failed one starts on a new line.
import { closeSync, ftruncateSync, mkdirSync, openSync, readdirSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { join, parse } from 'node:path';
import type { Logger } from '../logger.js';
import { metrics } from '../metrics/metrics.js';
import type { AuditLine } from './audit-record.js';
import { isRecordLine } from './audit-spool.js';

/** A segment this big (bytes) is closed at the next batch boundary and a new one started. */
const DEFAULT_ROTATE_BYTES = 4 * 1024 * 1024;

/** One journal file and how many sealed batches with records in it no sink has settled yet. */
export interface JournalSegment {
  readonly path: string;
  batches: number;
}

interface ActiveSegment extends JournalSegment {
  fd: number;
  bytes: number;
}

export interface RecoveredJournal {
  /** Whole records from segments a previous process left, oldest segment first, in order. */
  lines: AuditLine[];
  /** Each recovered segment with its records' range in `lines` ([start, end)). */
  segments: { segment: JournalSegment; start: number; end: number }[];
  /** Torn (no newline: killed mid-write) or unreadable lines skipped. */
  skipped: number;
}

export interface AuditJournalOptions {
  logger: Logger;
  rotateBytes?: number;
}

export class AuditJournal {
  private readonly dir: string;
  private readonly stem: string;
  private readonly ext: string;
  private readonly logger: Logger;
  private readonly rotateBytes: number;
  private nextSeq = 1;
  private active: ActiveSegment | undefined;
  /** Segments closed for writing that still hold records not every sink has settled. */
  private readonly retired = new Set<JournalSegment>();
  /** Segments holding records of the open batch (written since the last seal); one, unless a write failed. */
  private readonly openWritten = new Set<JournalSegment>();
  /** Lines recorded this turn, written by the turn's flush. */
  private pending: AuditLine[] = [];
  /** Called after the turn's write (responses whose last bytes wait for their record). */
  private waiters: (() => void)[] = [];
  private scheduled = false;
  /** The last write failed part-way: the next one starts with a newline so it cannot glue onto a torn line. */
  private torn = false;
  private failing = false;
  private closed = false;
  private readonly onTurnEnd = (): void => {
    this.scheduled = false;
    this.flush();
  };

  constructor(
    /** The configured path (`audit.journal`), e.g. var/audit-journal.jsonl. */
    readonly path: string,
    options: AuditJournalOptions,
  ) {
    const { dir, name, ext } = parse(path);
    this.dir = dir === '' ? '.' : dir;
    this.stem = name;
    this.ext = ext;
    this.logger = options.logger;
    this.rotateBytes = options.rotateBytes ?? DEFAULT_ROTATE_BYTES;
  }

  /**
   * Reads what an earlier process left (startup only: synchronous on purpose, before the
   * first request). The segments stay on disk until the caller settles their records again:
   * each recovered segment starts with `batches` 0; the caller adds one per batch it makes.
   */
  recover(): RecoveredJournal {
    mkdirSync(this.dir, { recursive: true });
    const lines: AuditLine[] = [];
    const segments: RecoveredJournal['segments'] = [];
    let skipped = 0;
    for (const { path, seq } of this.segmentFiles()) {
      this.nextSeq = Math.max(this.nextSeq, seq + 1);
      const text = readFileSync(path, 'utf8');
      const start = lines.length;
      const parts = text.split('\n');
      // What follows the last newline: '' for a whole file, else a line torn mid-write.
      const tail = parts.pop()!;
      if (tail !== '') {
        skipped += 1;
        this.logger.warn({ journal: path, bytes: Buffer.byteLength(tail) }, 'audit journal ends in a torn line (killed mid-write); skipping it');
      }
      for (const line of parts) {
        if (line === '') continue;
        if (isRecordLine(line)) lines.push(line);
        else {
          skipped += 1;
          this.logger.warn({ journal: path, line: line.slice(0, 200) }, 'skipping an unreadable audit journal line');
        }
      }
      if (lines.length === start) this.remove(path);
      else {
        const segment: JournalSegment = { path, batches: 0 };
        this.retired.add(segment);
        segments.push({ segment, start, end: lines.length });
      }
    }
    if (lines.length > 0) {
      metrics.auditRecords.inc({ sink: 'journal', result: 'recovered' }, lines.length);
      this.logger.warn({ journal: this.path, records: lines.length, segments: segments.length, skipped }, 'audit journal holds records of an earlier run that no sink confirmed; sending them again');
    }
    return { lines, segments, skipped };
  }

  /** Queues the record for this turn's write. Never throws, never blocks. */
  add(line: AuditLine): void {
    this.pending.push(line);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.onTurnEnd);
    }
  }

  /** Calls `callback` right after this turn's write, whether it succeeded or not (then it was logged and counted). */
  afterWrite(callback: () => void): void {
    this.waiters.push(callback);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.onTurnEnd);
    }
  }

  /**
   * The open batch is sealed: writes what is pending now and returns the segments holding
   * the batch's records (usually one), each counting the batch until settle(). Rotates a
   * segment grown past rotateBytes, so under steady load files are dropped whole.
   */
  seal(): JournalSegment[] | undefined {
    this.flush();
    if (this.openWritten.size === 0) return undefined;
    const segments = [...this.openWritten];
    this.openWritten.clear();
    for (const segment of segments) segment.batches += 1;
    const active = this.active;
    if (active && active.bytes >= this.rotateBytes) this.retire(active);
    return segments;
  }

  /** Every sink has written or spooled a batch held in `segments`: a segment none of whose records is left goes. */
  settle(segments: readonly JournalSegment[]): void {
    for (const segment of segments) {
      segment.batches -= 1;
      if (segment.batches > 0 || this.openWritten.has(segment)) continue;
      if (segment === this.active) this.truncateActive();
      else if (this.retired.delete(segment)) this.remove(segment.path);
    }
  }

  /** Writes what is pending now (the turn's flush; also at a seal and at close), then releases the waiters. Never throws. */
  flush(): void {
    this.write();
    if (this.waiters.length === 0) return;
    const waiters = this.waiters;
    this.waiters = [];
    for (const waiter of waiters) {
      try {
        waiter();
      } catch (err) {
        this.logger.error({ err }, 'a response waiting for the audit journal failed to end');
      }
    }
  }

  private write(): void {
    const lines = this.pending;
    const records = lines.length;
    if (records === 0 || this.closed) return;
    this.pending = [];
    try {
      const segment = this.active ?? this.openSegment();
      this.openWritten.add(segment);
      // One flat string to encode: the trailing '' gives the last newline (and a leading one
      // the newline after a torn line). A template around the join made a concatenated
      // string that Buffer.from flattened first: the turn's lines copied once more.
      lines.push('');
      if (this.torn) lines.unshift('');
      const buffer = Buffer.from(lines.join('\n'), 'utf8');
      this.torn = true;
      let written = 0;
      while (written < buffer.length) written += writeSync(segment.fd, buffer, written, buffer.length - written);
      this.torn = false;
      segment.bytes += buffer.length;
      if (this.failing) {
        this.failing = false;
        this.logger.info({ journal: segment.path }, 'audit journal writable again');
      }
    } catch (err) {
      // The records still go to the sinks from memory; only their insurance against a kill is gone.
      metrics.auditRecords.inc({ sink: 'journal', result: 'failed' }, records);
      if (!this.failing) {
        this.failing = true;
        this.logger.error({ err, journal: this.path }, 'cannot write the audit journal; records are unprotected against a kill until it works again');
      }
      this.closeActiveAfterError();
    }
  }

  /** Writes what is pending and closes the active segment. Segments with unsettled records stay for the next start. */
  close(): void {
    this.flush();
    this.closed = true;
    const active = this.active;
    this.active = undefined;
    if (!active) return;
    closeSync(active.fd);
    if (active.batches <= 0 && !this.openWritten.has(active)) this.remove(active.path);
  }

/** Segment files on disk with this journal's name, oldest first. */
  private segmentFiles(): { path: string; seq: number }[] {
    const prefix = `${this.stem}.`;
    const found: { path: string; seq: number }[] = [];
    for (const entry of readdirSync(this.dir)) {
      if (!entry.startsWith(prefix) || !entry.endsWith(this.ext)) continue;
      const middle = entry.slice(prefix.length, entry.length - this.ext.length);
      if (!/^\d+$/.test(middle)) continue;
      found.push({ path: join(this.dir, entry), seq: Number(middle) });
    }
    return found.sort((a, b) => a.seq - b.seq);
  }

  private openSegment(): ActiveSegment {
    mkdirSync(this.dir, { recursive: true });
    const path = join(this.dir, `${this.stem}.${this.nextSeq}${this.ext}`);
    this.nextSeq += 1;
    const fd = openSync(path, 'a', 0o600);
    const segment: ActiveSegment = { path, fd, bytes: 0, batches: 0 };
    this.active = segment;
    this.torn = false;
    return segment;
  }

  private retire(segment: ActiveSegment): void {
    this.active = undefined;
    try {
      closeSync(segment.fd);
    } catch (err) {
      this.logger.warn({ err, journal: segment.path }, 'closing an audit journal segment failed');
    }
    if (segment.batches <= 0 && !this.openWritten.has(segment)) this.remove(segment.path);
    else this.retired.add(segment);
  }

  private truncateActive(): void {
    const segment = this.active!;
    try {
      ftruncateSync(segment.fd, 0);
      segment.bytes = 0;
      this.torn = false;
    } catch (err) {
      this.logger.warn({ err, journal: segment.path }, 'cannot truncate the audit journal; starting a new segment');
      this.retire(segment);
    }
  }

  /** After a failed write the descriptor may be bad: keep the file (its records count) and open a new one next time. */
  private closeActiveAfterError(): void {
    const segment = this.active;
    if (!segment) return;
    this.active = undefined;
    try {
      closeSync(segment.fd);
    } catch {
      // Already unusable; the file, if any, is read at the next start.
    }
    if (segment.batches > 0 || this.openWritten.has(segment)) this.retired.add(segment);
    else this.remove(segment.path);
  }

  private remove(path: string): void {
    try {
      unlinkSync(path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') this.logger.warn({ err, journal: path }, 'cannot delete a settled audit journal segment');
    }
  }
}
