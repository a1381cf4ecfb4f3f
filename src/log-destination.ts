// Where JSON log lines go: a file (log.file) or stdout, written in batches. Each line is
// copied into a byte chunk as it arrives, so what waits for the disk is compact bytes, and
// the line's string (a tree of concatenated pieces, as pino builds it) dies young. pino's
// default destination (sonic-boom) instead appends each line to a growing string and
// measures its byte length on every line, copying the whole pending batch per line: at
// thousands of lines a second that copying is the request path's largest allocator, and
// pending line strings swell the memory peak when many streams end at once (decision 0003
// has the measurements). Writes stay asynchronous (libuv thread pool) and in order: one
// write in flight at a time.
import { closeSync, mkdirSync, openSync, write as fsWrite, writeSync } from 'node:fs';
import { dirname } from 'node:path';

export interface BatchedLogDestinationOptions {
  /** A file to append to (created with its directory), or a file descriptor (1 = stdout). */
  target: string | number;
  /** Write once this many bytes are pending (and one write is not already running). */
  minBatchBytes?: number;
  /** Pending lines are written at least this often. */
  flushIntervalMs?: number;
  /** Where to say, once, that log lines are being lost (default: process.stderr). */
  onWriteError?: (error: NodeJS.ErrnoException) => void;
}

const RETRY_AFTER_EAGAIN_MS = 10;
/** UTF-8 takes at most 3 bytes per UTF-16 code unit. */
const MAX_UTF8_BYTES_PER_UNIT = 3;

// A process that exits without flushLogger() (process.exit() on a fatal error) still
// writes what is pending: one 'exit' listener for all open destinations.
const openDestinations = new Set<BatchedLogDestination>();
process.once('exit', () => {
  for (const destination of openDestinations) destination.flushSync();
});

export class BatchedLogDestination {
  private readonly fd: number;
  private readonly ownsFd: boolean;
  private readonly minBatchBytes: number;
  private readonly chunkBytes: number;
  private readonly onWriteError: (error: NodeJS.ErrnoException) => void;
  /** Filled chunks waiting for their write, oldest first. */
  private full: Buffer[] = [];
  /** Lines are appended at `used`; bytes before `sealedUpTo` are queued or written already. */
  private current: Buffer;
  private used = 0;
  private sealedUpTo = 0;
  private pendingBytes = 0;
  private writing = false;
  private reportedError = false;
  private flushWaiters: (() => void)[] = [];
  private readonly timer: NodeJS.Timeout;

  constructor(options: BatchedLogDestinationOptions) {
    if (typeof options.target === 'number') {
      this.fd = options.target;
      this.ownsFd = false;
    } else {
      mkdirSync(dirname(options.target), { recursive: true });
      this.fd = openSync(options.target, 'a');
      this.ownsFd = true;
    }
    this.minBatchBytes = options.minBatchBytes ?? 65_536;
    this.chunkBytes = Math.max(4 * this.minBatchBytes, 65_536);
    this.current = Buffer.allocUnsafe(this.chunkBytes);
    this.onWriteError =
      options.onWriteError ?? ((error) => process.stderr.write(`agent-gateway: log lines lost: cannot write the log (${error.code ?? error.message})\n`));
    this.timer = setInterval(() => {
      if (!this.writing && this.pendingBytes > 0) this.writeNext();
    }, options.flushIntervalMs ?? 250);
    this.timer.unref();
    openDestinations.add(this);
  }

  /** pino's stream interface: one complete line, newline included. */
  write(line: string): boolean {
    const room = line.length * MAX_UTF8_BYTES_PER_UNIT;
    if (room > this.chunkBytes) {
      // A line longer than a chunk travels on its own, behind what came before it.
      this.sealCurrent();
      const bytes = Buffer.from(line);
      this.full.push(bytes);
      this.pendingBytes += bytes.length;
      return this.afterAppend();
    }
    if (this.chunkBytes - this.used < room) {
      this.sealCurrent();
      // A new chunk once this one is used up (every few batches); the old one is released
      // by the writes of its slices.
      this.current = Buffer.allocUnsafe(this.chunkBytes);
      this.used = 0;
      this.sealedUpTo = 0;
    }
    const written = this.current.write(line, this.used);
    this.used += written;
    this.pendingBytes += written;
    return this.afterAppend();
  }

  /** Calls back once every line written so far has reached the file (pino's logger.flush). */
  flush(callback?: (error?: Error) => void): void {
    if (!this.writing && this.pendingBytes === 0) {
      callback?.();
      return;
    }
    if (callback) this.flushWaiters.push(callback);
    if (!this.writing) this.writeNext();
  }

  /** For the very end of a process only: writes what is pending, blocking. */
  flushSync(): void {
    this.sealCurrent();
    const chunks = this.full;
    this.full = [];
    this.pendingBytes = 0;
    try {
      for (const chunk of chunks) {
        let offset = 0;
        while (offset < chunk.length) offset += writeSync(this.fd, chunk, offset);
      }
    } catch (error) {
      this.reportOnce(error as NodeJS.ErrnoException);
    }
  }

  end(): void {
    openDestinations.delete(this);
    clearInterval(this.timer);
    this.flushSync();
    if (this.ownsFd) closeSync(this.fd);
  }

  private afterAppend(): boolean {
    if (!this.writing && this.pendingBytes >= this.minBatchBytes) this.writeNext();
    return true;
  }

  /** Queues the current chunk's unsent lines; new lines go on after them in the same chunk. */
  private sealCurrent(): void {
    if (this.used === this.sealedUpTo) return;
    this.full.push(this.current.subarray(this.sealedUpTo, this.used));
    this.sealedUpTo = this.used;
  }

  /** Writes the oldest pending bytes: a queued chunk, or what the current one holds. */
  private writeNext(): void {
    if (this.full.length === 0) this.sealCurrent();
    const chunk = this.full.shift();
    if (!chunk) return;
    this.writing = true;
    this.pendingBytes -= chunk.length;
    this.writeFrom(chunk, 0);
  }

  private writeFrom(buffer: Buffer, offset: number): void {
    fsWrite(this.fd, buffer, offset, buffer.length - offset, null, (error, written) => {
      if (error) {
        // stdout as a non-blocking pipe whose reader is behind: wait and go on.
        if (error.code === 'EAGAIN') {
          setTimeout(() => this.writeFrom(buffer, offset), RETRY_AFTER_EAGAIN_MS).unref();
          return;
        }
        this.reportOnce(error);
      } else if (offset + written < buffer.length) {
        this.writeFrom(buffer, offset + written);
        return;
      }
      this.afterWrite();
    });
  }

  private afterWrite(): void {
    this.writing = false;
    if (this.pendingBytes > 0 && (this.pendingBytes >= this.minBatchBytes || this.flushWaiters.length > 0 || this.full.length > 0)) {
      this.writeNext();
      return;
    }
    const waiters = this.flushWaiters;
    this.flushWaiters = [];
    for (const waiter of waiters) waiter();
  }

  private reportOnce(error: NodeJS.ErrnoException): void {
    if (this.reportedError) return;
    this.reportedError = true;
    this.onWriteError(error);
  }
}
