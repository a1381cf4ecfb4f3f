// The stream slots this instance holds under concurrency caps, in Redis (docs/rate-limits.md
// "Concurrency caps"). A subject's slots are one sorted set, `${prefix}streams:{subject}`
// (the subject's hash tag, like its window keys: one slot of a Redis Cluster), member =
// this instance's id + a sequence number, score = when the slot expires. The admit
// operation takes slots (protocol/operations.ts); this module keeps them alive and gives
// them back:
// - refresh: every lease/3, one slotRefresh call per subject holding slots, all sent in the
//   same turn (auto-pipelined: one socket write per Redis node), never one per request;
// - release: queued when a stream ends, and sent (one ZREM) once per subject per event-loop turn;
// - a holder that dies stops refreshing: its slots expire `lease` after the last refresh,
//   and the next admission on that subject removes them (ZREMRANGEBYSCORE) before counting.
import { randomBytes } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import { metrics } from '../metrics/metrics.js';
import type { StreamSlot } from './rate-limiter.js';
import { SLOT_REFRESH } from './protocol/limiter-operations.js';
import type { OperationClient } from './protocol/redis-operation-client.js';

/** `${prefix}streams:{${subject}}` — the layout docs/operations.md "Key layout" describes. */
export function streamSlotsKey(prefix: string, subject: string): string {
  return `${prefix}streams:{${subject}}`;
}

/** Below this a lease/3 refresh would be a busy loop; the config's minimum lease is 1 s. */
const MIN_REFRESH_MS = 300;

interface HeldKey {
  leaseMs: number;
  members: Set<string>;
}

class RedisSlot implements StreamSlot {
  private released = false;

  constructor(
    private readonly book: RedisStreamSlots,
    readonly key: string,
    readonly member: string,
  ) {}

  release(): void {
    if (this.released) return;
    this.released = true;
    this.book.release(this.key, this.member);
  }
}

export class RedisStreamSlots {
  /** Names this process's slots; a restarted instance never refreshes its predecessor's. */
  private readonly instanceId = randomBytes(9).toString('base64url');
  private sequence = 0;
  private readonly operations: OperationClient;
  private readonly client: Redis | Cluster;
  private readonly held = new Map<string, HeldKey>();
  private releases = new Map<string, string[]>();
  private releaseScheduled = false;
  private timer: NodeJS.Timeout | null = null;
  private timerMs = 0;
  private readonly flushReleases = (): void => {
    this.releaseScheduled = false;
    const releases = this.releases;
    this.releases = new Map();
    // Lost only if Redis fails: the slots then expire within their lease.
    for (const [key, members] of releases) this.client.zrem(key, ...members).catch(() => undefined);
  };

  /** `client` sends the releases (ZREM); `operations` the refreshes. */
  constructor(operations: OperationClient, client: Redis | Cluster) {
    this.operations = operations;
    this.client = client;
  }

  /** The members of one admission call: `${head}:${i}` for its i-th admitted request. */
  nextMemberHead(): string {
    this.sequence += 1;
    return `${this.instanceId}:${this.sequence.toString(36)}`;
  }

  /** Records a slot the admission script took for this instance. */
  hold(key: string, leaseMs: number, member: string): StreamSlot {
    let entry = this.held.get(key);
    if (entry === undefined) {
      entry = { leaseMs, members: new Set() };
      this.held.set(key, entry);
    } else if (leaseMs < entry.leaseMs) {
      entry.leaseMs = leaseMs;
    }
    entry.members.add(member);
    metrics.streamSlotsHeld.inc();
    this.scheduleRefresh(leaseMs);
    return new RedisSlot(this, key, member);
  }

  /** Slots held by this instance now (tests, diagnostics). */
  get heldCount(): number {
    let count = 0;
    for (const entry of this.held.values()) count += entry.members.size;
    return count;
  }

  release(key: string, member: string): void {
    const entry = this.held.get(key);
    if (entry === undefined || !entry.members.delete(member)) return;
    metrics.streamSlotsHeld.dec();
    if (entry.members.size === 0) this.held.delete(key);
    const queued = this.releases.get(key);
    if (queued === undefined) this.releases.set(key, [member]);
    else queued.push(member);
    if (!this.releaseScheduled) {
      this.releaseScheduled = true;
      setImmediate(this.flushReleases);
    }
    if (this.held.size === 0) this.stopRefresh();
  }

  /** One call per subject holding slots, all in this turn. */
  refresh(): void {
    for (const [key, entry] of this.held) {
      // Lost only if Redis fails: the slots then expire within their lease, as a dead holder's do.
      this.operations.call(SLOT_REFRESH, { key, leaseMs: entry.leaseMs, members: entry.members }).catch(() => undefined);
    }
  }

  /** Stops refreshing; the slots still held expire within their lease (a stopping instance releases them first). */
  close(): void {
    this.stopRefresh();
    if (this.releaseScheduled) this.flushReleases();
  }

  private scheduleRefresh(leaseMs: number): void {
    const everyMs = Math.max(MIN_REFRESH_MS, Math.floor(leaseMs / 3));
    if (this.timer !== null && this.timerMs <= everyMs) return;
    this.stopRefresh();
    this.timerMs = everyMs;
    this.timer = setInterval(() => this.refresh(), everyMs);
    this.timer.unref();
  }

  private stopRefresh(): void {
    if (this.timer === null) return;
    clearInterval(this.timer);
    this.timer = null;
    this.timerMs = 0;
  }
}
