// The batched log destination: every line arrives, once, in order — through a file, through
// a pipe whose reader is slow (EAGAIN), across flush() and at the end — and a failing
// target is reported once without throwing into the request path.
import { execFileSync } from 'node:child_process';
import { closeSync, constants, mkdtempSync, openSync, readFileSync, readSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BatchedLogDestination } from '../../src/log-destination.js';

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'agentgw-logdest-'));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const line = (i: number) => `{"level":"info","n":${i},"pad":"${'x'.repeat(i % 200)}"}\n`;
const flushed = (destination: BatchedLogDestination) => new Promise<void>((resolve) => destination.flush(() => resolve()));

/** Writes every line, letting writes complete every `yieldEvery` lines as a server's event loop does, then flushes. */
async function writeAll(destination: BatchedLogDestination, lines: string[], yieldEvery: number): Promise<void> {
  for (let i = 0; i < lines.length; i++) {
    destination.write(lines[i]!);
    if (i % yieldEvery === 0) await new Promise((resolve) => setImmediate(resolve));
  }
  await flushed(destination);
}

describe('BatchedLogDestination', () => {
  it('writes every line once and in order to a file it creates, directory included', async () => {
    const path = join(tempDir(), 'nested', 'dir', 'gateway.log');
    const destination = new BatchedLogDestination({ target: path, minBatchBytes: 4096 });
    const expected = Array.from({ length: 20_000 }, (_, i) => line(i));
    await writeAll(destination, expected, 997);
    expect(readFileSync(path, 'utf8')).toBe(expected.join(''));
    destination.end();
  });

  it('keeps multi-byte characters and lines longer than a chunk whole, in order', async () => {
    const path = join(tempDir(), 'utf8.log');
    const destination = new BatchedLogDestination({ target: path, minBatchBytes: 1024 });
    // é is 2 bytes, 😀 is 4 (2 UTF-16 units), 中 is 3: lines straddle chunk ends at any byte.
    const expected = Array.from({ length: 3_000 }, (_, i) => {
      const text = i % 500 === 7 ? 'x'.repeat(70_000) : ['é', '😀', '中', 'a'][i % 4]!.repeat(i % 97);
      return `{"n":${i},"text":"${text}"}\n`;
    });
    await writeAll(destination, expected, 101);
    expect(readFileSync(path, 'utf8')).toBe(expected.join(''));
    destination.end();
  });

  it('flush() calls back at once when nothing is pending, and after the write otherwise', async () => {
    const path = join(tempDir(), 'a.log');
    const destination = new BatchedLogDestination({ target: path, minBatchBytes: 1_000_000 });
    await flushed(destination);
    destination.write('{"one":1}\n');
    expect(readFileSync(path, 'utf8')).toBe('');
    await flushed(destination);
    expect(readFileSync(path, 'utf8')).toBe('{"one":1}\n');
    destination.end();
  });

  it('writes pending lines on the flush interval without being asked', async () => {
    const path = join(tempDir(), 'b.log');
    const destination = new BatchedLogDestination({ target: path, minBatchBytes: 1_000_000, flushIntervalMs: 20 });
    destination.write('{"tick":1}\n');
    const deadline = Date.now() + 2_000;
    while (readFileSync(path, 'utf8') === '' && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(readFileSync(path, 'utf8')).toBe('{"tick":1}\n');
    destination.end();
  });

  it('end() writes what is pending synchronously', () => {
    const path = join(tempDir(), 'c.log');
    const destination = new BatchedLogDestination({ target: path, minBatchBytes: 1_000_000 });
    destination.write('{"last":1}\n');
    destination.end();
    expect(readFileSync(path, 'utf8')).toBe('{"last":1}\n');
  });

  it('waits out a full non-blocking pipe (EAGAIN) and loses nothing', async () => {
    const fifo = join(tempDir(), 'pipe');
    execFileSync('mkfifo', [fifo]);
    const readFd = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
    const writeFd = openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK);
    const destination = new BatchedLogDestination({ target: writeFd, minBatchBytes: 8192 });
    const expected: string[] = [];
    // ~1 MB: far beyond a pipe's 64 KiB buffer, so writes hit EAGAIN until the reader drains.
    for (let i = 0; i < 8_000; i++) {
      expected.push(line(i));
      destination.write(line(i));
    }
    let received = '';
    const chunk = Buffer.alloc(65_536);
    const done = flushed(destination);
    let finished = false;
    void done.then(() => (finished = true));
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 2));
      try {
        const n = readSync(readFd, chunk, 0, chunk.length, null);
        received += chunk.subarray(0, n).toString('utf8');
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EAGAIN') throw error;
        if (finished) break;
      }
    }
    expect(finished).toBe(true);
    expect(received).toBe(expected.join(''));
    destination.end();
    closeSync(readFd);
    closeSync(writeFd);
  });

  it('reports a failing target once and never throws from write()', async () => {
    const path = join(tempDir(), 'ro.log');
    closeSync(openSync(path, 'w'));
    const readOnlyFd = openSync(path, 'r');
    const errors: string[] = [];
    const destination = new BatchedLogDestination({ target: readOnlyFd, minBatchBytes: 10, onWriteError: (error) => errors.push(error.code ?? '') });
    for (let i = 0; i < 50; i++) expect(destination.write(line(i))).toBe(true);
    await flushed(destination);
    destination.write(line(99));
    await flushed(destination);
    expect(errors).toEqual(['EBADF']);
    destination.end();
    closeSync(readOnlyFd);
  });
});
