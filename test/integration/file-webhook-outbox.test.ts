// Embedded mode's outbox files (src/notifications/file-webhook-outbox.ts; decision 0085) on a
// real directory: each webhook's position kept apart and found again after a reopen, the
// position file of earlier versions (a bare offset) read as every webhook's start, the file
// emptied only once every webhook has passed everything, and the inbox other processes write
// taken in, in order, passing over what is not an event, each file removed once taken.
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newEventId } from '../../src/notifications/event-id.js';
import { dropIntoInbox, inboxDir } from '../../src/notifications/file-outbox-inbox.js';
import { FileWebhookOutbox } from '../../src/notifications/file-webhook-outbox.js';
import type { NotificationEvent } from '../../src/notifications/notifier.js';

let scratch: string;
let counter = 0;

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'agentgw-file-outbox-'));
});

afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

function events(count: number, bytes = 0): NotificationEvent[] {
  const now = Date.now();
  return Array.from({ length: count }, () => ({ id: newEventId(now), type: 'key.updated' as const, created_at: new Date(now).toISOString(), subject: 'key:key_f', data: { seq: counter++, pad: 'x'.repeat(bytes) } }));
}

const ids = (entries: Array<{ event: NotificationEvent }>) => entries.map((e) => e.event.id);

describe('file outbox', () => {
  it('keeps a position per webhook, found again after a reopen', async () => {
    const dir = join(scratch, 'lanes');
    const outbox = await FileWebhookOutbox.open(dir, Date.now());
    const list = events(3);
    await outbox.append(list);
    const a = await outbox.read(0, 'a', 10);
    expect(ids(a)).toEqual(list.map((e) => e.id));
    await outbox.commit(0, 'a', a[2]!.position, ['a', 'b']);
    const b = await outbox.read(0, 'b', 1);
    await outbox.commit(0, 'b', b[0]!.position, ['a', 'b']);
    expect((await outbox.backlog()).depth).toBe(2);
    await outbox.close();

    const again = await FileWebhookOutbox.open(dir, Date.now());
    expect(await again.read(0, 'a', 10)).toEqual([]);
    expect(ids(await again.read(0, 'b', 10))).toEqual([list[1]!.id, list[2]!.id]);
    expect((await again.backlog()).depth).toBe(2);
    await again.close();
  });

  it("reads the earlier versions' position file (one offset) as every webhook's start", async () => {
    const dir = join(scratch, 'legacy');
    const outbox = await FileWebhookOutbox.open(dir, Date.now());
    const list = events(3);
    await outbox.append(list);
    const first = await outbox.read(0, 'x', 1);
    await outbox.close();
    // What a gateway of the earlier layout wrote after delivering the first event.
    await writeFile(join(dir, 'outbox.pos'), first[0]!.position);
    const upgraded = await FileWebhookOutbox.open(dir, Date.now());
    expect(ids(await upgraded.read(0, 'a', 10))).toEqual([list[1]!.id, list[2]!.id]);
    expect(ids(await upgraded.read(0, 'b', 10))).toEqual([list[1]!.id, list[2]!.id]);
    await upgraded.close();
  });

  it('empties the outbox file only once every webhook has passed everything', async () => {
    const dir = join(scratch, 'compact');
    const outbox = await FileWebhookOutbox.open(dir, Date.now());
    // Past the 1 MiB compaction threshold.
    const list = events(3, 400_000);
    await outbox.append(list);
    const a = await outbox.read(0, 'a', 10);
    await outbox.commit(0, 'a', a[2]!.position, ['a', 'b']);
    expect((await stat(join(dir, 'outbox.jsonl'))).size).toBeGreaterThan(1_048_576);
    const b = await outbox.read(0, 'b', 10);
    expect(ids(b)).toEqual(list.map((e) => e.id));
    await outbox.commit(0, 'b', b[2]!.position, ['a', 'b']);
    expect((await stat(join(dir, 'outbox.jsonl'))).size).toBe(0);
    expect(JSON.parse(await readFile(join(dir, 'outbox.pos'), 'utf8'))).toEqual({ positions: { a: 0, b: 0 } });
    const more = events(1);
    await outbox.append(more);
    expect(ids(await outbox.read(0, 'a', 10))).toEqual([more[0]!.id]);
    expect(ids(await outbox.read(0, 'b', 10))).toEqual([more[0]!.id]);
    await outbox.close();
  });

  it('takes in what other processes dropped in the inbox, in order, passing over what is not an event', async () => {
    const dir = join(scratch, 'inbox');
    const outbox = await FileWebhookOutbox.open(dir, Date.now());
    const first = events(2);
    const second = events(1);
    await dropIntoInbox(dir, first);
    await dropIntoInbox(dir, second);
    await writeFile(join(inboxDir(dir), `${newEventId(Date.now())}-junk.jsonl`), 'not json\n{"id":1}\n[]\n{"id":"evt_x","subject":"s","type":"key.created","created_at":"t","data":null}\n');
    // A file still being written (temporary name) is left alone.
    await writeFile(join(inboxDir(dir), '.partial.tmp'), '{"id":');
    const before = await outbox.changeMark();
    expect(Number(before)).toBeGreaterThan(0);
    expect(ids(await outbox.read(0, 'a', 10))).toEqual([...first, ...second].map((e) => e.id));
    expect(await readdir(inboxDir(dir))).toEqual(['.partial.tmp']);
    expect((await outbox.get(first[0]!.id))?.state).toBe('pending');
    // Nothing new: the mark stays.
    expect(await outbox.changeMark()).toBe(before);
    await outbox.close();
  });
});
