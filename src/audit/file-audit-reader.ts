// Reads the JSON Lines audit file for `audit tail`: the last N matching lines (reading
// backwards in chunks, so a large file costs only its tail), then new lines as they are
// appended (polling the size; fs.watch is not reliable across platforms and filesystems).
import { openIfExists } from '../files.js';
import { stat, type FileHandle } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';

const CHUNK_BYTES = 64 * 1024;
const NEWLINE = 0x0a;

/** Returns the line to print, or undefined to skip it. */
export type LineFilter = (line: string) => string | undefined;

export interface LastLines {
  /** Oldest first. */
  lines: string[];
  /** Byte offset just after the last complete line: where following starts. */
  endOffset: number;
}

/** The last `limit` complete lines that `accept` keeps; a missing file has none. */
export async function readLastLines(path: string, limit: number, accept: LineFilter): Promise<LastLines> {
  const handle = await openIfExists(path);
  if (!handle) return { lines: [], endOffset: 0 };
  try {
    const { size } = await handle.stat();
    const endOffset = await findEndOfLastLine(handle, size);
    const reversed: string[] = [];
    let position = endOffset;
    let rest: Buffer = Buffer.alloc(0);
    while (position > 0 && reversed.length < limit) {
      const length = Math.min(CHUNK_BYTES, position);
      position -= length;
      const chunk = await readAt(handle, position, length);
      // buf ends at a line boundary; its first line may continue in the chunk before it.
      const buf = rest.length > 0 ? Buffer.concat([chunk, rest]) : chunk;
      let end = buf.length;
      for (let nl = previousNewline(buf, end); nl !== -1 && reversed.length < limit; nl = previousNewline(buf, end)) {
        const kept = accept(buf.toString('utf8', nl + 1, end - 1));
        if (kept !== undefined) reversed.push(kept);
        end = nl + 1;
      }
      rest = buf.subarray(0, end);
      if (position === 0 && end > 0 && reversed.length < limit) {
        const kept = accept(buf.toString('utf8', 0, end - 1));
        if (kept !== undefined) reversed.push(kept);
      }
    }
    return { lines: reversed.reverse(), endOffset };
  } finally {
    await handle.close();
  }
}

export interface FollowFileOptions {
  fromOffset: number;
  accept: LineFilter;
  write: (line: string) => void | Promise<void>;
  signal: AbortSignal;
  pollIntervalMs: number;
}

/** Prints complete lines appended after `fromOffset` until the signal aborts. Starts over if the file is truncated or replaced. */
export async function followFile(path: string, options: FollowFileOptions): Promise<void> {
  let offset = options.fromOffset;
  let inode: number | undefined;
  const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
  while (!options.signal.aborted) {
    const info = await stat(path).catch(() => undefined);
    if (info) {
      if ((inode !== undefined && info.ino !== inode) || info.size < offset) offset = 0;
      inode = info.ino;
      if (info.size > offset) offset = await emitNewLines(path, offset, info.size, buffer, options);
    }
    try {
      await sleep(options.pollIntervalMs, undefined, { signal: options.signal });
    } catch {
      return; // aborted
    }
  }
}

async function emitNewLines(path: string, offset: number, size: number, buffer: Buffer, options: FollowFileOptions): Promise<number> {
  const handle = await openIfExists(path);
  if (!handle) return offset;
  try {
    let carry: Buffer = Buffer.alloc(0);
    let position = offset;
    let consumed = offset;
    while (position < size && !options.signal.aborted) {
      const { bytesRead } = await handle.read(buffer, 0, Math.min(CHUNK_BYTES, size - position), position);
      if (bytesRead === 0) break;
      const data = carry.length > 0 ? Buffer.concat([carry, buffer.subarray(0, bytesRead)]) : buffer.subarray(0, bytesRead);
      const dataStart = position - carry.length;
      position += bytesRead;
      let start = 0;
      for (let nl = data.indexOf(NEWLINE, start); nl !== -1; nl = data.indexOf(NEWLINE, start)) {
        const kept = options.accept(data.toString('utf8', start, nl));
        start = nl + 1;
        consumed = dataStart + start;
        if (kept !== undefined) await options.write(kept);
      }
      // A line still being written stays for the next poll.
      carry = Buffer.from(data.subarray(start));
    }
    return consumed;
  } finally {
    await handle.close();
  }
}

/** Index of the newline that ends the line before the one ending at `end` (exclusive, after its newline), or -1. */
function previousNewline(buf: Buffer, end: number): number {
  // Buffer.lastIndexOf treats a negative offset as counting from the end: guard it.
  return end - 2 < 0 ? -1 : buf.lastIndexOf(NEWLINE, end - 2);
}

async function findEndOfLastLine(handle: FileHandle, size: number): Promise<number> {
  let position = size;
  while (position > 0) {
    const length = Math.min(CHUNK_BYTES, position);
    position -= length;
    const chunk = await readAt(handle, position, length);
    const nl = chunk.lastIndexOf(NEWLINE);
    if (nl !== -1) return position + nl + 1;
  }
  return 0;
}

async function readAt(handle: FileHandle, position: number, length: number): Promise<Buffer> {
  const buffer = Buffer.alloc(length);
  let filled = 0;
  while (filled < length) {
    const { bytesRead } = await handle.read(buffer, filled, length - filled, position + filled);
    if (bytesRead === 0) break;
    filled += bytesRead;
  }
  return buffer.subarray(0, filled);
}

