// Where JSON log lines go: a file (log.file) or stdout, written in batches. Lines are kept
// as an array and joined once per write. pino's default destination (sonic-boom) appends
// each line to a growing string and measures its byte length on every line, which copies
// the whole pending batch per line: at thousands of lines a second that copying was the
// largest allocator of the request path (docs/performance.md). Writes stay asynchronous
// (libuv thread pool) and in order: one write in flight at a time.
import { closeSync, mkdirSync, openSync, write as fsWrite, writeSync } from 'node:fs';
import { dirname } from 'node:path';

export interface BatchedLogDestinationOptions {
  /** A file to append to (created with its directory), or a file descriptor (1 = stdout). */
  target: string | number;
  /** Write once this many characters are pending (and one write is not already running). */
  minBatchChars?: number;
  /** Pending lines are written at least this often. */
  flushIntervalMs?: number;
  /** Where to say, once, that log lines are being lost (default: process.stderr). */
  onWriteError?: (error: NodeJS.ErrnoException) => void;
}

const RETRY_AFTER_EAGAIN_MS = 10;

// A process that exits without flushLogger() (process.exit() on a fatal error) still
// writes what is pending: one 'exit' listener for all open destinations.
const openDestinations = new Set<BatchedLogDestination>();
process.once('exit', () => {
  for (const destination of openDestinations) destination.flushSync();
});

export class BatchedLogDestination {
  private readonly fd: number;
  private readonly ownsFd: boolean;
  private readonly minBatchChars: number;
  private readonly onWriteError: (error: NodeJS.ErrnoException) => void;
  private lines: string[] = [];
  private pendingChars = 0;
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
    this.minBatchChars = options.minBatchChars ?? 16_384;
    this.onWriteError =
      options.onWriteError ?? ((error) => process.stderr.write(`agent-gateway: log lines lost: cannot write the log (${error.code ?? error.message})\n`));
    this.timer = setInterval(() => {
      if (!this.writing && this.pendingChars > 0) this.writeBatch();
    }, options.flushIntervalMs ?? 250);
    this.timer.unref();
    openDestinations.add(this);
  }

  /** pino's stream interface: one complete line, newline included. */
  write(line: string): boolean {
    this.lines.push(line);
    this.pendingChars += line.length;
    if (!this.writing && this.pendingChars >= this.minBatchChars) this.writeBatch();
    return true;
  }

  /** Calls back once every line written so far has reached the file (pino's logger.flush). */
  flush(callback?: (error?: Error) => void): void {
    if (!this.writing && this.pendingChars === 0) {
      callback?.();
      return;
    }
    if (callback) this.flushWaiters.push(callback);
    if (!this.writing) this.writeBatch();
  }

  /** For the very end of a process only: writes what is pending, blocking. */
  flushSync(): void {
    if (this.pendingChars === 0) return;
    const buffer = this.takeBatch();
    try {
      let offset = 0;
      while (offset < buffer.length) offset += writeSync(this.fd, buffer, offset);
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

  private takeBatch(): Buffer {
    const buffer = Buffer.from(this.lines.join(''));
    this.lines = [];
    this.pendingChars = 0;
    return buffer;
  }

  private writeBatch(): void {
    this.writing = true;
    this.writeFrom(this.takeBatch(), 0);
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
    if (this.pendingChars > 0 && (this.pendingChars >= this.minBatchChars || this.flushWaiters.length > 0)) {
      this.writeBatch();
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
