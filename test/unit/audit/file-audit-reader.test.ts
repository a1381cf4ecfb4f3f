import { appendFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { followFile, readLastLines } from '../../../src/audit/file-audit-reader.js';
import { recordFilter } from '../../../src/audit/read-audit-records.js';
import { makeRecord } from '../../helpers/audit-records.js';
import { tempDir } from '../../helpers/files.js';

const keepAll = recordFilter(undefined);
const lineOf = (n: number, pad = 0): string => JSON.stringify(makeRecord(n, { client_ip: 'x'.repeat(pad) }));

describe('readLastLines', () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  let path: string;
  beforeEach(async () => {
    ({ dir, cleanup } = await tempDir());
    path = join(dir, 'audit.jsonl');
  });
  afterEach(() => cleanup());

  it('returns the last N lines oldest first, reading across chunk boundaries', async () => {
    // ~600 bytes per line × 500 lines: several 64 KiB chunks.
    const lines = Array.from({ length: 500 }, (_, i) => lineOf(i, 300 + (i % 7)));
    await writeFile(path, lines.join('\n') + '\n');
    expect((await readLastLines(path, 3, keepAll)).lines).toEqual(lines.slice(-3));
    expect((await readLastLines(path, 250, keepAll)).lines).toEqual(lines.slice(-250));
    expect((await readLastLines(path, 10_000, keepAll)).lines).toEqual(lines);
  });

  it('filters by key_id and still returns N matching lines', async () => {
    const lines = Array.from({ length: 40 }, (_, i) => lineOf(i));
    await writeFile(path, lines.join('\n') + '\n');
    const odd = (await readLastLines(path, 5, recordFilter('key_odd'))).lines.map((l) => JSON.parse(l).id);
    expect(odd).toEqual([31, 33, 35, 37, 39].map((n) => makeRecord(n).id));
  });

  it('leaves out a last line still being written, and points after the last complete line', async () => {
    const complete = [lineOf(0), lineOf(1)].join('\n') + '\n';
    await writeFile(path, complete + '{"id":"half');
    const result = await readLastLines(path, 10, keepAll);
    expect(result.lines).toEqual([lineOf(0), lineOf(1)]);
    expect(result.endOffset).toBe(Buffer.byteLength(complete));
  });

  it('skips lines that are not JSON objects', async () => {
    await writeFile(path, `${lineOf(0)}\n\nnot json\n${lineOf(1)}\n`);
    expect((await readLastLines(path, 10, keepAll)).lines).toEqual([lineOf(0), lineOf(1)]);
  });

  it('treats a missing file as empty', async () => {
    expect(await readLastLines(join(dir, 'none.jsonl'), 5, keepAll)).toEqual({ lines: [], endOffset: 0 });
  });
});

describe('followFile', () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  beforeEach(async () => ({ dir, cleanup } = await tempDir()));
  afterEach(() => cleanup());

  it('prints complete lines appended after the start offset, waiting for a half-written line to finish', async () => {
    const path = join(dir, 'audit.jsonl');
    await writeFile(path, `${lineOf(0)}\n`);
    const seen: string[] = [];
    const controller = new AbortController();
    const following = followFile(path, {
      fromOffset: Buffer.byteLength(`${lineOf(0)}\n`),
      accept: recordFilter('key_odd'),
      write: (line) => void seen.push(line),
      signal: controller.signal,
      pollIntervalMs: 10,
    });
    await appendFile(path, `${lineOf(1)}\n${lineOf(2)}\n`);
    const third = lineOf(3);
    await appendFile(path, third.slice(0, 20));
    await vi.waitFor(() => expect(seen).toEqual([lineOf(1)]));
    await appendFile(path, `${third.slice(20)}\n`);
    await vi.waitFor(() => expect(seen).toEqual([lineOf(1), lineOf(3)]));
    controller.abort();
    await following;
  });

  it('waits for a file that does not exist yet', async () => {
    const path = join(dir, 'later.jsonl');
    const seen: string[] = [];
    const controller = new AbortController();
    const following = followFile(path, { fromOffset: 0, accept: keepAll, write: (l) => void seen.push(l), signal: controller.signal, pollIntervalMs: 10 });
    await new Promise((r) => setTimeout(r, 30));
    await writeFile(path, `${lineOf(5)}\n`);
    await vi.waitFor(() => expect(seen).toEqual([lineOf(5)]));
    controller.abort();
    await following;
  });
});
