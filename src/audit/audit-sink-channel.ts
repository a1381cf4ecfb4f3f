// Delivery to one sink, in order, never losing a batch. One serial loop per sink does one
// step at a time, so no two steps race over the order of records:
//   direct mode:   write the next batch to the sink; on failure the batch (and everything
//                  after it) goes to the spool and the channel switches to spooling mode.
//   spooling mode: new batches are appended to the spool (behind what is already there);
//                  a probe on a backoff timer replays the spool into the sink, and once
//                  the spool is empty the channel is back in direct mode.
// A channel that starts with a non-empty spool (previous run) starts in spooling mode.
// One file over 300 lines on purpose: the two modes, the loop, the retry timer and the outage
// reporting read and write the same few fields; split apart, each piece would reach into the others'.
import type { Clock } from '../clock.js';
import type { Logger } from '../logger.js';
import { metrics } from '../metrics/metrics.js';
import type { AuditLine } from './audit-record.js';
import type { AuditSink } from './audit-sink.js';
import type { AuditSpool } from './audit-spool.js';

export interface AuditSinkChannelOptions {
  sink: AuditSink;
  spool: AuditSpool;
  /** Records per replay batch. */
  batchSize: number;
  /** Records this channel may hold in memory before it spills them to the spool. */
  maxQueue: number;
  logger: Logger;
  clock: Clock;
  /** First delay before probing a failed sink (replaying its spool); doubles up to retryMaxMs. */
  retryMinMs: number;
  retryMaxMs: number;
  /** At close, how long one last replay of the spool may run when the sink answers again. */
  closeReplayMs: number;
  /**
   * Called once per enqueued batch when it is safe from a crash as far as this sink goes:
   * written to the sink or appended to the spool (never for records given up at shutdown,
   * which the journal then keeps for the next start).
   */
  onSettled?: (batch: readonly AuditLine[]) => void;
}

type Mode = 'direct' | 'spooling';

/** A sink that keeps refusing its spool is reported at warn at most this often (and whenever the reason changes). */
const REPLAY_WARN_EVERY_MS = 60_000;

export class AuditSinkChannel {
  readonly name: string;
  private readonly sink: AuditSink;
  private readonly spool: AuditSpool;
  private readonly options: AuditSinkChannelOptions;
  private readonly logger: Logger;
  private backlog: (readonly AuditLine[])[] = [];
  private backlogRecords = 0;
  private mode: Mode = 'direct';
  private started = false;
  private replayDue = false;
  /** The spool refused an append: hold the backlog in memory until the retry timer. */
  private appendBlocked = false;
  private closing = false;
  /** At close, the spool gets one replay attempt (bounded by closeReplayMs) so a recovered sink is not left behind. */
  private closeReplayTried = false;
  private closeReplayDeadlineMs = 0;
  private running: Promise<void> | undefined;
  private idleWaiters: (() => void)[] = [];
  private retryTimer: NodeJS.Timeout | undefined;
  private retryDelayMs = 0;
  /** Set while the sink is failing (or too slow), so the outage is logged once. */
  private outageSinceMs: number | undefined;
  private spoolFailing = false;
  /** The loop hit an unexpected error: rest until the retry timer rather than spin. */
  private stalled = false;
  /** Replay failures since the last warning, and that warning's reason and time (reportReplayFailure). */
  private replayFailures = 0;
  private lastReplayReason: string | undefined;
  private lastReplayWarnMs = 0;

  constructor(options: AuditSinkChannelOptions) {
    this.options = options;
    this.sink = options.sink;
    this.spool = options.spool;
    this.logger = options.logger;
    this.name = options.sink.name;
    // Start at once: a spool left by a previous run is replayed even if no record comes.
    this.kick();
  }

  /** Takes a sealed batch; the channel reads it, never changes it. */
  enqueue(batch: readonly AuditLine[]): void {
    this.backlog.push(batch);
    this.backlogRecords += batch.length;
    this.kick();
  }

  /** True while records for this sink are going to the spool instead of the sink. */
  get spooling(): boolean {
    return this.mode === 'spooling';
  }

  /** Resolves when the loop has nothing left to do right now (everything written, spooled, or waiting on a retry). */
  whenIdle(): Promise<void> {
    if (!this.running && !this.hasWork()) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Writes (or spools) everything queued, stops probing, and releases the sink and the spool. */
  async close(): Promise<void> {
    this.closing = true;
    this.replayDue = false;
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    this.appendBlocked = false; // one last try
    this.stalled = false;
    this.kick();
    await this.whenIdle();
    if (this.backlogRecords > 0) this.giveUp(this.backlog.flat());
    await this.sink.close().catch((err: unknown) => this.logger.error({ err, sink: this.name }, 'closing the audit sink failed'));
    await this.spool.close().catch((err: unknown) => this.logger.error({ err, sink: this.name }, 'closing the audit spool failed'));
  }

  private hasWork(): boolean {
    if (this.stalled) return false;
    if (!this.started) return true;
    if (this.mode === 'direct') return this.backlog.length > 0;
    if (this.backlog.length > 0 && !this.appendBlocked) return true;
    return this.closing ? !this.closeReplayTried : this.replayDue;
  }

  private kick(): void {
    if (this.running) return;
    this.running = this.run()
      .catch((err: unknown) => {
        this.logger.error({ err, sink: this.name }, 'audit delivery loop failed; retrying');
        this.stalled = true;
        this.scheduleRetry();
      })
      .finally(() => {
        this.running = undefined;
        if (this.hasWork()) {
          this.kick();
          return;
        }
        const waiters = this.idleWaiters;
        this.idleWaiters = [];
        for (const resolve of waiters) resolve();
      });
  }

  private async run(): Promise<void> {
    while (this.hasWork()) await this.step();
  }

  private step(): Promise<void> {
    if (!this.started) return this.start();
    if (this.mode === 'direct') {
      if (this.backlogRecords > this.options.maxQueue) return this.spill();
      const batch = this.backlog.shift()!;
      this.backlogRecords -= batch.length;
      return this.writeDirect(batch);
    }
    if (this.backlog.length > 0 && !this.appendBlocked) return this.appendBacklog();
    return this.replay();
  }

  private async start(): Promise<void> {
    this.started = true;
    try {
      if (await this.spool.hasPending()) {
        this.logger.info({ sink: this.name, spool: this.spool.path }, 'audit spool holds records from an earlier run; replaying them before new ones');
        this.mode = 'spooling';
        this.replayDue = true;
      }
    } catch (err) {
      this.logger.error({ err, sink: this.name, spool: this.spool.path }, 'cannot read the audit spool; writing new records directly');
    }
  }

  private async writeDirect(batch: readonly AuditLine[]): Promise<void> {
    try {
      await this.sink.write(batch);
      metrics.auditRecords.inc({ sink: this.name, result: 'written' }, batch.length);
      this.options.onSettled?.(batch);
    } catch (err) {
      metrics.auditRecords.inc({ sink: this.name, result: 'failed' }, batch.length);
      this.beginOutage(err, 'audit sink failed; spooling records until it recovers');
      // Back at the head: the next step spools it ahead of everything queued after it.
      this.backlog.unshift(batch);
      this.backlogRecords += batch.length;
      this.mode = 'spooling';
      // Failing while closing: no point in trying the sink again before exit.
      if (this.closing) this.closeReplayTried = true;
      this.scheduleRetry();
    }
  }

  /** The sink is up but slower than records arrive: park the queue in the spool so memory stays bounded. */
  private async spill(): Promise<void> {
    this.beginOutage(undefined, `audit queue for this sink passed max_queue (${this.options.maxQueue}); spooling records`);
    this.mode = 'spooling';
    this.replayDue = true;
  }

  private async appendBacklog(): Promise<void> {
    const batches = this.backlog;
    const count = this.backlogRecords;
    this.backlog = [];
    this.backlogRecords = 0;
    const records = batches.length === 1 ? batches[0]! : batches.flat();
    try {
      await this.spool.append(records);
      metrics.auditRecords.inc({ sink: this.name, result: 'spooled' }, count);
      const onSettled = this.options.onSettled;
      if (onSettled) for (const batch of batches) onSettled(batch);
      if (this.spoolFailing) {
        this.spoolFailing = false;
        this.logger.info({ sink: this.name, spool: this.spool.path }, 'audit spool writable again');
      }
    } catch (err) {
      if (this.closing) {
        this.giveUp(records, err);
        return;
      }
      this.backlog = batches.concat(this.backlog);
      this.backlogRecords += count;
      if (!this.spoolFailing) {
        this.spoolFailing = true;
        this.logger.error({ err, sink: this.name, spool: this.spool.path }, 'cannot append to the audit spool; holding records in memory and retrying');
      }
      this.appendBlocked = true;
      this.scheduleRetry();
    }
  }

  private async replay(): Promise<void> {
    this.replayDue = false;
    if (this.closing && !this.closeReplayTried) {
      this.closeReplayTried = true;
      this.closeReplayDeadlineMs = this.options.clock.now() + this.options.closeReplayMs;
    }
    let result;
    try {
      result = await this.spool.replay((records) => this.sink.write(records), {
        batchSize: this.options.batchSize,
        // Pause to move newly queued records into the spool: keeps memory bounded and order intact.
        // Closing: no new records come; stop at the deadline and leave the rest for the next start.
        shouldStop: () => (this.closing ? this.options.clock.now() > this.closeReplayDeadlineMs : this.backlogRecords >= this.options.batchSize),
      });
    } catch (err) {
      this.logger.error({ err, sink: this.name, spool: this.spool.path }, 'reading the audit spool failed');
      this.scheduleRetry();
      return;
    }
    if (result.replayed > 0) {
      metrics.auditRecords.inc({ sink: this.name, result: 'replayed' }, result.replayed);
      this.retryDelayMs = 0;
    }
    if (result.error !== undefined) {
      this.reportReplayFailure(result.error);
      this.scheduleRetry();
      return;
    }
    if (result.done) {
      // Safe to switch: this loop is the only writer of the spool, so it is empty right now,
      // and anything still in the backlog is newer than everything replayed.
      this.mode = 'direct';
      this.endOutage();
      return;
    }
    this.replayDue = true;
  }

  /**
   * A replay the sink refused, at warn: the first of an outage, then at most once a minute or
   * when the reason changes (a retry every few seconds would flood the log), with how many
   * attempts failed since. Message and code only: a driver's error may carry the values it refused.
   */
  private reportReplayFailure(err: unknown): void {
    this.replayFailures += 1;
    const { message, code } = (err ?? {}) as { message?: unknown; code?: unknown };
    const reason = typeof message === 'string' ? message.slice(0, 300) : String(err);
    const now = this.options.clock.now();
    if (reason === this.lastReplayReason && now - this.lastReplayWarnMs < REPLAY_WARN_EVERY_MS) return;
    this.logger.warn(
      { err: { message: reason, ...(typeof code === 'string' ? { code } : {}) }, sink: this.name, spool: this.spool.path, failedAttempts: this.replayFailures },
      'audit sink still refuses the spooled records; they stay in the spool and are retried',
    );
    this.lastReplayReason = reason;
    this.lastReplayWarnMs = now;
    this.replayFailures = 0;
  }

  private scheduleRetry(): void {
    if (this.closing || this.retryTimer) return;
    this.retryDelayMs = this.retryDelayMs === 0 ? this.options.retryMinMs : Math.min(this.retryDelayMs * 2, this.options.retryMaxMs);
    // Jitter so that many gateway instances do not probe a recovering Redis in lockstep.
    const delayMs = Math.round(this.retryDelayMs * (0.8 + Math.random() * 0.4));
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.appendBlocked = false;
      this.stalled = false;
      if (this.mode === 'spooling') this.replayDue = true;
      this.kick();
    }, delayMs);
    this.retryTimer.unref();
  }

  private beginOutage(err: unknown, message: string): void {
    if (this.outageSinceMs !== undefined) return;
    this.outageSinceMs = this.options.clock.now();
    this.logger.warn({ err, sink: this.name, spool: this.spool.path }, message);
  }

  private endOutage(): void {
    const since = this.outageSinceMs;
    this.outageSinceMs = undefined;
    this.retryDelayMs = 0;
    const outageMs = since === undefined ? undefined : this.options.clock.now() - since;
    this.lastReplayReason = undefined;
    this.replayFailures = 0;
    this.logger.info({ sink: this.name, outageMs }, 'audit sink caught up; spool replayed, writing directly again');
  }

  /** Last resort at shutdown when both the sink and the spool refuse: put the records in the log. */
  private giveUp(lines: readonly AuditLine[], err?: unknown): void {
    this.backlog = [];
    this.backlogRecords = 0;
    metrics.auditRecords.inc({ sink: this.name, result: 'failed' }, lines.length);
    // As objects, not escaped strings: whoever recovers them from the log reads records.
    const records: unknown[] = lines.map((line) => JSON.parse(line));
    this.logger.error({ err, sink: this.name, records }, 'audit records could neither be written nor spooled at shutdown; they are in this log line');
  }
}
