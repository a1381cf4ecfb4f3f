import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { toAuditLine, type AuditRecord } from '../../../src/audit/audit-record.js';
import { AuditSpool, spoolPathFor } from '../../../src/audit/audit-spool.js';
import { silentLogger } from '../../../src/logger.js';
import { idOfLine, makeLines, makeRecord, makeRecords } from '../../helpers/audit-records.js';
import { fileExists, tempDir } from '../../helpers/files.js';

const line = (record: AuditRecord): string => `${JSON.stringify(record)}\n`;

describe('spoolPathFor', () => {
  it('puts the sink name before the extension, beside the configured path', () => {
    expect(spoolPathFor('var/audit-spool.jsonl', 'redis')).toBe('var/audit-spool.redis.jsonl');
    expect(spoolPathFor('/srv/spool', 'file')).toBe('/srv/spool.file');
  });
});

describe('AuditSpool', () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  let path: string;
  let spool: AuditSpool;

  beforeEach(async () => {
    ({ dir, cleanup } = await tempDir());
    path = join(dir, 'nested', 'spool.jsonl');
    spool = new AuditSpool(path, silentLogger);
  });
  afterEach(async () => {
    await spool.close();
    await cleanup();
  });

  async function replayAll(batchSize = 100): Promise<{ ids: string[]; batches: number[] }> {
    const ids: string[] = [];
    const batches: number[] = [];
    const result = await spool.replay(
      async (records) => {
        batches.push(records.length);
        ids.push(...records.map(idOfLine));
      },
      { batchSize },
    );
    expect(result.done).toBe(true);
    return { ids, batches };
  }

  it('replays appended batches in order, in batches of at most batchSize, then removes its files', async () => {
    await spool.append(makeLines(0, 4));
    await spool.append(makeLines(4, 3));
    expect(await spool.hasPending()).toBe(true);
    const { ids, batches } = await replayAll(3);
    expect(ids).toEqual(makeRecords(0, 7).map((r) => r.id));
    expect(batches).toEqual([3, 3, 1]);
    expect(await spool.hasPending()).toBe(false);
    expect(await fileExists(path)).toBe(false);
    expect(await fileExists(spool.replayingPath)).toBe(false);
  });

  it('round-trips records exactly (nulls, numbers, escaped newlines)', async () => {
    const record = makeRecord(1, { tokens_used: null, upstream_latency_ms: null, user_id: 'u\n"x"' });
    await spool.append([toAuditLine(record)]);
    const got: AuditRecord[] = [];
    await spool.replay(async (lines) => void got.push(...lines.map((l) => JSON.parse(l) as AuditRecord)), { batchSize: 10 });
    expect(got).toEqual([record]);
  });

  it('skips a torn last line left by a crash mid-append, and keeps the whole lines before it', async () => {
    const good = makeRecords(0, 3);
    await mkdir(join(dir, 'nested'));
    await writeFile(path, good.map(line).join('') + '{"id":"req-torn","ts":"2023-');
    const { ids } = await replayAll();
    expect(ids).toEqual(good.map((r) => r.id));
  });

  it('keeps a last record that was written whole but lost only its newline', async () => {
    const good = makeRecords(0, 2);
    await mkdir(join(dir, 'nested'));
    await writeFile(path, good.map(line).join('').slice(0, -1));
    const { ids } = await replayAll();
    expect(ids).toEqual(good.map((r) => r.id));
  });

  it('starts the next append on a fresh line after a torn tail, so the new record is not glued to it', async () => {
    await mkdir(join(dir, 'nested'));
    await writeFile(path, line(makeRecord(0)) + '{"id":"req-torn","st');
    await spool.append([toAuditLine(makeRecord(1))]);
    const { ids } = await replayAll();
    expect(ids).toEqual([makeRecord(0).id, makeRecord(1).id]);
  });

  it('skips unreadable lines in the middle and goes on', async () => {
    await mkdir(join(dir, 'nested'));
    await writeFile(path, line(makeRecord(0)) + 'not json\n' + '{"no":"id"}\n' + line(makeRecord(1)));
    const { ids } = await replayAll();
    expect(ids).toEqual([makeRecord(0).id, makeRecord(1).id]);
  });

  it('replays a leftover .replaying file (interrupted replay) before the spool itself', async () => {
    await spool.append(makeLines(10, 2));
    await writeFile(spool.replayingPath, makeRecords(0, 3).map(line).join(''));
    const { ids } = await replayAll();
    expect(ids).toEqual([...makeRecords(0, 3), ...makeRecords(10, 2)].map((r) => r.id));
  });

  it('keeps its place when the consumer fails: the failed batch comes first next time, delivered ones do not repeat', async () => {
    await spool.append(makeLines(0, 10));
    const delivered: string[] = [];
    let calls = 0;
    const first = await spool.replay(
      async (records) => {
        calls++;
        if (calls === 3) throw new Error('sink down');
        delivered.push(...records.map(idOfLine));
      },
      { batchSize: 3 },
    );
    expect(first.done).toBe(false);
    expect(first.replayed).toBe(6);
    expect(first.error).toBeInstanceOf(Error);
    expect(await spool.hasPending()).toBe(true);
    const rest = await replayAll(3);
    expect([...delivered, ...rest.ids]).toEqual(makeRecords(0, 10).map((r) => r.id));
  });

  it('does not lose records appended while a replay is running; they follow the replayed ones', async () => {
    await spool.append(makeLines(0, 6));
    const seen: string[] = [];
    const appends: Promise<void>[] = [];
    let next = 6;
    await spool.replay(
      async (records) => {
        seen.push(...records.map(idOfLine));
        // Appends race with the replay (not awaited here), as the log's writes would.
        if (next < 12) {
          appends.push(spool.append(makeLines(next, 2)));
          next += 2;
        }
        await new Promise((r) => setTimeout(r, 1));
      },
      { batchSize: 2 },
    );
    await Promise.all(appends);
    const rest = await replayAll(2);
    expect([...seen, ...rest.ids]).toEqual(makeRecords(0, 12).map((r) => r.id));
  });

  it('stops between batches when shouldStop says so, and resumes there', async () => {
    await spool.append(makeLines(0, 6));
    const seen: string[] = [];
    const result = await spool.replay(async (records) => void seen.push(...records.map(idOfLine)), {
      batchSize: 2,
      shouldStop: () => seen.length >= 4,
    });
    expect(result).toEqual({ done: false, replayed: 4 });
    const rest = await replayAll(2);
    expect([...seen, ...rest.ids]).toEqual(makeRecords(0, 6).map((r) => r.id));
  });

  it('reads lines that span its read buffer (large spools)', async () => {
    const big = Array.from({ length: 300 }, (_, i) => makeRecord(i, { client_ip: 'x'.repeat(500) }));
    await spool.append(big.map(toAuditLine));
    const { ids } = await replayAll(64);
    expect(ids).toEqual(big.map((r) => r.id));
  });

  it('writes each append to disk before resolving', async () => {
    await spool.append(makeLines(0, 2));
    const text = await readFile(path, 'utf8');
    expect(text.trimEnd().split('\n')).toHaveLength(2);
  });
});
