// Embedded mode's way in for other processes (docs/notifications-events.md "Key events"): the
// `keys` CLI cannot append to outbox.jsonl, which the gateway process owns (it truncates the
// file once everything is delivered, and keeps its size in memory), so it drops each batch
// of events as a file of its own in `<notifications.dir>/incoming/`, written under a temporary
// name, fsync'd, then renamed: a file with the final name is always whole. The gateway takes
// the files in (at start, and when its deliverers read the doorbell), appends their events to
// its outbox through its one writer, then deletes them; a crash between the two sends them
// again (at least once). Names start with the batch's first event id, so they sort in
// publication order. Decision 0085 (docs/decisions/0085-a-position-per-webhook.md).
import { randomBytes } from 'node:crypto';
import { mkdir, open, readdir, rename, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { readTextIfExists } from '../files.js';
import type { NotificationEvent } from './notifier.js';

const SUFFIX = '.jsonl';
/** Files taken in at once: a pile-up while no gateway ran is taken in over several doorbell reads. */
const MAX_FILES_PER_TAKE = 64;

export function inboxDir(dir: string): string {
  return join(dir, 'incoming');
}

/** Writes one batch for the gateway to take in; resolves once it is durable. */
export async function dropIntoInbox(dir: string, events: readonly NotificationEvent[]): Promise<void> {
  if (events.length === 0) return;
  const inbox = inboxDir(dir);
  await mkdir(inbox, { recursive: true, mode: 0o700 });
  const name = `${events[0]!.id}-${randomBytes(4).toString('hex')}`;
  const temporary = join(inbox, `.${name}.tmp`);
  const file = await open(temporary, 'w', 0o600);
  try {
    await file.writeFile(events.map((event) => `${JSON.stringify(event)}\n`).join(''), 'utf8');
    await file.sync();
  } finally {
    await file.close();
  }
  await rename(temporary, join(inbox, `${name}${SUFFIX}`));
}

/** A batch waiting in the inbox: its events, and how to let go of it once they are in the outbox. */
export interface InboxBatch {
  events: NotificationEvent[];
  remove(): Promise<void>;
}

/** The whole batches waiting, oldest first (at most MAX_FILES_PER_TAKE); none when there is no inbox. */
export async function readInbox(dir: string): Promise<InboxBatch[]> {
  const inbox = inboxDir(dir);
  let names: string[];
  try {
    names = (await readdir(inbox)).filter((name) => name.endsWith(SUFFIX) && !name.startsWith('.')).sort();
  } catch {
    return [];
  }
  const batches: InboxBatch[] = [];
  for (const name of names.slice(0, MAX_FILES_PER_TAKE)) {
    const path = join(inbox, name);
    const text = await readTextIfExists(path);
    if (text === undefined) continue;
    batches.push({ events: parseEvents(text), remove: () => unlink(path).catch(() => {}) });
  }
  return batches;
}

/** Lines that are events; anything else (a file written by hand) is passed over. */
function parseEvents(text: string): NotificationEvent[] {
  const events: NotificationEvent[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    try {
      const value = JSON.parse(line) as NotificationEvent;
      if (typeof value.id === 'string' && typeof value.subject === 'string' && typeof value.type === 'string' && typeof value.created_at === 'string' && value.data !== null && typeof value.data === 'object') events.push(value);
    } catch {
      // Not an event.
    }
  }
  return events;
}
