import { describe, expect, it } from 'vitest';
import { LastUsedTracker } from '../../../src/auth/last-used-tracker.js';
import type { LastUsedEntry } from '../../../src/keys/key-store.js';
import { silentLogger } from '../../../src/logger.js';

describe('LastUsedTracker', () => {
  it('batches touches: one entry per key per flush, with the latest time', async () => {
    const writes: LastUsedEntry[][] = [];
    const tracker = new LastUsedTracker({ store: { touchLastUsed: async (e) => void writes.push([...e]) }, logger: silentLogger, autoFlush: false });
    tracker.touch('a', Date.parse('2024-01-01T00:00:00.000Z'));
    tracker.touch('a', Date.parse('2024-01-01T00:00:01.000Z'));
    tracker.touch('b', Date.parse('2024-01-01T00:00:02.000Z'));
    expect(writes).toHaveLength(0);
    await tracker.flush();
    expect(writes).toEqual([
      [
        { hash: 'a', atIso: '2024-01-01T00:00:01.000Z' },
        { hash: 'b', atIso: '2024-01-01T00:00:02.000Z' },
      ],
    ]);
    await tracker.flush();
    expect(writes).toHaveLength(1);
  });

  it('logs store errors instead of throwing and retries the batch on the next flush', async () => {
    let fail = true;
    const writes: LastUsedEntry[][] = [];
    const warnings: unknown[] = [];
    const logger = { ...silentLogger, warn: (...args: unknown[]) => void warnings.push(args) } as unknown as typeof silentLogger;
    const tracker = new LastUsedTracker({
      store: {
        touchLastUsed: async (e) => {
          if (fail) throw new Error('down');
          writes.push([...e]);
        },
      },
      logger,
      autoFlush: false,
    });
    tracker.touch('a', 1000);
    await expect(tracker.flush()).resolves.toBeUndefined();
    expect(warnings).toHaveLength(1);
    expect(tracker.pendingCount).toBe(1);
    fail = false;
    await tracker.flush();
    expect(writes).toEqual([[{ hash: 'a', atIso: new Date(1000).toISOString() }]]);
  });

  it('flushes on its timer and on close', async () => {
    const writes: LastUsedEntry[][] = [];
    const tracker = new LastUsedTracker({ store: { touchLastUsed: async (e) => void writes.push([...e]) }, logger: silentLogger, flushIntervalMs: 20 });
    tracker.touch('a', 1);
    await new Promise((r) => setTimeout(r, 80));
    expect(writes).toHaveLength(1);
    tracker.touch('b', 2);
    await tracker.close();
    expect(writes).toHaveLength(2);
  });
});
