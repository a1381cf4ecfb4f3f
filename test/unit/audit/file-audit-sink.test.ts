import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { toAuditLine } from '../../../src/audit/audit-record.js';
import { FileAuditSink } from '../../../src/audit/file-audit-sink.js';
import { makeLines, makeRecord, makeRecords } from '../../helpers/audit-records.js';
import { tempDir } from '../../helpers/files.js';

describe('FileAuditSink', () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  beforeEach(async () => ({ dir, cleanup } = await tempDir()));
  afterEach(() => cleanup());

  it('creates the directory and appends one JSON object per line, batch after batch', async () => {
    const path = join(dir, 'var', 'deep', 'audit.jsonl');
    const sink = new FileAuditSink(path);
    await sink.write(makeLines(0, 2));
    await sink.write([toAuditLine(makeRecord(2, { user_id: 'line\nbreak' }))]);
    await sink.close();
    const lines = (await readFile(path, 'utf8')).split('\n');
    expect(lines.at(-1)).toBe('');
    expect(lines.slice(0, -1).map((l) => JSON.parse(l))).toEqual([...makeRecords(0, 2), makeRecord(2, { user_id: 'line\nbreak' })]);
  });

  it('appends to an existing file rather than replacing it', async () => {
    const path = join(dir, 'audit.jsonl');
    const first = new FileAuditSink(path);
    await first.write([toAuditLine(makeRecord(0))]);
    await first.close();
    const second = new FileAuditSink(path);
    await second.write([toAuditLine(makeRecord(1))]);
    await second.close();
    expect((await readFile(path, 'utf8')).trimEnd().split('\n')).toHaveLength(2);
  });

  it('throws when the file cannot be written', async () => {
    const sink = new FileAuditSink(dir); // a directory
    await expect(sink.write([toAuditLine(makeRecord(0))])).rejects.toThrow();
    await sink.close();
  });
});
