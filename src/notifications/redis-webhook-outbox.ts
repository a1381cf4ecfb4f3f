// The outbox in Redis mode (docs/decisions/0067-webhook-outbox-and-delivery.md). Events go to
// one of SHARD_COUNT streams by subject; each shard's stream, lease and positions share a hash
// tag, so the fenced scripts (outbox-protocol.ts) touch one Cluster slot. Each webhook (a lane)
// has its own committed position in every shard, a stream id in the shard's positions hash;
// an entry is trimmed once every configured webhook has passed it, only while the trimming
// instance holds the shard's lease (docs/decisions/0085-a-position-per-webhook.md). Each
// event's delivery state is a hash of its own with a TTL, and a sorted set of ids (lexical
// order = time order) pages the events list. A counter, the doorbell, is incremented after
// each batch's entries are written, so idle deliverers read one key rather than every stream
// (docs/decisions/0075-idle-webhook-delivery.md).
import { randomBytes } from 'node:crypto';
import type { RedisClient } from '../redis/redis-client.js';
import { eventIdTimePrefix } from './event-id.js';
import type { NotificationEvent } from './notifier.js';
import { EVENT_STATE_TTL_MS, MAX_ATTEMPTS_KEPT, matches, shardOf, type DeliveryAttempt, type DeliveryState, type EventFilter, type EventPage, type Outbox, type OutboxEntry, type StoredEvent } from './outbox.js';
import { callOperation, defineOperation } from '../redis/redis-operation.js';
import { OUTBOX_COMMIT, OUTBOX_OPERATIONS, OUTBOX_RELEASE, OUTBOX_RENEW, OUTBOX_SETTLE } from './outbox-protocol.js';

export const SHARD_COUNT = 16;
/** A stream longer than this drops its oldest entries (a receiver down for days at a high event rate). */
const MAX_STREAM_LEN = 1_000_000;
const LIST_SCAN_BATCH = 100;
const LIST_SCAN_MAX = 2_000;


export interface RedisWebhookOutboxOptions {
  client: RedisClient;
  /** redis.prefix, e.g. "agentgw:". */
  prefix: string;
  /** How long a shard lease lasts without renewal. */
  leaseMs: number;
}

export class RedisWebhookOutbox implements Outbox {
  readonly shardCount = SHARD_COUNT;
  private readonly redis: RedisClient;
  /** This instance's lease value: a takeover by anyone else makes every fenced call fail. */
  private readonly owner = `${process.pid}-${randomBytes(8).toString('hex')}`;
  /**
   * Lane positions of the shards this instance holds (a lane absent: none yet), as it committed them:
   * only the lease holder moves them, so a read needs no round trip for the position. Loaded
   * after each acquire (another owner may have moved them meanwhile).
   */
  private readonly positions = new Map<number, Map<string, string>>();

  constructor(private readonly options: RedisWebhookOutboxOptions) {
    const client = options.client;
    for (const operation of OUTBOX_OPERATIONS) defineOperation(client, operation);
    this.redis = client;
  }

  private shardKey(shard: number, part: 'outbox' | 'lease' | 'positions'): string {
    return `{${this.options.prefix}webhooks:${shard}}:${part}`;
  }

  private eventKey(id: string): string {
    return `${this.options.prefix}webhooks:event:${id}`;
  }

  private get indexKey(): string {
    return `${this.options.prefix}webhooks:events`;
  }

  async append(events: readonly NotificationEvent[]): Promise<void> {
    if (events.length === 0) return;
    // One write per event key; the connection's auto-pipelining sends them together.
    await Promise.all(events.flatMap((event) => [...this.writeState(event, 'pending', undefined), this.enqueue(event)]));
    await this.ringDoorbell();
  }

  /**
   * Rung only once the entries' XADDs have resolved: whoever reads the new value then finds
   * them, also on a Cluster where the streams live on other nodes than the doorbell. A failed
   * ring is not the batch's failure: the entries are durable, and the deliverers' safety-net
   * read finds them; failing here would have the notifier write the whole batch again.
   */
  private async ringDoorbell(): Promise<void> {
    await this.redis.incr(webhookDoorbellKey(this.options.prefix)).catch(() => {});
  }

  async changeMark(): Promise<string> {
    return doorbellMark(await this.redis.get(webhookDoorbellKey(this.options.prefix)));
  }

  private writeState(event: NotificationEvent, state: DeliveryState, attempts: DeliveryAttempt[] | undefined): Promise<unknown>[] {
    const key = this.eventKey(event.id);
    const fields: Record<string, string> = { event: JSON.stringify(event), state };
    if (attempts !== undefined) fields.attempts = JSON.stringify(attempts);
    return [
      this.redis.hset(key, fields),
      this.redis.pexpire(key, EVENT_STATE_TTL_MS),
      this.redis.zadd(this.indexKey, 0, event.id),
    ];
  }

  private enqueue(event: NotificationEvent): Promise<unknown> {
    return this.redis.xadd(this.shardKey(shardOf(event.subject, SHARD_COUNT), 'outbox'), 'MAXLEN', '~', MAX_STREAM_LEN, '*', 'e', JSON.stringify(event));
  }

  /** Queues the event again (redeliver); its attempts are kept. */
  async requeue(event: NotificationEvent, lanes: readonly string[]): Promise<void> {
    const key = this.eventKey(event.id);
    const outcomes = lanes.map((lane) => `to:${lane}`);
    await Promise.all([this.redis.hset(key, 'state', 'pending'), ...(outcomes.length > 0 ? [this.redis.hdel(key, ...outcomes)] : []), this.redis.pexpire(key, EVENT_STATE_TTL_MS), this.redis.zadd(this.indexKey, 0, event.id)]);
    await this.enqueue(event);
    await this.ringDoorbell();
  }

  async claimOnce(key: string, ttlMs: number): Promise<boolean> {
    return (await this.redis.set(`${this.options.prefix}webhooks:once:${key}`, '1', 'PX', ttlMs, 'NX')) === 'OK';
  }

  async acquire(shard: number): Promise<boolean> {
    const taken = (await this.redis.set(this.shardKey(shard, 'lease'), this.owner, 'PX', this.options.leaseMs, 'NX')) === 'OK';
    if (taken) this.positions.delete(shard);
    return taken;
  }

  async renew(shard: number): Promise<boolean> {
    return (await callOperation(this.redis, OUTBOX_RENEW, { lease: this.shardKey(shard, 'lease'), owner: this.owner, ttlMs: this.options.leaseMs })).held;
  }

  async release(shard: number): Promise<void> {
    this.positions.delete(shard);
    await callOperation(this.redis, OUTBOX_RELEASE, { lease: this.shardKey(shard, 'lease'), owner: this.owner });
  }

  private async lanePositions(shard: number): Promise<Map<string, string>> {
    let known = this.positions.get(shard);
    if (known === undefined) {
      known = new Map(Object.entries(await this.redis.hgetall(this.shardKey(shard, 'positions'))));
      this.positions.set(shard, known);
    }
    return known;
  }

  async read(shard: number, lane: string, count: number): Promise<OutboxEntry[]> {
    const position = (await this.lanePositions(shard)).get(lane);
    // No position yet: from the oldest entry kept (what some webhook still waits for).
    const rows = await this.redis.xrange(this.shardKey(shard, 'outbox'), position === undefined ? '-' : `(${position}`, '+', 'COUNT', count);
    const entries: OutboxEntry[] = [];
    for (const [id, fields] of rows) {
      const event = parseEvent(fields[fields.indexOf('e') + 1]);
      // An entry that is not an event (written by hand) is committed like a delivered one would be.
      entries.push({ position: id, event: event ?? { id: '', type: 'key.created', created_at: '', subject: '', data: {} } });
    }
    return entries;
  }

  async commit(shard: number, lane: string, position: string, lanes: readonly string[]): Promise<boolean> {
    const reply = await callOperation(this.redis, OUTBOX_COMMIT, {
      lease: this.shardKey(shard, 'lease'),
      positions: this.shardKey(shard, 'positions'),
      stream: this.shardKey(shard, 'outbox'),
      owner: this.owner,
      lane,
      position,
      lanes,
    });
    if (reply.committed) (await this.lanePositions(shard)).set(lane, position);
    else this.positions.delete(shard);
    return reply.committed;
  }

  async backlog(shard: number): Promise<{ depth: number; oldestMs: number | undefined }> {
    const stream = this.shardKey(shard, 'outbox');
    const [depth, first] = await Promise.all([this.redis.xlen(stream), this.redis.xrange(stream, '-', '+', 'COUNT', 1)]);
    const position = first[0]?.[0];
    return { depth, oldestMs: position === undefined ? undefined : Number(position.split('-')[0]) };
  }

  async get(id: string): Promise<StoredEvent | undefined> {
    return toStored(await this.redis.hgetall(this.eventKey(id)));
  }

  async settle(id: string, lane: string, attempt: DeliveryAttempt | undefined, outcome: DeliveryState, targets: readonly string[]): Promise<void> {
    // One script: the lanes of an event settle it concurrently, so no read-modify-write here.
    await callOperation(this.redis, OUTBOX_SETTLE, { eventKey: this.eventKey(id), lane, outcome, attempt, attemptsKept: MAX_ATTEMPTS_KEPT, targets });
  }

  async list(filter: EventFilter, cursor: string | undefined, limit: number): Promise<EventPage> {
    // Forget ids whose state hash has expired.
    const horizon = eventIdTimePrefix(Date.now() - EVENT_STATE_TTL_MS);
    await this.redis.zremrangebylex(this.indexKey, '-', `(${horizon}`);
    const data: StoredEvent[] = [];
    let from = cursor === undefined ? '+' : `(${cursor}`;
    let scanned = 0;
    for (;;) {
      const ids = await this.redis.zrevrangebylex(this.indexKey, from, '-', 'LIMIT', 0, LIST_SCAN_BATCH);
      const loaded = await Promise.all(ids.map((id) => this.get(id)));
      for (let i = 0; i < ids.length; i++) {
        scanned++;
        const event = loaded[i];
        if (event && matches(event, filter)) data.push(event);
        if (data.length === limit) return { data, nextCursor: ids[i]! };
      }
      if (ids.length < LIST_SCAN_BATCH) return { data, nextCursor: null };
      from = `(${ids[ids.length - 1]}`;
      // A filter that matches little: a short page with a cursor, rather than a scan of everything.
      if (scanned >= LIST_SCAN_MAX) return { data, nextCursor: ids[ids.length - 1]! };
    }
  }

  async close(): Promise<void> {
    // The client is the composition root's to close.
  }
}

/** The doorbell's key: one for all shards, outside their hash tags (only ever read and incremented alone). */
export function webhookDoorbellKey(prefix: string): string {
  return `${prefix}webhooks:doorbell`;
}

/** The doorbell's value as a change mark; a key not there yet (or lost in a failover) reads as "0". */
function doorbellMark(value: string | null): string {
  return value ?? '0';
}

function parseEvent(text: string | undefined): NotificationEvent | undefined {
  if (text === undefined) return undefined;
  try {
    const event = JSON.parse(text) as NotificationEvent;
    return typeof event.id === 'string' && typeof event.subject === 'string' ? event : undefined;
  } catch {
    return undefined;
  }
}

function parseAttempts(text: string | null | undefined): DeliveryAttempt[] {
  if (!text) return [];
  try {
    const value = JSON.parse(text) as unknown;
    return Array.isArray(value) ? (value as DeliveryAttempt[]) : [];
  } catch {
    return [];
  }
}

function toStored(hash: Record<string, string>): StoredEvent | undefined {
  const event = parseEvent(hash.event);
  if (!event) return undefined;
  const state = hash.state === 'delivered' || hash.state === 'failed' ? hash.state : 'pending';
  return { ...event, state, attempts: parseAttempts(hash.attempts) };
}
