// Records last_used_at off the request path: a request only notes "this hash, now" in a
// map; a timer flushes the map in one batch, so each key costs at most one store write per
// flush interval however hot it is. Store errors are logged, never thrown.
import type { Logger } from '../logger.js';
import type { KeyStore } from '../keys/key-store.js';

export interface LastUsedTrackerOptions {
  store: Pick<KeyStore, 'touchLastUsed'>;
  logger: Logger;
  flushIntervalMs?: number;
  /** Start the flush timer (default true); tests call flush() by hand. */
  autoFlush?: boolean;
  /** Bound on pending entries while the store is unreachable. */
  maxPending?: number;
}

export const DEFAULT_LAST_USED_FLUSH_INTERVAL_MS = 5_000;

export class LastUsedTracker {
  private pending = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  private readonly maxPending: number;

  constructor(private readonly options: LastUsedTrackerOptions) {
    this.maxPending = options.maxPending ?? 100_000;
    if (options.autoFlush !== false) {
      this.timer = setInterval(() => void this.flush(), options.flushIntervalMs ?? DEFAULT_LAST_USED_FLUSH_INTERVAL_MS);
      this.timer.unref();
    }
  }

  get pendingCount(): number {
    return this.pending.size;
  }

  /** Hot path: one Map write. */
  touch(hash: string, atMs: number): void {
    if (this.pending.size >= this.maxPending && !this.pending.has(hash)) return;
    this.pending.set(hash, atMs);
  }

  /** Writes everything pending; resolves once written or logged as failed. */
  flush(): Promise<void> {
    if (this.flushing) return this.flushing;
    if (this.pending.size === 0) return Promise.resolve();
    const batch = this.pending;
    this.pending = new Map();
    this.flushing = this.write(batch).finally(() => {
      this.flushing = undefined;
    });
    return this.flushing;
  }

  private async write(batch: Map<string, number>): Promise<void> {
    const entries = [...batch].map(([hash, atMs]) => ({ hash, atIso: new Date(atMs).toISOString() }));
    try {
      await this.options.store.touchLastUsed(entries);
    } catch (error) {
      this.options.logger.warn({ err: error, keys: entries.length }, 'cannot record last_used_at; will retry');
      // Put the batch back unless a newer touch arrived meanwhile.
      for (const [hash, atMs] of batch) {
        const newer = this.pending.get(hash);
        if ((newer === undefined || newer < atMs) && this.pending.size < this.maxPending) this.pending.set(hash, atMs);
      }
    }
  }

  /** Stops the timer and writes what is left. */
  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.flushing;
    await this.flush();
  }
}
