// The outbox in embedded mode (docs/notifications.md "Embedded mode"): one process, one shard,
// two append-only JSON Lines files under `notifications.dir` (var/webhooks):
//   outbox.jsonl   the events in publication order, each batch fdatasync'd before append resolves;
//   outbox.pos     each webhook's committed byte offset, `{"positions":{"<webhook id>":n}}`
//                  (replaced atomically), so a restarted gateway resumes every webhook at its
//                  first event not yet done (a bare number, the layout before per-webhook
//                  positions, is where every webhook starts; decision 0085);
//   events.jsonl   delivery-state changes, replayed at start into the admin API's view (the
//                  last EVENT_STATE_TTL_MS, at most MAX_EVENTS_KEPT events) and then compacted.
// Once every webhook has committed everything and the outbox file has grown past COMPACT_BYTES
// it is emptied. Events other processes (the `keys` CLI) publish arrive through the inbox
// (file-outbox-inbox.ts), taken in at start and whenever the deliverers read the doorbell.
import { mkdir, open, stat, truncate, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { readTextIfExists, writeFileAtomic } from '../files.js';
import { MAX_EVENTS_KEPT, eventOf, eventStatesPath, pageOf, parseLine, publicOf, readEventStates, trimToNewest, type KnownEvent, type StateLine } from './file-event-states.js';
import { readInbox } from './file-outbox-inbox.js';
import type { NotificationEvent } from './notifier.js';
import { appendAttempt, stateOf, type DeliveryAttempt, type DeliveryState, type EventFilter, type EventPage, type Outbox, type OutboxEntry, type StoredEvent } from './outbox.js';

const COMPACT_BYTES = 1_048_576;
const READ_CHUNK_BYTES = 256 * 1024;

export class FileWebhookOutbox implements Outbox {
  readonly shardCount = 1;
  private readonly outboxPath: string;
  private readonly positionPath: string;
  private readonly statePath: string;
  private outbox: FileHandle | undefined;
  private states: FileHandle | undefined;
  /** Each webhook's committed offset. */
  private readonly positions = new Map<string, number>();
  /** Where a webhook with no position yet starts: the lowest position found at start (or the old layout's one offset). */
  private floor = 0;
  private size = 0;
  /** The end offsets of the entries past the lowest position (the backlog), ascending. */
  private pendingEnds: number[] = [];
  /** Batches appended (this process's own, and the inbox's): the doorbell of embedded mode. */
  private appended = 0;
  private readonly events = new Map<string, KnownEvent>();
  private readonly once = new Map<string, number>();
  /** Appends, commits and compaction one at a time. */
  private queue: Promise<unknown> = Promise.resolve();

  private constructor(private readonly dir: string) {
    this.outboxPath = join(dir, 'outbox.jsonl');
    this.positionPath = join(dir, 'outbox.pos');
    this.statePath = eventStatesPath(dir);
  }

  static async open(dir: string, nowMs: number): Promise<FileWebhookOutbox> {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const outbox = new FileWebhookOutbox(dir);
    await outbox.load(nowMs);
    return outbox;
  }

  private async load(nowMs: number): Promise<void> {
    for (const [id, event] of await readEventStates(this.statePath, nowMs)) this.events.set(id, event);
    await writeFileAtomic(this.statePath, [...this.events.values()].map((e) => `${JSON.stringify({ id: e.id, event: eventOf(e), state: e.state, attempts: e.attempts, outcomes: e.outcomes })}\n`).join(''));
    this.states = await open(this.statePath, 'a', 0o600);

    this.outbox = await open(this.outboxPath, 'a+', 0o600);
    this.size = (await stat(this.outboxPath)).size;
    this.loadPositions((await readTextIfExists(this.positionPath))?.trim() ?? '');
    this.pendingEnds = (await this.readFrom(this.lowest(), Number.MAX_SAFE_INTEGER)).map((entry) => Number(entry.position));
    await this.takeInbox();
  }

  /** outbox.pos: `{"positions":{...}}`, or a bare offset (the layout before per-webhook positions); anything past the file's end reads as 0. */
  private loadPositions(text: string): void {
    const valid = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0 && (value as number) <= this.size;
    if (/^\d+$/.test(text)) {
      const offset = Number(text);
      this.floor = valid(offset) ? offset : 0;
      return;
    }
    const parsed = parseLine<{ positions?: Record<string, unknown> }>(text);
    for (const [lane, offset] of Object.entries(parsed?.positions ?? {})) this.positions.set(lane, valid(offset) ? offset : 0);
    this.floor = this.positions.size === 0 ? 0 : Math.min(...this.positions.values());
  }

  private positionOf(lane: string): number {
    return this.positions.get(lane) ?? this.floor;
  }

  /** The lowest committed position: entries before it are done for every webhook (each configured one has a position after its first commit). */
  private lowest(): number {
    return this.positions.size === 0 ? this.floor : Math.min(...this.positions.values());
  }

  private trimEvents(): void {
    trimToNewest(this.events);
  }

  private serial<T>(work: () => Promise<T>): Promise<T> {
    const next = this.queue.then(work, work);
    this.queue = next.catch(() => {});
    return next;
  }

  append(events: readonly NotificationEvent[]): Promise<void> {
    return this.serial(() => this.appendNow(events));
  }

  /** Within serial(): the events to the outbox file (durable before it resolves), then their states. */
  private async appendNow(events: readonly NotificationEvent[]): Promise<void> {
    if (events.length === 0) return;
    let end = this.size;
    const lines = events.map((e) => `${JSON.stringify(e)}\n`);
    await this.outbox!.appendFile(lines.join(''), 'utf8');
    await this.outbox!.datasync();
    for (const line of lines) this.pendingEnds.push((end += Buffer.byteLength(line)));
    this.size = end;
    this.appended++;
    for (const event of events) await this.writeState({ id: event.id, event, state: 'pending' }, { ...event, state: 'pending', attempts: [] });
    await this.states!.datasync();
  }

  /** What other processes dropped in the inbox, into the outbox in their order; each file deleted once its events are durable here. */
  private async takeInbox(): Promise<void> {
    for (const batch of await readInbox(this.dir)) {
      await this.appendNow(batch.events);
      await batch.remove();
    }
  }

  async requeue(event: NotificationEvent): Promise<void> {
    const known = this.events.get(event.id);
    await this.serial(async () => {
      const text = `${JSON.stringify(event)}\n`;
      await this.outbox!.appendFile(text, 'utf8');
      await this.outbox!.datasync();
      this.size += Buffer.byteLength(text);
      this.pendingEnds.push(this.size);
      this.appended++;
      await this.writeState({ id: event.id, state: 'pending', outcomes: {} }, { ...event, state: 'pending', attempts: known?.attempts ?? [], outcomes: {} });
    });
  }

  private async writeState(line: StateLine, stored: KnownEvent): Promise<void> {
    await this.states!.appendFile(`${JSON.stringify(line)}\n`, 'utf8');
    this.events.delete(stored.id);
    this.events.set(stored.id, stored);
    this.trimEvents();
  }

  claimOnce(key: string, ttlMs: number): Promise<boolean> {
    const nowMs = Date.now();
    const until = this.once.get(key);
    if (until !== undefined && until > nowMs) return Promise.resolve(false);
    this.once.set(key, nowMs + ttlMs);
    if (this.once.size > MAX_EVENTS_KEPT) for (const [k, at] of this.once) if (at <= nowMs) this.once.delete(k);
    return Promise.resolve(true);
  }

  acquire(): Promise<boolean> {
    return Promise.resolve(true);
  }

  renew(): Promise<boolean> {
    return Promise.resolve(true);
  }

  release(): Promise<void> {
    return Promise.resolve();
  }

  read(_shard: number, lane: string, count: number): Promise<OutboxEntry[]> {
    return this.serial(() => this.readFrom(this.positionOf(lane), count));
  }

  private async readFrom(offset: number, count: number): Promise<OutboxEntry[]> {
    const entries: OutboxEntry[] = [];
    let at = offset;
    let chunkBytes = READ_CHUNK_BYTES;
    while (entries.length < count && at < this.size) {
      const buffer = Buffer.alloc(Math.min(chunkBytes, this.size - at));
      const { bytesRead } = await this.outbox!.read(buffer, 0, buffer.length, at);
      const chunk = buffer.subarray(0, bytesRead);
      let start = 0;
      for (let i = chunk.indexOf(0x0a); i !== -1 && entries.length < count; i = chunk.indexOf(0x0a, start)) {
        const event = parseLine<NotificationEvent>(chunk.subarray(start, i).toString('utf8'));
        start = i + 1;
        // A line torn by a crash mid-append is passed over like a delivered one.
        entries.push({ position: String(at + start), event: event ?? { id: '', type: 'key.created', created_at: '', subject: '', data: {} } });
      }
      if (start === 0) {
        // No line end in the chunk: an event longer than it (read again, twice as much), or a
        // last line torn by a crash (nothing more to read).
        if (at + bytesRead >= this.size) break;
        chunkBytes *= 2;
        continue;
      }
      chunkBytes = READ_CHUNK_BYTES;
      at += start;
    }
    return entries;
  }

  commit(_shard: number, lane: string, position: string, lanes: readonly string[]): Promise<boolean> {
    return this.serial(async () => {
      const offset = Number(position);
      if (!(offset > this.positionOf(lane) && offset <= this.size)) return true;
      // Every configured webhook gets a position now (those without start where they would have
      // read); webhooks no longer configured stop holding entries back.
      const next = new Map(lanes.map((l) => [l, this.positionOf(l)] as const));
      next.set(lane, offset);
      this.positions.clear();
      for (const [l, at] of next) this.positions.set(l, at);
      const low = this.lowest();
      while (this.pendingEnds.length > 0 && this.pendingEnds[0]! <= low) this.pendingEnds.shift();
      if (low === this.size && this.size > COMPACT_BYTES) {
        await truncate(this.outboxPath, 0);
        this.size = 0;
        this.floor = 0;
        for (const l of this.positions.keys()) this.positions.set(l, 0);
      }
      await writeFileAtomic(this.positionPath, JSON.stringify({ positions: Object.fromEntries(this.positions) }));
      return true;
    });
  }

  async backlog(): Promise<{ depth: number; oldestMs: number | undefined }> {
    const depth = this.pendingEnds.length;
    const head = depth === 0 ? [] : await this.serial(() => this.readFrom(this.lowest(), 1));
    const created = head[0] ? Date.parse(head[0].event.created_at) : Number.NaN;
    return { depth, oldestMs: Number.isFinite(created) ? created : undefined };
  }

  /** The doorbell: takes in what the CLI dropped in the inbox, then counts the batches appended. */
  changeMark(): Promise<string> {
    return this.serial(async () => {
      await this.takeInbox();
      return String(this.appended);
    });
  }

  get(id: string): Promise<StoredEvent | undefined> {
    const known = this.events.get(id);
    return Promise.resolve(known === undefined ? undefined : publicOf(known));
  }

  settle(id: string, lane: string, attempt: DeliveryAttempt | undefined, outcome: DeliveryState, targets: readonly string[]): Promise<void> {
    return this.serial(async () => {
      const known = this.events.get(id);
      if (!known) return;
      const attempts = appendAttempt(known.attempts, attempt);
      const outcomes = { ...known.outcomes, [lane]: outcome };
      const state = stateOf(new Map(Object.entries(outcomes)), targets);
      await this.writeState({ id, state, attempts, outcomes }, { ...known, state, attempts, outcomes });
    });
  }

  list(filter: EventFilter, cursor: string | undefined, limit: number): Promise<EventPage> {
    return Promise.resolve(pageOf(this.events.values(), filter, cursor, limit));
  }

  close(): Promise<void> {
    return this.serial(async () => {
      await this.outbox?.close();
      await this.states?.close();
      this.outbox = undefined;
      this.states = undefined;
    });
  }
}

