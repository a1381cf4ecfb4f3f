import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { spoolPathFor } from '../../../src/audit/audit-spool.js';
import { BatchingAuditLog, type BatchingAuditLogOptions } from '../../../src/audit/batching-audit-log.js';
import { FileAuditSink } from '../../../src/audit/file-audit-sink.js';
import { ManualClock } from '../../../src/clock.js';
import { silentLogger } from '../../../src/logger.js';
import { dedupe, idsInFile, makeRecord, makeRecords, spooledIds } from '../../helpers/audit-records.js';
import { tempDir } from '../../helpers/files.js';
import { FakeSink } from '../../helpers/fake-audit-sink.js';
import { auditCount } from '../../helpers/metric-counts.js';

const ids = (from: number, count: number): string[] => makeRecords(from, count).map((r) => r.id);

describe('BatchingAuditLog', () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  let spoolPath: string;
  const logs: BatchingAuditLog[] = [];

  beforeEach(async () => {
    ({ dir, cleanup } = await tempDir());
    spoolPath = join(dir, 'spool.jsonl');
  });
  afterEach(async () => {
    await Promise.all(logs.splice(0).map((log) => log.close()));
    await cleanup();
  });

  function openLog(options: Partial<BatchingAuditLogOptions> & Pick<BatchingAuditLogOptions, 'sinks'>): BatchingAuditLog {
    const log = new BatchingAuditLog({
      spoolPath,
      batchSize: 3,
      flushIntervalMs: 60_000,
      maxQueue: 1_000,
      logger: silentLogger,
      clock: new ManualClock(),
      retryMinMs: 10,
      retryMaxMs: 40,
      ...options,
    });
    logs.push(log);
    return log;
  }

  it('writes a batch as soon as it reaches batchSize, without waiting for the interval', async () => {
    const sink = new FakeSink();
    const log = openLog({ sinks: [sink], batchSize: 3 });
    for (const record of makeRecords(0, 7)) log.record(record);
    await vi.waitFor(() => expect(sink.batches.map((b) => b.length)).toEqual([3, 3]));
    await log.flush();
    expect(sink.batches.map((b) => b.length)).toEqual([3, 3, 1]);
    expect(sink.ids).toEqual(ids(0, 7));
  });

  it('writes a partial batch flushIntervalMs after its first record', async () => {
    const sink = new FakeSink();
    const log = openLog({ sinks: [sink], batchSize: 100, flushIntervalMs: 20 });
    log.record(makeRecord(0));
    log.record(makeRecord(1));
    await vi.waitFor(() => expect(sink.ids).toEqual(ids(0, 2)), { timeout: 2_000 });
    expect(sink.batches).toHaveLength(1);
  });

  it('holds a partial batch until the interval (or a flush) rather than writing record by record', async () => {
    const sink = new FakeSink();
    const log = openLog({ sinks: [sink], batchSize: 100, flushIntervalMs: 60_000 });
    log.record(makeRecord(0));
    log.record(makeRecord(1));
    await new Promise((r) => setTimeout(r, 30));
    expect(sink.attempts).toBe(0);
    await log.flush();
    expect(sink.batches.map((b) => b.length)).toEqual([2]);
  });

  it('counts written records by sink', async () => {
    const sink = new FakeSink('count_written');
    const log = openLog({ sinks: [sink] });
    for (const record of makeRecords(0, 5)) log.record(record);
    await log.flush();
    expect(await auditCount('count_written', 'written')).toBe(5);
  });

  it('spools while the sink is down and replays in order once it is back; no record lost', async () => {
    const sink = new FakeSink('flaky');
    sink.failing = true;
    const log = openLog({ sinks: [sink], batchSize: 2 });
    for (const record of makeRecords(0, 9)) log.record(record);
    await log.flush();
    expect(sink.ids).toEqual([]);
    // (The spool file itself may be mid-replay attempt here: count instead of reading it.)
    expect(await auditCount('flaky', 'spooled')).toBe(9);
    expect(log.spoolingSinks()).toEqual(['flaky']);
    // Records keep coming during the outage and while the spool is replayed.
    for (const record of makeRecords(9, 3)) log.record(record);
    sink.failing = false;
    for (const record of makeRecords(12, 3)) log.record(record);
    await vi.waitFor(async () => {
      await log.flush();
      expect(dedupe(sink.ids)).toEqual(ids(0, 15));
    });
    expect(sink.ids).toEqual(ids(0, 15));
    expect(log.spoolingSinks()).toEqual([]);
    expect(await auditCount('flaky', 'failed')).toBe(2);
    expect(await auditCount('flaky', 'spooled')).toBeGreaterThanOrEqual(9);
    expect(await auditCount('flaky', 'replayed')).toBe(15 - (await auditCount('flaky', 'written')));
  });

  it('reports a sink that keeps refusing its spool at warn (once per reason a minute, with the attempts), never only at debug', async () => {
    const lines: { level: number; msg: string; failedAttempts?: number; err?: { message: string } }[] = [];
    const logger = pino({ level: 'debug' }, { write: (text: string) => void lines.push(JSON.parse(text) as (typeof lines)[number]) });
    const clock = new ManualClock();
    const sink = new FakeSink('refusing');
    sink.failing = true;
    const log = openLog({ sinks: [sink], batchSize: 2, logger, clock });
    for (const record of makeRecords(0, 4)) log.record(record);
    await log.flush();
    const stillRefused = () => lines.filter((l) => l.msg.includes('still refuses'));
    // The probes replay the spool every 10-40 ms and fail: the first failure is a warning.
    await vi.waitFor(() => expect(sink.attempts).toBeGreaterThan(5));
    expect(stillRefused().map((l) => [l.level, l.err?.message])).toEqual([[40, 'refusing sink is down']]);
    // A minute later (the injected clock), the next failure is reported again, with the attempts since.
    clock.advance(60_000);
    await vi.waitFor(() => expect(stillRefused()).toHaveLength(2));
    expect(stillRefused()[1]!.failedAttempts).toBeGreaterThan(1);
    sink.failing = false;
    await vi.waitFor(async () => {
      await log.flush();
      expect(dedupe(sink.ids)).toEqual(ids(0, 4));
    });
  });

  it('keeps order across repeated outages with records arriving all along', async () => {
    const sink = new FakeSink();
    const log = openLog({ sinks: [sink], batchSize: 4, flushIntervalMs: 2 });
    for (let i = 0; i < 120; i++) {
      if (i % 30 === 10) sink.failing = true;
      if (i % 30 === 20) sink.failing = false;
      log.record(makeRecord(i));
      if (i % 5 === 0) await new Promise((r) => setTimeout(r, 1));
    }
    await vi.waitFor(async () => {
      await log.flush();
      expect(log.spoolingSinks()).toEqual([]);
    });
    expect(dedupe(sink.ids)).toEqual(ids(0, 120));
  });

  it('spills to the spool past maxQueue while the sink is slow, then delivers everything in order', async () => {
    const sink = new FakeSink('slow');
    const release = sink.hold();
    const log = openLog({ sinks: [sink], batchSize: 5, maxQueue: 10 });
    for (const record of makeRecords(0, 5)) log.record(record);
    await vi.waitFor(() => expect(sink.attempts).toBe(1));
    // The first batch is stuck in the sink; 45 records pile up behind it, more than maxQueue.
    for (const record of makeRecords(5, 45)) log.record(record);
    release();
    await vi.waitFor(async () => expect(await auditCount('slow', 'spooled')).toBe(45));
    await vi.waitFor(async () => {
      await log.flush();
      expect(sink.ids).toEqual(ids(0, 50));
    });
    expect(await auditCount('slow', 'written')).toBe(5);
    expect(await auditCount('slow', 'replayed')).toBe(45);
  });

  it('delivers to every sink independently: one failing sink spools, the other gets every record', async () => {
    const up = new FakeSink('up');
    const down = new FakeSink('down');
    down.failing = true;
    const log = openLog({ sinks: [up, down], retryMinMs: 60_000, retryMaxMs: 60_000 });
    for (const record of makeRecords(0, 7)) log.record(record);
    await log.flush();
    expect(up.ids).toEqual(ids(0, 7));
    expect(await idsInFile(spoolPathFor(spoolPath, 'down'))).toEqual(ids(0, 7));
    expect(await idsInFile(spoolPathFor(spoolPath, 'up'))).toEqual([]);
  });

  it('close() writes the open batch and closes the sink', async () => {
    const sink = new FakeSink();
    const log = openLog({ sinks: [sink], batchSize: 100 });
    for (const record of makeRecords(0, 3)) log.record(record);
    await log.close();
    expect(sink.ids).toEqual(ids(0, 3));
    expect(sink.closed).toBe(true);
  });

  it('close() with the sink down spools everything without waiting for the retry backoff', async () => {
    const sink = new FakeSink();
    sink.failing = true;
    const log = openLog({ sinks: [sink], batchSize: 2, retryMinMs: 60_000, retryMaxMs: 60_000 });
    for (const record of makeRecords(0, 5)) log.record(record);
    await log.close();
    expect(await spooledIds(spoolPathFor(spoolPath, 'fake'))).toEqual(ids(0, 5));
  });

  it('close() replays the spool into a sink that is back, rather than leaving it for the next start', async () => {
    const sink = new FakeSink();
    sink.failing = true;
    const log = openLog({ sinks: [sink], retryMinMs: 60_000, retryMaxMs: 60_000 });
    for (const record of makeRecords(0, 5)) log.record(record);
    await log.flush();
    expect(log.spoolingSinks()).toEqual(['fake']);
    sink.failing = false;
    for (const record of makeRecords(5, 2)) log.record(record);
    await log.close();
    expect(sink.ids).toEqual(ids(0, 7));
    expect(await spooledIds(spoolPathFor(spoolPath, 'fake'))).toEqual([]);
  });

  it('after a restart, replays the spool of the previous run ahead of new records', async () => {
    const before = new FakeSink();
    before.failing = true;
    const first = openLog({ sinks: [before] });
    for (const record of makeRecords(0, 5)) first.record(record);
    await first.close();

    const after = new FakeSink();
    const second = openLog({ sinks: [after] });
    for (const record of makeRecords(5, 4)) second.record(record);
    await vi.waitFor(async () => {
      await second.flush();
      expect(after.ids).toEqual(ids(0, 9));
    });
  });

  it('replays a leftover spool at start even when no new record arrives', async () => {
    await writeFile(spoolPathFor(spoolPath, 'fake'), makeRecords(0, 3).map((r) => JSON.stringify(r) + '\n').join(''));
    const sink = new FakeSink();
    openLog({ sinks: [sink] });
    await vi.waitFor(() => expect(sink.ids).toEqual(ids(0, 3)));
  });

  it('at shutdown, with the sink and the spool both refusing, puts the records in the log line as objects', async () => {
    const logged: string[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void logged.push(line) });
    const blocker = join(dir, 'not-a-directory');
    await writeFile(blocker, 'x');
    const sink = new FakeSink();
    sink.failing = true;
    const log = openLog({ sinks: [sink], logger, spoolPath: join(blocker, 'spool.jsonl') });
    const records = [makeRecord(0), makeRecord(1, { user_id: 'u\n"x"', tokens_used: null })];
    for (const record of records) log.record(record);
    await log.close();
    const entry = logged.map((line) => JSON.parse(line) as { msg: string; records?: unknown }).find((e) => e.msg.includes('could neither be written nor spooled'));
    expect(entry?.records).toEqual(records);
  });

  it('record() after close() neither throws nor writes', async () => {
    const sink = new FakeSink('late');
    const log = openLog({ sinks: [sink] });
    await log.close();
    expect(() => log.record(makeRecord(0))).not.toThrow();
    expect(sink.ids).toEqual([]);
    expect(await auditCount('late', 'failed')).toBe(1);
  });

  it('with the real file sink: spools while the file cannot be written, then appends everything once it can', async () => {
    const blocker = join(dir, 'logs');
    await writeFile(blocker, 'a file where the directory should be');
    const sink = new FileAuditSink(join(blocker, 'audit.jsonl'));
    const log = openLog({ sinks: [sink], batchSize: 2 });
    for (const record of makeRecords(0, 5)) log.record(record);
    await log.flush();
    expect(log.spoolingSinks()).toEqual(['file']);
    await rm(blocker);
    for (const record of makeRecords(5, 2)) log.record(record);
    await vi.waitFor(async () => {
      await log.flush();
      expect(await idsInFile(join(blocker, 'audit.jsonl'))).toEqual(ids(0, 7));
    });
  });
});
