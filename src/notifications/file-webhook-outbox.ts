// The outbox in embedded mode (docs/notifications.md "Embedded mode"): one process, one shard,
// two append-only JSON Lines files under `notifications.dir` (var/webhooks):
//   outbox.jsonl   the events in publication order, each batch fdatasync'd before append resolves;
//   outbox.pos     the byte offset delivery has committed (replaced atomically), so a restarted
//                  gateway resumes at the first event not yet done;
//   events.jsonl   delivery-state changes, replayed at start into the admin API's view (the
//                  last EVENT_STATE_TTL_MS, at most MAX_EVENTS_KEPT events) and then compacted.
// Once everything is committed and the outbox file has grown past COMPACT_BYTES it is emptied.
import { mkdir, open, stat, truncate, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { readTextIfExists, writeFileAtomic } from '../files.js';
import type { NotificationEvent } from './notifier.js';
import { EVENT_STATE_TTL_MS, appendAttempt, matches, type DeliveryAttempt, type DeliveryState, type EventFilter, type EventPage, type Outbox, type OutboxEntry, type StoredEvent } from './outbox.js';

const MAX_EVENTS_KEPT = 10_000;
const COMPACT_BYTES = 1_048_576;
const READ_CHUNK_BYTES = 256 * 1024;

interface StateLine {
  id: string;
  event?: NotificationEvent;
  state: DeliveryState;
  attempts?: DeliveryAttempt[];
}

export class FileWebhookOutbox implements Outbox {
  readonly shardCount = 1;
  private readonly outboxPath: string;
  private readonly positionPath: string;
  private readonly statePath: string;
  private outbox: FileHandle | undefined;
  private states: FileHandle | undefined;
  private committed = 0;
  private size = 0;
  private depth = 0;
  /** Batches appended by this process: the doorbell of embedded mode, where no other process writes. */
  private appended = 0;
  private readonly events = new Map<string, StoredEvent>();
  private readonly once = new Map<string, number>();
  /** Appends, commits and compaction one at a time. */
  private queue: Promise<unknown> = Promise.resolve();

  private constructor(dir: string) {
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
    await writeFileAtomic(this.statePath, [...this.events.values()].map((e) => `${JSON.stringify({ id: e.id, event: eventOf(e), state: e.state, attempts: e.attempts })}\n`).join(''));
    this.states = await open(this.statePath, 'a', 0o600);

    this.outbox = await open(this.outboxPath, 'a+', 0o600);
    this.size = (await stat(this.outboxPath)).size;
    const position = Number((await readTextIfExists(this.positionPath))?.trim() ?? '0');
    this.committed = Number.isSafeInteger(position) && position >= 0 && position <= this.size ? position : 0;
    this.depth = (await this.readFrom(this.committed, Number.MAX_SAFE_INTEGER)).length;
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
    return this.serial(async () => {
      if (events.length === 0) return;
      const text = events.map((e) => `${JSON.stringify(e)}\n`).join('');
      await this.outbox!.appendFile(text, 'utf8');
      await this.outbox!.datasync();
      this.size += Buffer.byteLength(text);
      this.depth += events.length;
      this.appended++;
      for (const event of events) await this.writeState({ id: event.id, event, state: 'pending' }, { ...event, state: 'pending', attempts: [] });
      await this.states!.datasync();
    });
  }

  async requeue(event: NotificationEvent): Promise<void> {
    const known = this.events.get(event.id);
    await this.serial(async () => {
      const text = `${JSON.stringify(event)}\n`;
      await this.outbox!.appendFile(text, 'utf8');
      await this.outbox!.datasync();
      this.size += Buffer.byteLength(text);
      this.depth += 1;
      this.appended++;
      await this.writeState({ id: event.id, state: 'pending' }, { ...event, state: 'pending', attempts: known?.attempts ?? [] });
    });
  }

  private async writeState(line: StateLine, stored: StoredEvent): Promise<void> {
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

  read(_shard: number, count: number): Promise<OutboxEntry[]> {
    return this.serial(() => this.readFrom(this.committed, count));
  }

  private async readFrom(offset: number, count: number): Promise<OutboxEntry[]> {
    const entries: OutboxEntry[] = [];
    let at = offset;
    while (entries.length < count && at < this.size) {
      const buffer = Buffer.alloc(Math.min(READ_CHUNK_BYTES, this.size - at));
      const { bytesRead } = await this.outbox!.read(buffer, 0, buffer.length, at);
      const chunk = buffer.subarray(0, bytesRead);
      let start = 0;
      for (let i = chunk.indexOf(0x0a); i !== -1 && entries.length < count; i = chunk.indexOf(0x0a, start)) {
        const event = parseLine<NotificationEvent>(chunk.subarray(start, i).toString('utf8'));
        start = i + 1;
        // A line torn by a crash mid-append is passed over like a delivered one.
        entries.push({ position: String(at + start), event: event ?? { id: '', type: 'key.created', created_at: '', subject: '', data: {} } });
      }
      if (start === 0) break;
      at += start;
    }
    return entries;
  }

  commit(_shard: number, position: string): Promise<boolean> {
    return this.serial(async () => {
      const offset = Number(position);
      if (!(offset > this.committed && offset <= this.size)) return true;
      this.committed = offset;
      this.depth = Math.max(0, this.depth - 1);
      if (this.committed === this.size && this.size > COMPACT_BYTES) {
        await truncate(this.outboxPath, 0);
        this.size = 0;
        this.committed = 0;
      }
      await writeFileAtomic(this.positionPath, String(this.committed));
      return true;
    });
  }

  async backlog(): Promise<{ depth: number; oldestMs: number | undefined }> {
    const head = this.depth === 0 ? [] : await this.read(0, 1);
    const created = head[0] ? Date.parse(head[0].event.created_at) : Number.NaN;
    return { depth: this.depth, oldestMs: Number.isFinite(created) ? created : undefined };
  }

  changeMark(): Promise<string> {
    return Promise.resolve(String(this.appended));
  }

  get(id: string): Promise<StoredEvent | undefined> {
    return Promise.resolve(this.events.get(id));
  }

  recordAttempt(id: string, attempt: DeliveryAttempt | undefined, state: DeliveryState): Promise<void> {
    return this.serial(async () => {
      const known = this.events.get(id);
      if (!known) return;
      const attempts = appendAttempt(known.attempts, attempt);
      await this.writeState({ id, state, attempts }, { ...known, state, attempts });
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

/**
 * The delivery states recorded in `path` (events.jsonl), replayed: the last EVENT_STATE_TTL_MS,
 * at most MAX_EVENTS_KEPT, in publication order. Read-only, so the CLI can use it beside a
 * running gateway.
 */
export async function readEventStates(path: string, nowMs: number): Promise<Map<string, StoredEvent>> {
  const events = new Map<string, StoredEvent>();
  const text = (await readTextIfExists(path)) ?? '';
  for (const line of text.split('\n')) {
    const change = parseLine<StateLine>(line);
    if (!change || typeof change.id !== 'string') continue;
    const known = events.get(change.id);
    const event = change.event ?? known;
    if (!event) continue;
    events.delete(change.id);
    events.set(change.id, { ...event, id: change.id, state: change.state, attempts: change.attempts ?? known?.attempts ?? [] });
  }
  const horizon = nowMs - EVENT_STATE_TTL_MS;
  for (const [id, event] of events) if (Date.parse(event.created_at) < horizon) events.delete(id);
  trimToNewest(events);
  return events;
}

/** One page of `events`, newest first, after `cursor`. */
export function pageOf(events: Iterable<StoredEvent>, filter: EventFilter, cursor: string | undefined, limit: number): EventPage {
  const data: StoredEvent[] = [];
  const newestFirst = [...events].sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
  for (const event of newestFirst) {
    if (cursor !== undefined && event.id >= cursor) continue;
    if (!matches(event, filter)) continue;
    data.push(event);
    if (data.length === limit) return { data, nextCursor: event.id };
  }
  return { data, nextCursor: null };
}

function trimToNewest(events: Map<string, StoredEvent>): void {
  // Map order is insertion (publication) order: the oldest go first.
  for (const id of events.keys()) {
    if (events.size <= MAX_EVENTS_KEPT) break;
    events.delete(id);
  }
}

/** Where embedded mode keeps the delivery states. */
export function eventStatesPath(dir: string): string {
  return join(dir, 'events.jsonl');
}

function eventOf(stored: StoredEvent): NotificationEvent {
  return { id: stored.id, type: stored.type, created_at: stored.created_at, subject: stored.subject, data: stored.data };
}

function parseLine<T>(line: string): T | undefined {
  if (line.trim() === '') return undefined;
  try {
    return JSON.parse(line) as T;
  } catch {
    return undefined;
  }
}
