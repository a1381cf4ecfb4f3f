// The local spool of one sink: records that sink could not take yet, as JSON Lines, in the
// order they must reach it. Two files:
//   <path>            appended to (each batch written whole, then fdatasync'd), and
//   <path>.replaying  being replayed; no one writes to it any more.
// Replay renames <path> to <path>.replaying under the same lock as appends, so records
// appended while a replay runs land in a fresh <path> and are replayed after it; a
// leftover .replaying from a crash is replayed first. A line torn by a crash mid-append
// is skipped, and the next append starts on a new line so it cannot glue onto it.
import { openIfExists } from '../files.js';
import { mkdir, open, rename, stat, unlink, type FileHandle } from 'node:fs/promises';
import { dirname, join, parse } from 'node:path';
import type { Logger } from '../logger.js';
import type { AuditLine } from './audit-record.js';
import { toJsonLines } from './file-audit-sink.js';

const READ_CHUNK_BYTES = 64 * 1024;
const NEWLINE = 0x0a;

/** Where the spool of one sink lives: "var/audit-spool.jsonl" + "redis" → "var/audit-spool.redis.jsonl". */
export function spoolPathFor(configuredPath: string, sinkName: string): string {
  const { dir, name, ext } = parse(configuredPath);
  return join(dir, `${name}.${sinkName}${ext}`);
}

export interface SpoolReplayOptions {
  /** Most records handed to the consumer at once. */
  batchSize: number;
  /** Asked between batches; when it says stop, replay returns with its progress kept. */
  shouldStop?: () => boolean;
}

export interface SpoolReplayResult {
  /** True when both spool files were empty at the end (nothing left to replay). */
  done: boolean;
  /** Records the consumer accepted during this call. */
  replayed: number;
  /** Set when the consumer threw; that batch is still in the spool and is replayed next time. */
  error?: unknown;
}

interface ReadBatch {
  lines: AuditLine[];
  nextOffset: number;
  eof: boolean;
}

export class AuditSpool {
  readonly replayingPath: string;
  private appendHandle: FileHandle | undefined;
  private replayHandle: FileHandle | undefined;
  /** Bytes of .replaying already delivered in this process, so a retried replay resumes there. */
  private replayOffset = 0;
  private replaying = false;
  /** Serialises appends with the rename that starts a replay round. */
  private lock: Promise<unknown> = Promise.resolve();
  private readonly readBuffer = Buffer.allocUnsafe(READ_CHUNK_BYTES);

  constructor(
    readonly path: string,
    private readonly logger: Logger,
  ) {
    this.replayingPath = `${path}.replaying`;
  }

  /** Appends the batch as whole lines and resolves only once it is on disk (fdatasync). */
  append(lines: readonly AuditLine[]): Promise<void> {
    if (lines.length === 0) return Promise.resolve();
    return this.locked(async () => {
      const handle = this.appendHandle ?? (await this.openForAppend());
      try {
        await handle.appendFile(toJsonLines(lines));
        await handle.datasync();
      } catch (error) {
        // A failed append may have left a torn line: reopen (and re-check the tail) next time.
        await this.closeAppendHandle();
        throw error;
      }
    });
  }

  /** True when either spool file holds anything. */
  async hasPending(): Promise<boolean> {
    return (await sizeOf(this.replayingPath)) > 0 || (await sizeOf(this.path)) > 0;
  }

  /**
   * Hands the spooled records to `consumer` in order, in batches, deleting what was
   * delivered. Returns when the spool is empty, when `shouldStop` says so, or when the
   * consumer throws (that batch stays first in line). One replay at a time.
   */
  async replay(consumer: (lines: AuditLine[]) => Promise<void>, options: SpoolReplayOptions): Promise<SpoolReplayResult> {
    if (this.replaying) throw new Error('audit spool replay already in progress');
    this.replaying = true;
    let replayed = 0;
    try {
      for (;;) {
        if (options.shouldStop?.()) return { done: false, replayed };
        const handle = this.replayHandle ?? (await this.openReplaying());
        if (!handle) return { done: true, replayed };
        const batch = await this.readBatch(handle, this.replayOffset, options.batchSize);
        if (batch.lines.length > 0) {
          try {
            await consumer(batch.lines);
          } catch (error) {
            return { done: false, replayed, error };
          }
          replayed += batch.lines.length;
        }
        this.replayOffset = batch.nextOffset;
        if (batch.eof) await this.finishReplaying();
      }
    } finally {
      this.replaying = false;
    }
  }

  async close(): Promise<void> {
    await this.locked(() => this.closeAppendHandle());
    const handle = this.replayHandle;
    this.replayHandle = undefined;
    await handle?.close();
  }

  private locked<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.lock.then(fn, fn);
    this.lock = run.catch(() => {});
    return run;
  }

  private async openForAppend(): Promise<FileHandle> {
    await mkdir(dirname(this.path), { recursive: true });
    // a+ rather than a: the tail check below needs to read the last byte.
    const handle = await open(this.path, 'a+');
    try {
      const { size } = await handle.stat();
      if (size > 0) {
        const last = Buffer.alloc(1);
        await handle.read(last, 0, 1, size - 1);
        if (last[0] !== NEWLINE) {
          this.logger.warn({ spool: this.path }, 'audit spool ends in a torn line (earlier crash); it will be skipped on replay');
          await handle.appendFile('\n');
        }
      }
    } catch (error) {
      await handle.close().catch(() => {});
      throw error;
    }
    this.appendHandle = handle;
    return handle;
  }

  private async closeAppendHandle(): Promise<void> {
    const handle = this.appendHandle;
    this.appendHandle = undefined;
    await handle?.close().catch(() => {});
  }

  /** Opens .replaying, first renaming the append file to it when none is left over. Undefined: nothing to replay. */
  private async openReplaying(): Promise<FileHandle | undefined> {
    let handle = await openIfExists(this.replayingPath);
    if (!handle) {
      const rotated = await this.locked(async () => {
        if ((await sizeOf(this.path)) === 0) return false;
        await this.closeAppendHandle();
        await rename(this.path, this.replayingPath);
        return true;
      });
      if (!rotated) return undefined;
      handle = await openIfExists(this.replayingPath);
      if (!handle) return undefined;
    }
    this.replayHandle = handle;
    this.replayOffset = 0;
    return handle;
  }

  private async finishReplaying(): Promise<void> {
    const handle = this.replayHandle;
    this.replayHandle = undefined;
    this.replayOffset = 0;
    await handle?.close().catch(() => {});
    await unlink(this.replayingPath).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') throw error;
    });
  }

  /** Reads up to `max` records from `offset`; a last line with no newline (torn by a crash) is skipped. */
  private async readBatch(handle: FileHandle, offset: number, max: number): Promise<ReadBatch> {
    const lines: AuditLine[] = [];
    let carry: Buffer | undefined;
    let position = offset;
    let consumedTo = offset;
    for (;;) {
      const { bytesRead } = await handle.read(this.readBuffer, 0, READ_CHUNK_BYTES, position);
      if (bytesRead === 0) {
        if (carry && carry.length > 0) {
          // Written whole but the newline never made it: still a record, keep it.
          const text = carry.toString('utf8');
          if (isRecordLine(text)) lines.push(text);
          else this.logger.warn({ spool: this.replayingPath, bytes: carry.length }, 'skipping a torn last line in the audit spool (crash mid-append)');
        }
        return { lines, nextOffset: position, eof: true };
      }
      const chunk = this.readBuffer.subarray(0, bytesRead);
      const data = carry ? Buffer.concat([carry, chunk]) : chunk;
      const dataStart = position - (carry?.length ?? 0);
      position += bytesRead;
      let lineStart = 0;
      for (let newline = data.indexOf(NEWLINE, lineStart); newline !== -1; newline = data.indexOf(NEWLINE, lineStart)) {
        const line = this.readLine(data, lineStart, newline);
        lineStart = newline + 1;
        consumedTo = dataStart + lineStart;
        if (line !== undefined) lines.push(line);
        if (lines.length >= max) return { lines, nextOffset: consumedTo, eof: false };
      }
      // Copy: the read buffer is reused by the next read.
      carry = Buffer.from(data.subarray(lineStart));
    }
  }

  private readLine(data: Buffer, start: number, end: number): AuditLine | undefined {
    if (end === start) return undefined;
    const text = data.toString('utf8', start, end);
    if (isRecordLine(text)) return text;
    this.logger.warn({ spool: this.replayingPath, line: text.slice(0, 200) }, 'skipping an unreadable audit spool line');
    return undefined;
  }
}

/**
 * Whether a spool (or journal) line is a whole record, handed on as it is; false for a line
 * glued to a torn one or foreign content. Parsed only to check: replay is off the request path.
 */
export function isRecordLine(text: string): boolean {
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === 'object' && typeof (value as { id?: unknown }).id === 'string';
  } catch {
    return false;
  }
}

async function sizeOf(path: string): Promise<number> {
  try {
    return (await stat(path)).size;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw error;
  }
}

