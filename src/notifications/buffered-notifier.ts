// The notifier the gateway runs when a webhook is configured. publish() only stamps the event
// and pushes it onto a bounded in-memory queue; a timer writes the queue to the outbox in
// batches. Past `max_queue` waiting events new ones are dropped, counted and logged (at most
// once a minute): a dead outbox costs bounded memory, never the caller's time.
import type { Clock } from '../clock.js';
import type { EventType } from '../config/notifications-schema.js';
import type { Logger } from '../logger.js';
import { metrics } from '../metrics/metrics.js';
import { newEventId } from './event-id.js';
import type { NotificationEvent, Notifier, PublishOptions } from './notifier.js';
import type { OutboxWriter } from './outbox.js';

const BATCH_SIZE = 256;
/** Gathers what a burst publishes into one batch. */
const FLUSH_DELAY_MS = 10;
/** After the outbox refused a batch. */
const RETRY_DELAY_MS = 1_000;
const DROP_LOG_INTERVAL_MS = 60_000;

interface Queued {
  event: NotificationEvent;
  dedupeKey: string | undefined;
  dedupeTtlMs: number;
  /** Its dedupe key was already claimed: never written. */
  duplicate?: boolean;
}

export interface BufferedNotifierOptions {
  outbox: OutboxWriter;
  clock: Clock;
  logger: Logger;
  maxQueue: number;
  /** Whether any webhook wants this type: events nobody receives are never written. */
  wants(type: EventType): boolean;
}

export class BufferedNotifier implements Notifier {
  private queue: Queued[] = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  private closed = false;
  private dropped = 0;
  private lastDropLogMs = -Infinity;

  constructor(private readonly options: BufferedNotifierOptions) {}

  publish(type: EventType, subject: string, data: Record<string, unknown>, options?: PublishOptions): void {
    try {
      if (this.closed || !this.options.wants(type)) return;
      if (this.queue.length >= this.options.maxQueue) return this.drop();
      const nowMs = this.options.clock.now();
      this.queue.push({
        event: { id: newEventId(nowMs), type, created_at: new Date(nowMs).toISOString(), subject, data },
        dedupeKey: options?.dedupeKey,
        dedupeTtlMs: options?.dedupeTtlMs ?? 0,
      });
      this.schedule(FLUSH_DELAY_MS);
    } catch {
      // Never the caller's problem.
    }
  }

  /** Events waiting to be written (for tests and the shutdown log). */
  get queued(): number {
    return this.queue.length;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.flushing;
    // One last attempt for what is still waiting; whatever fails now is lost and logged.
    if (this.queue.length > 0) await this.flush(true);
  }

  private drop(): void {
    this.dropped++;
    metrics.webhookDropped.inc({ reason: 'queue_full' });
    const nowMs = this.options.clock.now();
    if (nowMs - this.lastDropLogMs >= DROP_LOG_INTERVAL_MS) {
      this.lastDropLogMs = nowMs;
      this.options.logger.warn({ dropped: this.dropped, max_queue: this.options.maxQueue }, 'webhook events dropped: the outbox is not keeping up (notifications.max_queue)');
    }
  }

  private schedule(delayMs: number): void {
    if (this.timer !== undefined || this.flushing !== undefined || this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.flushing = this.flush(false).finally(() => {
        this.flushing = undefined;
        if (this.queue.length > 0) this.schedule(this.lastFailed ? RETRY_DELAY_MS : 0);
      });
    }, delayMs);
    this.timer.unref();
  }

  private lastFailed = false;

  private async flush(final: boolean): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue.slice(0, BATCH_SIZE);
      try {
        const kept = await this.deduplicate(batch);
        await this.options.outbox.append(kept.map((q) => q.event));
        this.queue.splice(0, batch.length);
        this.lastFailed = false;
      } catch (error) {
        this.lastFailed = true;
        this.options.logger.error({ err: { message: error instanceof Error ? error.message : String(error) }, waiting: this.queue.length, final }, final ? 'webhook events lost at shutdown: the outbox refused them' : 'webhook outbox write failed; retrying');
        if (final) this.queue = [];
        return;
      }
    }
  }

  /** Drops the events whose dedupe key another instance (or an earlier event) already claimed. */
  private async deduplicate(batch: Queued[]): Promise<Queued[]> {
    const claims = await Promise.all(batch.map((q) => (q.dedupeKey === undefined ? true : this.options.outbox.claimOnce(q.dedupeKey, Math.max(1, q.dedupeTtlMs)))));
    // Settled once: a batch retried after a failed append must not be refused by its own claim.
    batch.forEach((q, i) => {
      q.dedupeKey = undefined;
      if (!claims[i]) q.duplicate = true;
    });
    return batch.filter((q) => q.duplicate !== true);
  }
}
