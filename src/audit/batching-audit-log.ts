// The AuditLog the request pipeline calls: record() only pushes onto the open batch. A
// batch is sealed when it reaches batchSize or flushIntervalMs after its first record,
// and handed to every sink's channel, which writes it, or spools it when the sink is down
// or behind (see audit-sink-channel.ts). Nothing here blocks or throws on the request path.
// With a journal (audit-journal.ts, decision 0022) each record is also written to a local
// file at the end of its event-loop turn and kept there until every sink has settled its
// batch, so a SIGKILL loses none; what a killed process left is sent first on start.
import type { Clock } from '../clock.js';
import type { Logger } from '../logger.js';
import { metrics } from '../metrics/metrics.js';
import { toAuditLine, type AuditLine, type AuditLog, type AuditRecord } from './audit-record.js';
import { AuditSinkChannel } from './audit-sink-channel.js';
import type { AuditSink } from './audit-sink.js';
import type { AuditJournal, JournalSegment } from './audit-journal.js';
import { AuditSpool, spoolPathFor } from './audit-spool.js';

export interface BatchingAuditLogOptions {
  /** At least one; names must differ (they name the spool files and metric labels). */
  sinks: readonly AuditSink[];
  /** The configured spool path (`audit.spool`); each sink spools to spoolPathFor(spoolPath, sink.name). */
  spoolPath: string;
  batchSize: number;
  flushIntervalMs: number;
  /** Records one sink may hold in memory; past it they go to that sink's spool. */
  maxQueue: number;
  logger: Logger;
  clock: Clock;
  /** Backoff of the recovery probe after a sink failure. Defaults: 250 ms doubling to 10 s. */
  retryMinMs?: number;
  retryMaxMs?: number;
  /** close() replays a spool into a sink that answers again for at most this long (default 5 s); the rest waits for the next start. */
  closeReplayMs?: number;
  /** The write-ahead journal (usage audit); none for the admin trail, whose writes wait for their sinks. */
  journal?: AuditJournal | undefined;
}

export class BatchingAuditLog implements AuditLog {
  private readonly channels: AuditSinkChannel[];
  private readonly batchSize: number;
  private readonly flushIntervalMs: number;
  private readonly logger: Logger;
  private readonly journal: AuditJournal | undefined;
  /** Sealed batches still owed by some sink: their journal segments and how many sinks have not settled them. */
  private readonly inJournal = new Map<readonly AuditLine[], { segments: JournalSegment[]; sinksLeft: number }>();
  private readonly onSettled = (batch: readonly AuditLine[]): void => {
    const entry = this.inJournal.get(batch);
    if (!entry) return;
    entry.sinksLeft -= 1;
    if (entry.sinksLeft > 0) return;
    this.inJournal.delete(batch);
    this.journal!.settle(entry.segments);
  };
  private current: AuditLine[] = [];
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  private closing: Promise<void> | undefined;
  private readonly onTimer = (): void => {
    this.timer = undefined;
    this.seal();
  };

  constructor(options: BatchingAuditLogOptions) {
    if (options.sinks.length === 0) throw new Error('BatchingAuditLog needs at least one sink');
    const names = options.sinks.map((s) => s.name);
    const duplicate = names.find((n, i) => names.indexOf(n) !== i);
    if (duplicate) throw new Error(`two audit sinks are named "${duplicate}"`);
    this.batchSize = options.batchSize;
    this.flushIntervalMs = options.flushIntervalMs;
    this.logger = options.logger;
    this.journal = options.journal;
    this.channels = options.sinks.map(
      (sink) =>
        new AuditSinkChannel({
          sink,
          spool: new AuditSpool(spoolPathFor(options.spoolPath, sink.name), options.logger),
          batchSize: options.batchSize,
          maxQueue: options.maxQueue,
          logger: options.logger,
          clock: options.clock,
          retryMinMs: options.retryMinMs ?? 250,
          retryMaxMs: options.retryMaxMs ?? 10_000,
          closeReplayMs: options.closeReplayMs ?? 5_000,
          onSettled: options.journal ? this.onSettled : undefined,
        }),
    );
    if (this.journal) this.resend(this.journal);
  }

  /** Records a killed process journaled and no sink confirmed: queued ahead of any new record. */
  private resend(journal: AuditJournal): void {
    let recovered;
    try {
      recovered = journal.recover();
    } catch (err) {
      this.logger.error({ err, journal: journal.path }, 'cannot read the audit journal of an earlier run; its records are not sent');
      return;
    }
    const { lines, segments } = recovered;
    for (let start = 0; start < lines.length; start += this.batchSize) {
      const end = Math.min(start + this.batchSize, lines.length);
      const batch = lines.slice(start, end);
      const held = segments.filter((s) => s.start < end && s.end > start).map((s) => s.segment);
      for (const segment of held) segment.batches += 1;
      this.inJournal.set(batch, { segments: held, sinksLeft: this.channels.length });
      for (const channel of this.channels) channel.enqueue(batch);
    }
  }

  /** Queues the record, serialised now (the object is not kept). Never blocks, never throws. */
  record(record: AuditRecord): void {
    if (this.closed) {
      this.recordAfterClose(record);
      return;
    }
    try {
      this.queue(toAuditLine(record));
    } catch (err) {
      this.logger.error({ err, id: record.id }, 'queuing an audit record failed');
    }
  }

  /** See AuditLog.whenDurable: after this turn's journal write (or at once without a journal). */
  whenDurable(callback: () => void): void {
    if (this.journal === undefined || this.closed) callback();
    else this.journal.afterWrite(callback);
  }

  /**
   * Queues a line already serialised (the admin audit trail's records, which are not usage
   * records). Never blocks, never throws.
   */
  recordLine(line: AuditLine): void {
    if (this.closed) {
      for (const channel of this.channels) metrics.auditRecords.inc({ sink: channel.name, result: 'failed' });
      this.logger.error({ line }, 'audit line arrived after the audit log was closed; it is only in this log line');
      return;
    }
    this.queue(line);
  }

  /** Journals the line and adds it to the open batch: sealed when full, else flushed by the timer its first line starts. */
  private queue(line: AuditLine): void {
    this.journal?.add(line);
    const length = this.current.push(line);
    if (length >= this.batchSize) this.seal();
    else if (length === 1) {
      this.timer = setTimeout(this.onTimer, this.flushIntervalMs);
      this.timer.unref();
    }
  }

  /** Seals the open batch and resolves when every sink has written or spooled what was queued. */
  async flush(): Promise<void> {
    this.seal();
    await Promise.all(this.channels.map((c) => c.whenIdle()));
  }

  /** Names of the sinks currently taking records into their spool (down, or catching up). */
  spoolingSinks(): string[] {
    return this.channels.filter((c) => c.spooling).map((c) => c.name);
  }

  /** Flushes everything (to each sink, or its spool if it is down), then releases sinks and spools. */
  close(): Promise<void> {
    this.closing ??= this.doClose();
    return this.closing;
  }

  private async doClose(): Promise<void> {
    this.seal();
    this.closed = true;
    await Promise.all(this.channels.map((c) => c.close()));
    // Records a sink could neither take nor spool stay in the journal for the next start.
    this.journal?.close();
  }

  private seal(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    if (this.current.length === 0) return;
    const batch = this.current;
    this.current = [];
    const segments = this.journal?.seal();
    if (segments) this.inJournal.set(batch, { segments, sinksLeft: this.channels.length });
    for (const channel of this.channels) channel.enqueue(batch);
  }

  private recordAfterClose(record: AuditRecord): void {
    for (const channel of this.channels) metrics.auditRecords.inc({ sink: channel.name, result: 'failed' });
    this.logger.error({ record }, 'audit record arrived after the audit log was closed; it is only in this log line');
  }
}
