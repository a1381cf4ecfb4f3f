// The write-ahead audit journal (decision 0022) on its own and inside BatchingAuditLog: one
// write per event-loop turn, dropped once every sink has settled the batch, recovered (and
// sent again, first) by the next process, a torn last line skipped and reported.
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { toAuditLine } from '../../../src/audit/audit-record.js';
import { AuditJournal } from '../../../src/audit/audit-journal.js';
import { spoolPathFor } from '../../../src/audit/audit-spool.js';
import { BatchingAuditLog, type BatchingAuditLogOptions } from '../../../src/audit/batching-audit-log.js';
import { ManualClock } from '../../../src/clock.js';
import { silentLogger } from '../../../src/logger.js';
import { makeLines, makeRecords, spooledIds } from '../../helpers/audit-records.js';
import { tempDir } from '../../helpers/files.js';
import { FakeSink } from '../../helpers/fake-audit-sink.js';
import { captureLogLines } from '../../helpers/log-capture.js';
import { auditCount } from '../../helpers/metric-counts.js';

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
const ids = (from: number, count: number): string[] => makeRecords(from, count).map((r) => r.id);

describe('AuditJournal', () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  let journalPath: string;
  const logs: BatchingAuditLog[] = [];
  const releases: (() => void)[] = [];

  beforeEach(async () => {
    ({ dir, cleanup } = await tempDir());
    journalPath = join(dir, 'journal.jsonl');
  });
  afterEach(async () => {
    for (const release of releases.splice(0)) release();
    await Promise.all(logs.splice(0).map((log) => log.close()));
    await cleanup();
  });

  /** Every journal segment on disk, oldest first, with its text. */
  async function segments(): Promise<{ name: string; text: string }[]> {
    const names = (await readdir(dir)).filter((n) => /^journal\.\d+\.jsonl$/.test(n)).sort((a, b) => Number(a.split('.')[1]) - Number(b.split('.')[1]));
    return Promise.all(names.map(async (name) => ({ name, text: await readFile(join(dir, name), 'utf8') })));
  }
  async function journaledIds(): Promise<string[]> {
    return (await segments()).flatMap((s) => s.text.split('\n').filter(Boolean).map((line) => (JSON.parse(line) as { id: string }).id));
  }

  function openLog(options: Partial<BatchingAuditLogOptions> & Pick<BatchingAuditLogOptions, 'sinks'>, keep = true): BatchingAuditLog {
    const log = new BatchingAuditLog({
      spoolPath: join(dir, 'spool.jsonl'),
      batchSize: 3,
      flushIntervalMs: 60_000,
      maxQueue: 1_000,
      logger: silentLogger,
      clock: new ManualClock(),
      retryMinMs: 10,
      retryMaxMs: 40,
      journal: new AuditJournal(journalPath, { logger: silentLogger }),
      ...options,
    });
    if (keep) logs.push(log);
    return log;
  }

  /** A log whose sink never answers: what it journals stays, as in a process killed now. */
  function doomedLog(options: Partial<BatchingAuditLogOptions> = {}): BatchingAuditLog {
    const sink = new FakeSink();
    releases.push(sink.hold());
    return openLog({ sinks: [sink], ...options }, false);
  }

  it('writes the records of one turn at the end of that turn, not before', async () => {
    const journal = new AuditJournal(journalPath, { logger: silentLogger });
    journal.recover();
    for (const line of makeLines(0, 5)) journal.add(line);
    // Read synchronously: an awaited read would let the turn end.
    expect(readdirSync(dir)).toEqual([]);
    await turn();
    const files = await segments();
    expect(files.map((f) => f.name)).toEqual(['journal.1.jsonl']);
    expect(files[0]!.text).toBe(`${makeLines(0, 5).join('\n')}\n`);
    journal.close();
  });

  it('keeps a batch until the sink has it, then empties the segment', async () => {
    const sink = new FakeSink();
    const release = sink.hold();
    releases.push(release);
    const log = openLog({ sinks: [sink], batchSize: 3 });
    for (const record of makeRecords(0, 4)) log.record(record);
    await turn();
    // The first batch is sealed and held by the sink; the fourth record waits in the open batch.
    expect(await journaledIds()).toEqual(ids(0, 4));
    release();
    await vi.waitFor(() => expect(sink.ids).toEqual(ids(0, 3)));
    // The open batch's record is still only in memory and the journal: the segment keeps it.
    expect(await journaledIds()).toEqual(ids(0, 4));
    await log.flush();
    expect(sink.ids).toEqual(ids(0, 4));
    expect((await segments()).map((s) => s.text)).toEqual(['']);
  });

  it('waits for every sink: one sink done is not enough', async () => {
    const fast = new FakeSink('fast');
    const slow = new FakeSink('slow');
    const release = slow.hold();
    releases.push(release);
    const log = openLog({ sinks: [fast, slow], batchSize: 3 });
    for (const record of makeRecords(0, 3)) log.record(record);
    await vi.waitFor(() => expect(fast.ids).toEqual(ids(0, 3)));
    await turn();
    expect(await journaledIds()).toEqual(ids(0, 3));
    release();
    await log.flush();
    expect(await journaledIds()).toEqual([]);
  });

  it('counts a batch spooled for a failing sink as settled (the spool is on disk)', async () => {
    const sink = new FakeSink();
    sink.failing = true;
    const log = openLog({ sinks: [sink], batchSize: 3 });
    for (const record of makeRecords(0, 3)) log.record(record);
    await log.flush();
    expect(await spooledIds(spoolPathFor(join(dir, 'spool.jsonl'), sink.name))).toEqual(ids(0, 3));
    expect(await journaledIds()).toEqual([]);
  });

  it('sends what a killed process journaled again, before any new record, then drops the old segment', async () => {
    const killed = doomedLog();
    for (const record of makeRecords(0, 5)) killed.record(record);
    await turn();
    expect(await journaledIds()).toEqual(ids(0, 5));

    const recoveredBefore = await auditCount('journal', 'recovered');
    const sink = new FakeSink();
    const log = openLog({ sinks: [sink] });
    log.record(makeRecords(100, 1)[0]!);
    await log.flush();
    expect(sink.ids).toEqual([...ids(0, 5), ...ids(100, 1)]);
    expect(await auditCount('journal', 'recovered')).toBe(recoveredBefore + 5);
    // Only the new process's own segment is left, empty: the recovered one went once settled.
    expect((await segments()).map((s) => s.name)).toEqual(['journal.2.jsonl']);
    expect(await journaledIds()).toEqual([]);
  });

  it('skips and reports a torn last line (killed mid-write), and an unreadable one', async () => {
    const [a, b, c] = makeLines(0, 3);
    await writeFile(join(dir, 'journal.7.jsonl'), `${a}\n{"not":"a record"}\n${b}\n${c!.slice(0, 40)}`);
    const { logger, lines } = captureLogLines<{ level: string; msg: string; journal?: string; records?: number; skipped?: number }>();
    const journal = new AuditJournal(journalPath, { logger });
    const recovered = journal.recover();
    expect(recovered.lines).toEqual([a, b]);
    expect(recovered.skipped).toBe(2);
    const warnings = lines.filter((l) => l.level === 'warn').map((l) => l.msg);
    expect(warnings).toEqual([
      'audit journal ends in a torn line (killed mid-write); skipping it',
      'skipping an unreadable audit journal line',
      'audit journal holds records of an earlier run that no sink confirmed; sending them again',
    ]);
    expect(lines.at(-1)).toMatchObject({ records: 2, skipped: 2 });
    // New segments number after the old ones, so the recovered file is never appended to.
    journal.add(makeLines(9, 1)[0]!);
    journal.flush();
    expect((await segments()).map((s) => s.name)).toEqual(['journal.7.jsonl', 'journal.8.jsonl']);
    journal.close();
  });

  it('a torn journal replays its whole records into the sink and nothing else', async () => {
    const lines = makeLines(0, 4);
    await writeFile(join(dir, 'journal.1.jsonl'), `${lines.slice(0, 3).join('\n')}\n${lines[3]!.slice(0, 25)}`);
    const sink = new FakeSink();
    const log = openLog({ sinks: [sink] });
    await log.flush();
    expect(sink.ids).toEqual(ids(0, 3));
    expect(await segments()).toEqual([]);
  });

  it('rotates a segment past rotateBytes and deletes each once its batches are settled', async () => {
    const sink = new FakeSink();
    const release = sink.hold();
    releases.push(release);
    const oneLine = Buffer.byteLength(toAuditLine(makeRecords(0, 1)[0]!)) + 1;
    // Two records fill a segment: each batch of three rotates the segment it sealed.
    const log = openLog({ sinks: [sink], batchSize: 3, journal: new AuditJournal(journalPath, { logger: silentLogger, rotateBytes: oneLine * 2 }) });
    for (const record of makeRecords(0, 9)) log.record(record);
    await turn();
    expect((await segments()).map((s) => s.name)).toEqual(['journal.1.jsonl', 'journal.2.jsonl', 'journal.3.jsonl']);
    expect(await journaledIds()).toEqual(ids(0, 9));
    release();
    await log.flush();
    expect(sink.ids).toEqual(ids(0, 9));
    expect(await segments()).toEqual([]);
  });

  it('keeps records neither the sink nor the spool took at shutdown for the next start', async () => {
    const sink = new FakeSink();
    sink.failing = true;
    // The sink's spool file is a directory: appends fail, so close() gives the records up to the log.
    await mkdir(join(dir, 'bad', 'spool.fake.jsonl'), { recursive: true });
    const log = openLog({ sinks: [sink], spoolPath: join(dir, 'bad', 'spool.jsonl') }, false);
    for (const record of makeRecords(0, 2)) log.record(record);
    await log.close();
    expect(await journaledIds()).toEqual(ids(0, 2));

    const next = new FakeSink();
    const reopened = openLog({ sinks: [next], spoolPath: join(dir, 'spool.jsonl') });
    await reopened.flush();
    expect(next.ids).toEqual(ids(0, 2));
    expect(await journaledIds()).toEqual([]);
  });

  it('a journal that cannot be written is reported and counted, and the records still reach the sink', async () => {
    const { logger, lines } = captureLogLines();
    // The journal's directory is a file: it can be neither read nor written.
    await writeFile(join(dir, 'blocked'), 'x');
    const failedBefore = await auditCount('journal', 'failed');
    const sink = new FakeSink();
    const log = openLog({ sinks: [sink], logger, journal: new AuditJournal(join(dir, 'blocked', 'journal.jsonl'), { logger }) });
    for (const record of makeRecords(0, 4)) log.record(record);
    await turn();
    await log.flush();
    expect(sink.ids).toEqual(ids(0, 4));
    // Two writes: the turn's (four records, one of them sealed at once) is the seal's; then the open record's at flush.
    expect(await auditCount('journal', 'failed')).toBe(failedBefore + 4);
    expect(lines.filter((l) => l.level === 'error').map((l) => l.msg)).toEqual([
      'cannot read the audit journal of an earlier run; its records are not sent',
      'cannot write the audit journal; records are unprotected against a kill until it works again',
    ]);
  });
});
