// The delivery workers (docs/decisions/0067-webhook-outbox-and-delivery.md). Every
// LEASE_INTERVAL_MS this instance renews the leases of the outbox shards it owns and takes the
// free ones. Each owned shard has one loop per webhook, a lane, reading from that webhook's own
// committed position (docs/decisions/0085-a-position-per-webhook.md): a lane delivers its
// webhook's events strictly in order, so a subject's events (always one shard) reach each
// receiver in publication order, and a receiver that fails or hangs holds back only its own
// lane. An event is retried to its webhook with exponential backoff and full jitter until it
// answers 2xx, or `give_up_after` has passed since it was published (`failed` for that
// webhook); only then does the lane commit and send the next. A lost lease stops the lanes at
// their next step. At most `concurrency` sends are in flight at once per webhook.
// A lane whose last read came back empty sleeps until woken: by this instance's own appends
// (wake()), by the outbox's doorbell, which one timer reads for the whole instance, or by the
// slow safety-net read (docs/decisions/0075-idle-webhook-delivery.md).
// One file over 300 lines: the lease rounds, the lanes, their sends and the idle wake-ups all
// read and change the same state (the owned shards, the idle lanes, the send slots, the
// sleepers); split, each part would reach into the others'.
import type { Clock } from '../clock.js';
import type { NotificationsConfig, WebhookConfig } from '../config/notifications-schema.js';
import type { Logger } from '../logger.js';
import { metrics, setWebhookBacklogSource } from '../metrics/metrics.js';
import type { NotificationEvent } from './notifier.js';
import type { DeliveryAttempt, Outbox } from './outbox.js';
import { encodeWebhookBody, signatureHeaders } from './webhook-signature.js';
import type { SendResult } from './webhook-sender.js';

/** Lease renewal, takeover of free shards and the backlog gauges (leases last 15 s: three renewals). */
export const LEASE_INTERVAL_MS = 5_000;
/** The doorbell (events other instances appended) is read this often; this instance's own appends wake the shards at once. */
export const IDLE_POLL_MS = 2_000;
/**
 * Every owned shard is read this often even when the doorbell stayed silent: a producer that
 * died between its XADD and its ring, or a doorbell lost in a failover, delays an event by at
 * most this, not forever. Slow, because it is one read per shard.
 */
export const SAFETY_NET_MS = 30_000;
/** Entries read from a shard at once. */
const READ_BATCH = 32;

export interface DeliveryOptions {
  outbox: Outbox;
  config: NotificationsConfig;
  /** One POST to `webhook` (its id: each webhook has connections of its own). */
  send(webhook: string, url: string, headers: Record<string, string>, body: string): Promise<SendResult>;
  clock: Clock;
  logger: Logger;
  random?: () => number;
  /** IDLE_POLL_MS unless given (tests). */
  pollIntervalMs?: number;
  /** SAFETY_NET_MS unless given (tests). */
  safetyNetMs?: number;
}

/** A webhook's sends in flight from this instance, and the lanes waiting for one to end. */
interface SendSlots {
  inFlight: number;
  waiting: Array<() => void>;
}

export class WebhookDelivery {
  private readonly owned = new Set<number>();
  /** The lanes' loops, by laneKey(shard, webhook id). */
  private readonly loops = new Map<string, Promise<void>>();
  private timer: NodeJS.Timeout | undefined;
  private doorbellTimer: NodeJS.Timeout | undefined;
  private safetyNetTimer: NodeJS.Timeout | undefined;
  private closed = false;
  private ticking: Promise<void> | undefined;
  private backlog = { depth: 0, oldestMs: undefined as number | undefined };
  private readonly slots = new Map<string, SendSlots>();
  /** Each webhook's HMAC keys in its format, worked out once. */
  private readonly keys = new Map<string, Buffer[]>();
  /** The configured webhooks' ids: the lanes every commit lets entries go for. */
  private readonly laneIds: readonly string[];
  /** Wakes the sleeping loops (close). */
  private readonly sleepers = new Set<() => void>();
  /** The loops waiting for new events (not for a retry's backoff). */
  private readonly idleSleepers = new Set<() => void>();
  /** Counts wake()s, so a loop woken while its read was on its way reads again rather than sleeping. */
  private wakes = 0;
  /** Lanes (laneKey) whose last read came back empty. */
  private readonly idle = new Set<string>();
  /** The doorbell's value at its last read; undefined before the first, which wakes every idle shard. */
  private lastMark: string | undefined;
  private ringing = false;

  constructor(private readonly options: DeliveryOptions) {
    for (const webhook of options.config.webhooks) {
      this.slots.set(webhook.id, { inFlight: 0, waiting: [] });
      this.keys.set(webhook.id, webhook.secrets.map((secret) => secret.signingKey(webhook.format)));
    }
    this.laneIds = options.config.webhooks.map((webhook) => webhook.id);
  }

  start(): void {
    setWebhookBacklogSource(() => this.backlog);
    const interval = LEASE_INTERVAL_MS;
    this.ticking = this.tick();
    this.timer = setInterval(() => {
      if (this.ticking === undefined) this.ticking = this.tick();
    }, interval);
    this.timer.unref();
    this.doorbellTimer = setInterval(() => void this.checkDoorbell(), this.options.pollIntervalMs ?? IDLE_POLL_MS);
    this.doorbellTimer.unref();
    this.safetyNetTimer = setInterval(() => this.wake(), this.options.safetyNetMs ?? SAFETY_NET_MS);
    this.safetyNetTimer.unref();
  }

  /** Stops taking work: sleeping loops and queued sends wake and return; sends in flight finish (or are cut by the sender's close). */
  stop(): void {
    this.closed = true;
    clearInterval(this.timer);
    clearInterval(this.doorbellTimer);
    clearInterval(this.safetyNetTimer);
    for (const wake of this.sleepers) wake();
    for (const slots of this.slots.values()) for (const wake of slots.waiting.splice(0)) wake();
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
      // All at once: the renewals (and below the takeovers) go out together, one round trip
      // rather than one per shard; each is still fenced by its own lease value.
      const held = [...this.owned];
      const renewed = await Promise.all(held.map((shard) => outbox.renew(shard).catch(() => false)));
      held.forEach((shard, i) => {
        if (renewed[i]) return;
        this.owned.delete(shard);
        this.options.logger.warn({ shard }, 'webhook outbox shard lease lost; another instance delivers it now');
      });
      // A lost shard's loop may sleep until woken: it ends now, so a later takeover starts a fresh one.
      if (renewed.includes(false)) this.wake();
      if (!this.closed) {
        const free = Array.from({ length: outbox.shardCount }, (_, shard) => shard).filter((shard) => !this.owned.has(shard));
        const taken = await Promise.all(free.map((shard) => outbox.acquire(shard).catch(() => false)));
        free.forEach((shard, i) => {
          if (taken[i]) this.owned.add(shard);
        });
      }
      for (const shard of this.owned) {
        for (const webhook of this.options.config.webhooks) {
          const lane = laneKey(shard, webhook.id);
          if (!this.loops.has(lane) && !this.closed) this.loops.set(lane, this.runLane(shard, webhook).finally(() => this.endLoop(lane)));
        }
      }
      // A shard whose lanes' last reads were all empty: depth 0 and no oldest entry, not worth a read.
      const busy = [...this.owned].filter((shard) => this.laneIds.some((id) => !this.idle.has(laneKey(shard, id))));
      const backlogs = await Promise.all(busy.map((shard) => outbox.backlog(shard).catch(() => undefined)));
      let depth = 0;
      let oldestMs: number | undefined;
      for (const backlog of backlogs) {
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

  private endLoop(lane: string): void {
    this.loops.delete(lane);
    this.idle.delete(lane);
  }

  /** One read of the doorbell for all shards; a change wakes the idle ones, which then read their streams. */
  private async checkDoorbell(): Promise<void> {
    // Nobody to wake: the mark stays as it was, so the first check after a loop goes idle still sees a change made meanwhile.
    if (this.ringing || this.closed || this.idle.size === 0) return;
    this.ringing = true;
    try {
      const mark = await this.options.outbox.changeMark();
      if (mark !== this.lastMark) {
        this.lastMark = mark;
        this.wake();
      }
    } catch {
      // Redis away: the next check tries again, and the safety net reads every shard meanwhile.
    } finally {
      this.ringing = false;
    }
  }

  private async runLane(shard: number, webhook: WebhookConfig): Promise<void> {
    const { outbox } = this.options;
    const lane = laneKey(shard, webhook.id);
    while (!this.closed && this.owned.has(shard)) {
      const wakes = this.wakes;
      let entries;
      try {
        entries = await outbox.read(shard, webhook.id, READ_BATCH);
      } catch {
        this.idle.delete(lane);
        await this.sleep(this.options.pollIntervalMs ?? IDLE_POLL_MS, true);
        continue;
      }
      if (entries.length === 0) {
        this.idle.add(lane);
        // A wake that came while the read was on its way may be for entries the read missed.
        if (this.wakes === wakes) await this.sleep(undefined, true);
        continue;
      }
      this.idle.delete(lane);
      // Entries this webhook does not want are passed over; the last of them is committed once,
      // not one commit each.
      let passedOver: string | undefined;
      for (const entry of entries) {
        if (this.closed || !this.owned.has(shard)) return;
        const { event } = entry;
        if (event.id === '' || !wants(webhook, event.type)) {
          passedOver = entry.position;
          continue;
        }
        if (!(await this.deliver(shard, webhook, event))) return;
        passedOver = undefined;
        if (!(await this.commit(shard, webhook.id, entry.position))) return;
      }
      if (passedOver !== undefined && !(await this.commit(shard, webhook.id, passedOver))) return;
    }
  }

  /** False when the lease was not held (or the store failed): the shard's lanes stop, and a later tick takes it again. */
  private async commit(shard: number, lane: string, position: string): Promise<boolean> {
    if (await this.options.outbox.commit(shard, lane, position, this.laneIds).catch(() => false)) return true;
    this.owned.delete(shard);
    return false;
  }

  /** True once the event is delivered to `webhook` or failed; false when delivery stopped (close, lost lease) with it unfinished. */
  private async deliver(shard: number, webhook: WebhookConfig, event: NotificationEvent): Promise<boolean> {
    const { outbox, config, clock } = this.options;
    const targets = config.webhooks.filter((w) => wants(w, event.type)).map((w) => w.id);
    const body = encodeWebhookBody(event);
    const publishedMs = Date.parse(event.created_at);
    for (let attempt = 0; ; attempt++) {
      if (this.closed || !this.owned.has(shard)) return false;
      const result = await this.attempt(webhook, event.id, body);
      // Cut short by shutdown: not an attempt of the receiver's; the next owner sends it.
      if (this.closed) return false;
      const ok = result.status !== undefined && result.status >= 200 && result.status < 300;
      const record: DeliveryAttempt = { at: new Date(clock.now()).toISOString(), webhook: webhook.id, ...(result.status !== undefined ? { status: result.status } : { error: result.error ?? 'error' }), duration_ms: result.durationMs };
      await outbox.settle(event.id, webhook.id, record, ok ? 'delivered' : 'pending', targets).catch(() => {});
      if (ok) {
        metrics.webhookDeliveries.inc({ result: 'delivered' });
        return true;
      }
      const delayMs = this.backoffMs(attempt);
      if (clock.now() + delayMs - publishedMs >= config.retry.giveUpAfterMs || !Number.isFinite(publishedMs)) {
        metrics.webhookDeliveries.inc({ result: 'failed' });
        await outbox.settle(event.id, webhook.id, undefined, 'failed', targets).catch(() => {});
        this.options.logger.warn({ event_id: event.id, type: event.type, webhook: webhook.id, attempts: attempt + 1 }, 'webhook delivery failed: gave up after retry.give_up_after');
        return true;
      }
      metrics.webhookDeliveries.inc({ result: 'retried' });
      await this.sleep(delayMs);
    }
  }

  /** At most `concurrency` sends to one webhook at once across this instance's shards; that webhook's other lanes wait their turn. */
  private async attempt(webhook: WebhookConfig, id: string, body: string): Promise<SendResult> {
    const slots = this.slots.get(webhook.id)!;
    while (slots.inFlight >= this.options.config.concurrency && !this.closed) await new Promise<void>((resolve) => slots.waiting.push(resolve));
    if (this.closed) return { error: 'closed', durationMs: 0 };
    slots.inFlight++;
    try {
      return await this.send(webhook, id, body);
    } finally {
      slots.inFlight--;
      slots.waiting.shift()?.();
    }
  }

  private send(webhook: WebhookConfig, id: string, body: string): Promise<SendResult> {
    const timestampSeconds = Math.floor(this.options.clock.now() / 1000);
    const headers = {
      'content-type': 'application/json',
      ...signatureHeaders(webhook.format, { id, body, keys: this.keys.get(webhook.id)!, timestampSeconds }),
      'user-agent': 'agent-gateway-webhooks',
    };
    return this.options.send(webhook.id, webhook.url, headers, body);
  }

  /** Full jitter: uniform in [0, min(max, initial * 2^attempt)]. */
  private backoffMs(attempt: number): number {
    const { initialMs, maxMs } = this.options.config.retry;
    const ceiling = Math.min(maxMs, initialMs * 2 ** Math.min(attempt, 40));
    return Math.round((this.options.random ?? Math.random)() * ceiling);
  }

  /** Wakes the idle shard loops: this instance just wrote events to the outbox, or the doorbell rang. */
  wake(): void {
    this.wakes++;
    for (const wake of [...this.idleSleepers]) wake();
  }

  /** `ms` undefined: until woken (wake(), or stop()). */
  private sleep(ms: number | undefined, idle = false): Promise<void> {
    if (this.closed) return Promise.resolve();
    return new Promise((resolve) => {
      const wake = (): void => {
        clearTimeout(timer);
        this.sleepers.delete(wake);
        this.idleSleepers.delete(wake);
        resolve();
      };
      const timer = ms === undefined ? undefined : setTimeout(wake, ms);
      timer?.unref();
      this.sleepers.add(wake);
      if (idle) this.idleSleepers.add(wake);
    });
  }
}

function laneKey(shard: number, webhook: string): string {
  return `${shard}:${webhook}`;
}

function wants(webhook: WebhookConfig, type: NotificationEvent['type']): boolean {
  return webhook.events === '*' || webhook.events.has(type);
}
