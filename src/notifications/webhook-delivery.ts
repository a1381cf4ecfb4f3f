// The delivery workers (docs/decisions/0067-webhook-outbox-and-delivery.md). Every
// LEASE_INTERVAL_MS this instance renews the leases of the outbox shards it owns and takes the
// free ones; each owned shard has one loop that delivers its events
// strictly in order, so a subject's events (always one shard) arrive in publication order. An
// event is retried with exponential backoff and full jitter until every webhook that wants it
// answered 2xx, or `give_up_after` has passed since it was published (state `failed`); only
// then is it committed and the next one sent. A lost lease stops the loop at its next step.
// At most `concurrency` sends are in flight at once across the shards.
import type { Clock } from '../clock.js';
import type { NotificationsConfig, WebhookConfig } from '../config/notifications-schema.js';
import type { Logger } from '../logger.js';
import { metrics, setWebhookBacklogSource } from '../metrics/metrics.js';
import type { NotificationEvent } from './notifier.js';
import type { DeliveryAttempt, Outbox } from './outbox.js';
import { encodeWebhookBody, signWebhook } from './webhook-signature.js';
import type { SendResult } from './webhook-sender.js';

/** Lease renewal, takeover of free shards and the backlog gauges (leases last 15 s: three renewals). */
export const LEASE_INTERVAL_MS = 5_000;
/** An idle shard looks for events published by other instances this often; this instance's own wake it at once. */
export const IDLE_POLL_MS = 2_000;
/** Entries read from a shard at once. */
const READ_BATCH = 32;

export interface DeliveryOptions {
  outbox: Outbox;
  config: NotificationsConfig;
  send(url: string, headers: Record<string, string>, body: string): Promise<SendResult>;
  clock: Clock;
  logger: Logger;
  random?: () => number;
  pollIntervalMs?: number;
}

export class WebhookDelivery {
  private readonly owned = new Set<number>();
  private readonly loops = new Map<number, Promise<void>>();
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  private ticking: Promise<void> | undefined;
  private backlog = { depth: 0, oldestMs: undefined as number | undefined };
  private inFlight = 0;
  private readonly waiting: Array<() => void> = [];
  /** Wakes the sleeping loops (close). */
  private readonly sleepers = new Set<() => void>();
  /** The loops waiting for new events (not for a retry's backoff). */
  private readonly idleSleepers = new Set<() => void>();

  constructor(private readonly options: DeliveryOptions) {}

  start(): void {
    setWebhookBacklogSource(() => this.backlog);
    const interval = LEASE_INTERVAL_MS;
    this.ticking = this.tick();
    this.timer = setInterval(() => {
      if (this.ticking === undefined) this.ticking = this.tick();
    }, interval);
    this.timer.unref();
  }

  /** Stops taking work: sleeping loops and queued sends wake and return; sends in flight finish (or are cut by the sender's close). */
  stop(): void {
    this.closed = true;
    clearInterval(this.timer);
    for (const wake of this.sleepers) wake();
    for (const wake of this.waiting.splice(0)) wake();
  }

  async close(): Promise<void> {
    this.stop();
    await this.ticking;
    await Promise.allSettled(this.loops.values());
    await Promise.allSettled([...this.owned].map((shard) => this.options.outbox.release(shard)));
    this.owned.clear();
    setWebhookBacklogSource(undefined);
  }

  private async tick(): Promise<void> {
    try {
      const { outbox } = this.options;
      for (const shard of [...this.owned]) {
        if (!(await outbox.renew(shard).catch(() => false))) {
          this.owned.delete(shard);
          this.options.logger.warn({ shard }, 'webhook outbox shard lease lost; another instance delivers it now');
        }
      }
      for (let shard = 0; shard < outbox.shardCount && !this.closed; shard++) {
        if (!this.owned.has(shard) && (await outbox.acquire(shard).catch(() => false))) this.owned.add(shard);
      }
      let depth = 0;
      let oldestMs: number | undefined;
      for (const shard of this.owned) {
        if (!this.loops.has(shard) && !this.closed) this.loops.set(shard, this.runShard(shard).finally(() => this.loops.delete(shard)));
        const backlog = await outbox.backlog(shard).catch(() => undefined);
        if (!backlog) continue;
        depth += backlog.depth;
        if (backlog.oldestMs !== undefined && (oldestMs === undefined || backlog.oldestMs < oldestMs)) oldestMs = backlog.oldestMs;
      }
      this.backlog = { depth, oldestMs };
    } catch (error) {
      this.options.logger.warn({ err: { message: error instanceof Error ? error.message : String(error) } }, 'webhook delivery tick failed');
    } finally {
      this.ticking = undefined;
    }
  }

  private async runShard(shard: number): Promise<void> {
    const { outbox } = this.options;
    while (!this.closed && this.owned.has(shard)) {
      let entries;
      try {
        entries = await outbox.read(shard, READ_BATCH);
      } catch {
        await this.sleep(this.options.pollIntervalMs ?? IDLE_POLL_MS, true);
        continue;
      }
      if (entries.length === 0) {
        await this.sleep(this.options.pollIntervalMs ?? IDLE_POLL_MS, true);
        continue;
      }
      for (const entry of entries) {
        if (this.closed || !this.owned.has(shard)) return;
        const done = entry.event.id === '' ? true : await this.deliver(shard, entry.event);
        if (!done) return;
        if (!(await outbox.commit(shard, entry.position).catch(() => false))) {
          this.owned.delete(shard);
          return;
        }
      }
    }
  }

  /** True once the event is delivered or failed; false when delivery stopped (close, lost lease) with it unfinished. */
  private async deliver(shard: number, event: NotificationEvent): Promise<boolean> {
    const { outbox, config, clock } = this.options;
    const targets = config.webhooks.filter((w) => w.events === '*' || w.events.has(event.type));
    const remaining = new Set<WebhookConfig>(targets);
    const body = encodeWebhookBody(event);
    const publishedMs = Date.parse(event.created_at);
    for (let attempt = 0; ; attempt++) {
      for (const webhook of [...remaining]) {
        if (this.closed || !this.owned.has(shard)) return false;
        const result = await this.attempt(webhook, event.id, body);
        // Cut short by shutdown: not an attempt of the receiver's; the next owner sends it.
        if (this.closed) return false;
        const ok = result.status !== undefined && result.status >= 200 && result.status < 300;
        if (ok) remaining.delete(webhook);
        const record: DeliveryAttempt = { at: new Date(clock.now()).toISOString(), ...(result.status !== undefined ? { status: result.status } : { error: result.error ?? 'error' }), duration_ms: result.durationMs };
        await outbox.recordAttempt(event.id, record, remaining.size === 0 ? 'delivered' : 'pending').catch(() => {});
      }
      if (remaining.size === 0) {
        metrics.webhookDeliveries.inc({ result: 'delivered' });
        return true;
      }
      const delayMs = this.backoffMs(attempt);
      if (clock.now() + delayMs - publishedMs >= config.retry.giveUpAfterMs || !Number.isFinite(publishedMs)) {
        metrics.webhookDeliveries.inc({ result: 'failed' });
        await outbox.recordAttempt(event.id, undefined, 'failed').catch(() => {});
        this.options.logger.warn({ event_id: event.id, type: event.type, attempts: attempt + 1 }, 'webhook delivery failed: gave up after retry.give_up_after');
        return true;
      }
      metrics.webhookDeliveries.inc({ result: 'retried' });
      await this.sleep(delayMs);
    }
  }

  /** At most `concurrency` sends at once across this instance's shards; the rest wait their turn. */
  private async attempt(webhook: WebhookConfig, id: string, body: string): Promise<SendResult> {
    while (this.inFlight >= this.options.config.concurrency && !this.closed) await new Promise<void>((resolve) => this.waiting.push(resolve));
    if (this.closed) return { error: 'closed', durationMs: 0 };
    this.inFlight++;
    try {
      return await this.send(webhook, id, body);
    } finally {
      this.inFlight--;
      this.waiting.shift()?.();
    }
  }

  private send(webhook: WebhookConfig, id: string, body: string): Promise<SendResult> {
    const timestamp = Math.floor(this.options.clock.now() / 1000);
    const headers = {
      'content-type': 'application/json',
      'webhook-id': id,
      'webhook-signature': signWebhook(body, webhook.secrets.map((s) => s.reveal()), timestamp),
      'user-agent': 'agent-gateway-webhooks',
    };
    return this.options.send(webhook.url, headers, body);
  }

  /** Full jitter: uniform in [0, min(max, initial * 2^attempt)]. */
  private backoffMs(attempt: number): number {
    const { initialMs, maxMs } = this.options.config.retry;
    const ceiling = Math.min(maxMs, initialMs * 2 ** Math.min(attempt, 40));
    return Math.round((this.options.random ?? Math.random)() * ceiling);
  }

  /** Wakes the idle shard loops: this instance just wrote events to the outbox. */
  wake(): void {
    for (const wake of [...this.idleSleepers]) wake();
  }

  private sleep(ms: number, idle = false): Promise<void> {
    if (this.closed) return Promise.resolve();
    return new Promise((resolve) => {
      const wake = (): void => {
        clearTimeout(timer);
        this.sleepers.delete(wake);
        this.idleSleepers.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      timer.unref();
      this.sleepers.add(wake);
      if (idle) this.idleSleepers.add(wake);
    });
  }
}
