// Embedded mode's delivery states (events.jsonl under notifications.dir): the line format, its
// replay into the admin API's view, and the view's pages. Read-only helpers, shared by the
// file outbox (file-webhook-outbox.ts) and the `events list` CLI, which reads them beside a
// running gateway.
import { join } from 'node:path';
import { readTextIfExists } from '../files.js';
import type { NotificationEvent } from './notifier.js';
import { EVENT_STATE_TTL_MS, matches, type DeliveryAttempt, type DeliveryState, type EventFilter, type EventPage, type StoredEvent } from './outbox.js';

export const MAX_EVENTS_KEPT = 10_000;

/** One line of events.jsonl: a state change of one event (the first carries the event). */
export interface StateLine {
  id: string;
  event?: NotificationEvent;
  state: DeliveryState;
  attempts?: DeliveryAttempt[];
  /** Per webhook id, its outcome so far (absent: not done). */
  outcomes?: Record<string, DeliveryState>;
}

/** An event of the admin API's view, with its webhooks' outcomes. */
export type KnownEvent = StoredEvent & { outcomes?: Record<string, DeliveryState> };

/**
 * The delivery states recorded in `path` (events.jsonl), replayed: the last EVENT_STATE_TTL_MS,
 * at most MAX_EVENTS_KEPT, in publication order. Read-only, so the CLI can use it beside a
 * running gateway.
 */
export async function readEventStates(path: string, nowMs: number): Promise<Map<string, KnownEvent>> {
  const events = new Map<string, KnownEvent>();
  const text = (await readTextIfExists(path)) ?? '';
  for (const line of text.split('\n')) {
    const change = parseLine<StateLine>(line);
    if (!change || typeof change.id !== 'string') continue;
    const known = events.get(change.id);
    const event = change.event ?? known;
    if (!event) continue;
    events.delete(change.id);
    const outcomes = change.outcomes ?? known?.outcomes;
    events.set(change.id, { ...event, id: change.id, state: change.state, attempts: change.attempts ?? known?.attempts ?? [], ...(outcomes ? { outcomes } : {}) });
  }
  const horizon = nowMs - EVENT_STATE_TTL_MS;
  for (const [id, event] of events) if (Date.parse(event.created_at) < horizon) events.delete(id);
  trimToNewest(events);
  return events;
}

/** One page of `events`, newest first, after `cursor`. */
export function pageOf(events: Iterable<KnownEvent>, filter: EventFilter, cursor: string | undefined, limit: number): EventPage {
  const data: StoredEvent[] = [];
  const newestFirst = [...events].sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
  for (const event of newestFirst) {
    if (cursor !== undefined && event.id >= cursor) continue;
    if (!matches(event, filter)) continue;
    data.push(publicOf(event));
    if (data.length === limit) return { data, nextCursor: event.id };
  }
  return { data, nextCursor: null };
}

export function trimToNewest(events: Map<string, KnownEvent>): void {
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

/** What the admin API and the CLI show: the event and its state, not the per-webhook bookkeeping. */
export function publicOf(known: KnownEvent): StoredEvent {
  return { id: known.id, type: known.type, created_at: known.created_at, subject: known.subject, data: known.data, state: known.state, attempts: known.attempts };
}

export function eventOf(stored: StoredEvent): NotificationEvent {
  return { id: stored.id, type: stored.type, created_at: stored.created_at, subject: stored.subject, data: stored.data };
}

export function parseLine<T>(line: string): T | undefined {
  if (line.trim() === '') return undefined;
  try {
    return JSON.parse(line) as T;
  } catch {
    return undefined;
  }
}
