// An idle webhook deliverer on a real Redis (docs/decisions/0075-idle-webhook-delivery.md):
// idle shards are read when the outbox's doorbell changed, which one timer reads for the whole
// instance, and by a slow safety-net read; nothing else is read while nothing happens. Covered:
// an event another instance appended is delivered once the doorbell rings, with no local wake;
// an entry written with no ring (a producer that died between XADD and INCR) is delivered by
// the safety net; and the commands an idle deliverer holding all 16 shards sends, counted with
// MONITOR, are the doorbell reads and one renewal per shard per lease round, nothing more.
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { parseConfig } from '../../src/config/load-config.js';
import { silentLogger } from '../../src/logger.js';
import { newEventId } from '../../src/notifications/event-id.js';
import type { NotificationEvent } from '../../src/notifications/notifier.js';
import { notificationsOver, SHARD_LEASE_MS } from '../../src/notifications/notifications-on.js';
import type { Notifications } from '../../src/notifications/open-notifications.js';
import { shardOf } from '../../src/notifications/outbox.js';
import { RedisWebhookOutbox, SHARD_COUNT, webhookDoorbellKey } from '../../src/notifications/redis-webhook-outbox.js';
import { IDLE_POLL_MS, LEASE_INTERVAL_MS } from '../../src/notifications/webhook-delivery.js';
import { createRedisClientFactory, type RedisClient } from '../../src/redis/redis-client.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { deliveredIds, startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';
import { startMonitor } from '../helpers/redis-monitor.js';

const SECRET = `whsec-${randomUUID()}`;
let redis: TestRedis;
let receiver: WebhookReceiver;
const clients: RedisClient[] = [];
const opened: Notifications[] = [];

beforeAll(async () => {
  [redis, receiver] = await Promise.all([startRedis(), startWebhookReceiver([SECRET])]);
});

afterEach(async () => {
  await Promise.allSettled(opened.splice(0).map((n) => n.close()));
  for (const client of clients.splice(0)) client.disconnect();
});

afterAll(async () => {
  await receiver?.close();
  await redis?.close();
});

/** A connection as the gateway opens it for the outbox (auto-pipelined). */
function connect(prefix: string): RedisClient {
  const client = createRedisClientFactory({ url: redis.url, prefix, commandTimeoutMs: 1_000 }, silentLogger).connect('webhooks', `test-webhooks-${clients.length}`);
  clients.push(client);
  return client;
}

/** One gateway's notifications with delivery running, over its own connection. */
function deliverer(prefix: string, timers: { pollIntervalMs?: number; safetyNetMs?: number }): { notifications: Notifications; client: RedisClient } {
  const config = parseConfig({ agents: { demo: { upstream: 'http://127.0.0.1:9/api/v1' } }, notifications: { webhooks: [{ url: receiver.url, secret: SECRET }], retry: { initial: '20ms', max: '100ms' } } }, 'test', {});
  const client = connect(prefix);
  const outbox = new RedisWebhookOutbox({ client, prefix, leaseMs: SHARD_LEASE_MS });
  const notifications = notificationsOver(outbox, config.notifications, { redis: client, redisPrefix: prefix, logger: silentLogger, clock: systemClock, ...timers });
  opened.push(notifications);
  return { notifications, client };
}

function event(subject: string): NotificationEvent {
  const nowMs = Date.now();
  return { id: newEventId(nowMs), type: 'key.created', created_at: new Date(nowMs).toISOString(), subject, data: { key_id: subject.slice(4) } };
}

/** Every shard taken and read once, so all of them are idle. */
async function settled(prefix: string): Promise<void> {
  const probe = connect(prefix);
  await waitFor('all 16 shards leased', async () => (await Promise.all(Array.from({ length: SHARD_COUNT }, (_, n) => probe.exists(`{${prefix}webhooks:${n}}:lease`)))).every((held) => held === 1), 10_000);
  await sleep(500);
}

describe('an idle webhook deliverer', () => {
  it('delivers an event another instance appended once the doorbell rings, with no local wake', async () => {
    const prefix = `whi${randomUUID().slice(0, 8)}:`;
    // No safety net within the test: only the doorbell can wake the shard.
    deliverer(prefix, { pollIntervalMs: 100, safetyNetMs: 600_000 });
    await settled(prefix);
    const producer = new RedisWebhookOutbox({ client: connect(prefix), prefix, leaseMs: SHARD_LEASE_MS });
    const sent = event(`key:key_${randomUUID()}`);
    await producer.append([sent]);
    expect(await clients[0]!.get(webhookDoorbellKey(prefix))).toBe('1');
    await waitFor('the other instance’s event delivered', () => deliveredIds(receiver).includes(sent.id), 10_000);
  });

  it('delivers an entry written with no doorbell ring (its producer died) at the safety-net read', async () => {
    const prefix = `whs${randomUUID().slice(0, 8)}:`;
    deliverer(prefix, { pollIntervalMs: 100, safetyNetMs: 1_000 });
    await settled(prefix);
    const lost = event(`key:key_${randomUUID()}`);
    const writer = connect(prefix);
    await writer.xadd(`{${prefix}webhooks:${shardOf(lost.subject, SHARD_COUNT)}}:outbox`, '*', 'e', JSON.stringify(lost));
    await waitFor('the unannounced entry delivered', () => deliveredIds(receiver).includes(lost.id), 10_000);
    expect(await writer.get(webhookDoorbellKey(prefix))).toBeNull();
  });

  it('sends, while idle with all 16 shards, only doorbell reads and one lease renewal per shard per round', async () => {
    const prefix = `whc${randomUUID().slice(0, 8)}:`;
    const { client } = deliverer(prefix, {});
    await settled(prefix);
    // The first doorbell read wakes every shard once (nothing to compare it with): past it.
    await sleep(IDLE_POLL_MS + 500);
    const address = /addr=(\S+)/.exec(String(await client.call('CLIENT', 'INFO')))?.[1];
    expect(address).toBeDefined();
    const monitor = await startMonitor(redis.url);
    const counts: Record<string, number> = {};
    // Scripts' inner commands (source "lua") belong to the script's one command.
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      if (source !== address) return;
      const name = String(args[0]).toLowerCase();
      counts[name] = (counts[name] ?? 0) + 1;
    });
    const windowMs = 2 * LEASE_INTERVAL_MS;
    await sleep(windowMs);
    monitor.disconnect();

    const doorbellReads = Math.ceil(windowMs / IDLE_POLL_MS) + 1;
    const renewals = SHARD_COUNT * (Math.ceil(windowMs / LEASE_INTERVAL_MS) + 1);
    const total = Object.values(counts).reduce((sum, n) => sum + n, 0);
    expect(counts.get ?? 0).toBeLessThanOrEqual(doorbellReads);
    expect((counts.evalsha ?? 0) + (counts.eval ?? 0)).toBeLessThanOrEqual(renewals);
    // No stream read while idle (the safety net is 30 s away), no backlog read of an idle shard.
    expect({ xrange: counts.xrange ?? 0, xlen: counts.xlen ?? 0 }).toEqual({ xrange: 0, xlen: 0 });
    expect(total).toBeLessThanOrEqual(doorbellReads + renewals);
    // The window saw the timers run: a doorbell read and a lease round.
    expect(counts.get ?? 0).toBeGreaterThan(0);
    expect(counts.evalsha ?? 0).toBeGreaterThanOrEqual(SHARD_COUNT);
  });
});
