// The durable outbox every published event goes through (docs/design.md, "Notifications"),
// and the delivery state the admin API reads. Two implementations: a Redis stream per shard
// (redis-webhook-outbox.ts, shared by every instance) and append-only files under var/
// (file-webhook-outbox.ts, embedded mode). Why shards, leases and committed positions:
// docs/decisions/0067-webhook-outbox-and-delivery.md; why each webhook has a position of its
// own in every shard (a lane), so one receiver never holds back another's events:
// docs/decisions/0085-a-position-per-webhook.md.
import type { NotificationEvent } from './notifier.js';

export type DeliveryState = 'pending' | 'delivered' | 'failed';

/** One delivery attempt as the admin API shows it (the last 10 are kept). */
export interface DeliveryAttempt {
  at: string;
  /** The webhook's id (notifications.webhooks[].id) the attempt went to. */
  webhook?: string;
  status?: number;
  error?: string;
  duration_ms: number;
}

export const MAX_ATTEMPTS_KEPT = 10;
/** How long an event's delivery state stays readable (the admin API's events list). */
export const EVENT_STATE_TTL_MS = 7 * 86_400_000;

export interface StoredEvent extends NotificationEvent {
  state: DeliveryState;
  attempts: DeliveryAttempt[];
}

/** An event read from a shard, with the position to commit once it is done. */
export interface OutboxEntry {
  position: string;
  event: NotificationEvent;
}

export interface EventFilter {
  type?: string | undefined;
  subject?: string | undefined;
  state?: DeliveryState | undefined;
}

export interface EventPage {
  data: StoredEvent[];
  nextCursor: string | null;
}

/** What the notifier writes through. */
export interface OutboxWriter {
  /** Appends to the events' shards and records them `pending`; resolves once durable. */
  append(events: readonly NotificationEvent[]): Promise<void>;
  /** True the first time `key` is claimed within `ttlMs` (across all instances in Redis mode). */
  claimOnce(key: string, ttlMs: number): Promise<boolean>;
}

/** What the delivery workers use: shards owned under a lease, read from a committed position. */
export interface OutboxShards {
  readonly shardCount: number;
  /** Takes the shard when no live instance holds it; true when this instance now holds it. */
  acquire(shard: number): Promise<boolean>;
  /** Extends this instance's lease; false when it was lost (another instance may hold it now). */
  renew(shard: number): Promise<boolean>;
  release(shard: number): Promise<void>;
  /**
   * Up to `count` entries after the position `lane` (a webhook's id) has committed in the shard,
   * oldest first; a lane with no position yet starts at the oldest entry still kept.
   */
  read(shard: number, lane: string, count: number): Promise<OutboxEntry[]>;
  /**
   * Moves `lane`'s committed position past `position` (only while the lease is held; false when
   * it was not held), and lets go of the entries every one of `lanes` (the configured webhooks)
   * has passed.
   */
  commit(shard: number, lane: string, position: string, lanes: readonly string[]): Promise<boolean>;
  /** Entries some lane has not passed yet, and the append time of the oldest (ms), for the metrics. */
  backlog(shard: number): Promise<{ depth: number; oldestMs: number | undefined }>;
  /**
   * The doorbell: a value that changes after any instance appended events (once their entries
   * are readable), so idle shards are read when it changed rather than all of them on a timer.
   */
  changeMark(): Promise<string>;
}

/** The delivery state any instance can read. */
export interface EventStates {
  get(id: string): Promise<StoredEvent | undefined>;
  /**
   * Adds an attempt (keeping the last MAX_ATTEMPTS_KEPT), records `lane`'s outcome, and sets the
   * event's state from the outcomes of `targets` (the webhooks that want it): delivered once
   * all delivered, failed once all are done and some failed, pending until then.
   */
  settle(id: string, lane: string, attempt: DeliveryAttempt | undefined, outcome: DeliveryState, targets: readonly string[]): Promise<void>;
  /** Newest first; `cursor` is the last id of the previous page. */
  list(filter: EventFilter, cursor: string | undefined, limit: number): Promise<EventPage>;
}

export interface Outbox extends OutboxWriter, OutboxShards, EventStates {
  /** Queues a known event again (redeliver) for every one of `lanes`: state back to pending, attempts kept. */
  requeue(event: NotificationEvent, lanes: readonly string[]): Promise<void>;
  close(): Promise<void>;
}

export function matches(event: StoredEvent, filter: EventFilter): boolean {
  return (filter.type === undefined || event.type === filter.type) && (filter.subject === undefined || event.subject === filter.subject) && (filter.state === undefined || event.state === filter.state);
}

/** Which shard a subject's events go to: FNV-1a of the subject, so one subject always lands in one shard (its order). */
export function shardOf(subject: string, shardCount: number): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < subject.length; i++) {
    hash ^= subject.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % shardCount;
}

/** An event's state from its webhooks' outcomes (missing: not done yet). */
export function stateOf(outcomes: ReadonlyMap<string, DeliveryState>, targets: readonly string[]): DeliveryState {
  let failed = false;
  for (const target of targets) {
    const outcome = outcomes.get(target);
    if (outcome === undefined || outcome === 'pending') return 'pending';
    if (outcome === 'failed') failed = true;
  }
  return failed ? 'failed' : 'delivered';
}

export function appendAttempt(attempts: readonly DeliveryAttempt[], attempt: DeliveryAttempt | undefined): DeliveryAttempt[] {
  if (attempt === undefined) return [...attempts];
  return [...attempts, attempt].slice(-MAX_ATTEMPTS_KEPT);
}
