// The notifier's bounded queue and dedupe (docs/notifications.md "Delivery guarantees"):
// publish never throws or waits, a stuck outbox costs at most max_queue events (the rest are
// dropped and counted), a dedupe key publishes once, and event ids sort by time.
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../../src/logger.js';
import { metrics } from '../../../src/metrics/metrics.js';
import { BufferedNotifier } from '../../../src/notifications/buffered-notifier.js';
import { EVENT_ID_PATTERN, eventIdTimeMs, newEventId } from '../../../src/notifications/event-id.js';
import type { NotificationEvent } from '../../../src/notifications/notifier.js';
import { NO_NOTIFIER } from '../../../src/notifications/notifier.js';
import type { OutboxWriter } from '../../../src/notifications/outbox.js';
import { waitFor } from '../../helpers/wait.js';

const clock = { now: () => Date.now() };

async function droppedCount(): Promise<number> {
  return (await metrics.webhookDropped.get()).values.find((v) => v.labels.reason === 'queue_full')?.value ?? 0;
}

describe('BufferedNotifier', () => {
  it('keeps at most max_queue events while the outbox does not answer, dropping and counting the rest', async () => {
    const stuck: OutboxWriter = { append: () => new Promise(() => {}), claimOnce: () => Promise.resolve(true) };
    const notifier = new BufferedNotifier({ outbox: stuck, clock, logger: silentLogger, maxQueue: 10, wants: () => true });
    const before = await droppedCount();
    for (let i = 0; i < 100; i++) expect(notifier.publish('key.created', `key:k${i}`, { i })).toBeUndefined();
    expect(notifier.queued).toBe(10);
    expect((await droppedCount()) - before).toBe(90);
  });

  it('never throws at the caller, even when the outbox throws; events nobody wants are not queued', async () => {
    const broken: OutboxWriter = { append: () => Promise.reject(new Error('down')), claimOnce: () => Promise.reject(new Error('down')) };
    const notifier = new BufferedNotifier({ outbox: broken, clock, logger: silentLogger, maxQueue: 10, wants: (type) => type !== 'upstream.up' });
    notifier.publish('upstream.up', 'agent:a', {});
    expect(notifier.queued).toBe(0);
    notifier.publish('upstream.down', 'agent:a', {}, { dedupeKey: 'x', dedupeTtlMs: 1000 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(notifier.queued).toBe(1);
    NO_NOTIFIER.publish('key.created', 'key:k', {});
  });

  it('publishes a dedupe key once while its claim holds, and writes events in publication order', async () => {
    const written: NotificationEvent[] = [];
    const claimed = new Set<string>();
    const outbox: OutboxWriter = {
      append: (events) => {
        written.push(...events);
        return Promise.resolve();
      },
      claimOnce: (key) => Promise.resolve(claimed.has(key) ? false : (claimed.add(key), true)),
    };
    const notifier = new BufferedNotifier({ outbox, clock, logger: silentLogger, maxQueue: 100, wants: () => true });
    for (let i = 0; i < 3; i++) notifier.publish('budget.threshold', 'account:acme', { fraction: 0.8, i }, { dedupeKey: 'acme:0.8:w1', dedupeTtlMs: 60_000 });
    for (let i = 0; i < 5; i++) notifier.publish('key.updated', 'key:k', { i });
    await waitFor('written', () => written.length === 6, 2_000);
    expect(written.filter((e) => e.type === 'budget.threshold').map((e) => e.data.i)).toEqual([0]);
    expect(written.filter((e) => e.type === 'key.updated').map((e) => e.data.i)).toEqual([0, 1, 2, 3, 4]);
    expect(written.map((e) => e.id)).toEqual([...written.map((e) => e.id)].sort());
    await notifier.close();
  });
});

describe('event ids', () => {
  it('are evt_ + 26 Crockford characters, sort by time and stay unique within one millisecond', () => {
    const ids = Array.from({ length: 1000 }, () => newEventId(1_795_000_000_123));
    expect(ids.every((id) => EVENT_ID_PATTERN.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(1000);
    expect(ids).toEqual([...ids].sort());
    expect(eventIdTimeMs(ids[0]!)).toBe(1_795_000_000_123);
    expect(newEventId(1_795_000_000_124) > ids[999]!).toBe(true);
  });
});
