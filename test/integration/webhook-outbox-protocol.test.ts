// The Redis outbox's named scripts (src/notifications/outbox-protocol.ts; decision 0085) on a
// real redis-server: each webhook's position is its own, the commit is fenced by the shard's
// lease, entries go only once every configured webhook has passed them, an event's state
// comes from all its webhooks' outcomes. The decoders refuse any reply that is not their
// operation's version. And the rolling upgrade of docs/notifications.md: what a gateway of the
// layout before per-webhook positions leaves in (or removes from) a shard's stream, the lanes
// read on from, losing nothing.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger.js';
import { metrics } from '../../src/metrics/metrics.js';
import { newEventId } from '../../src/notifications/event-id.js';
import type { NotificationEvent } from '../../src/notifications/notifier.js';
import { shardOf } from '../../src/notifications/outbox.js';
import { OUTBOX_OPERATION, OutboxProtocolError, decodeCommit, decodeRelease, decodeRenew, decodeSettle } from '../../src/notifications/outbox-protocol.js';
import { RedisWebhookOutbox, SHARD_COUNT } from '../../src/notifications/redis-webhook-outbox.js';
import { createRedisClientFactory, type RedisClient } from '../../src/redis/redis-client.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';

let redis: TestRedis;
const clients: RedisClient[] = [];

beforeAll(async () => {
  redis = await startRedis();
});

afterAll(async () => {
  for (const client of clients) client.disconnect();
  await redis?.close();
});

function outbox(prefix: string): { outbox: RedisWebhookOutbox; client: RedisClient } {
  const client = createRedisClientFactory({ url: redis.url, prefix, commandTimeoutMs: 5_000 }, silentLogger).connect('webhooks', `test-outbox-${clients.length}`);
  clients.push(client);
  return { outbox: new RedisWebhookOutbox({ client, prefix, leaseMs: 15_000 }), client };
}

function events(subject: string, count: number): NotificationEvent[] {
  const now = Date.now();
  return Array.from({ length: count }, (_, seq) => ({ id: newEventId(now + seq), type: 'key.updated' as const, created_at: new Date(now + seq).toISOString(), subject, data: { seq } }));
}

describe('outbox protocol decoders', () => {
  it('read each reply by its named fields and refuse another version, tag or shape, counted', async () => {
    const protocolErrors = async () => (await metrics.redisErrors.get()).values.find((v) => v.labels.op === 'webhook_outbox_protocol')?.value ?? 0;
    expect(decodeRenew([OUTBOX_OPERATION.renew, 1])).toEqual({ held: true });
    expect(decodeRelease([OUTBOX_OPERATION.release, 0])).toEqual({ released: false });
    expect(decodeCommit([OUTBOX_OPERATION.commit, 1, 3])).toEqual({ committed: true, trimmed: 3 });
    expect(decodeSettle([OUTBOX_OPERATION.settle, 'failed'])).toEqual({ state: 'failed' });
    expect(decodeSettle([OUTBOX_OPERATION.settle, ''])).toEqual({ state: undefined });
    const before = await protocolErrors();
    const refused: Array<() => unknown> = [
      () => decodeRenew(1),
      () => decodeRenew(['agw_outbox_renew_v2', 1]),
      () => decodeRenew([OUTBOX_OPERATION.renew, 2]),
      () => decodeCommit([OUTBOX_OPERATION.commit, 1]),
      () => decodeCommit([OUTBOX_OPERATION.commit, 1, -1]),
      () => decodeCommit([OUTBOX_OPERATION.renew, 1, 0]),
      () => decodeSettle([OUTBOX_OPERATION.settle, 'lost']),
      () => decodeRelease(null),
    ];
    for (const decode of refused) expect(decode).toThrow(OutboxProtocolError);
    expect(await protocolErrors()).toBe(before + refused.length);
  });
});

describe('outbox protocol on a real Redis', () => {
  it('keeps a position per webhook, fenced by the lease, and lets entries go once every webhook passed them', async () => {
    const prefix = `proto${randomUUID().slice(0, 8)}:`;
    const { outbox: mine, client } = outbox(prefix);
    const { outbox: other } = outbox(prefix);
    const list = events('key:key_p', 3);
    await mine.append(list);
    const shard = shardOf('key:key_p', SHARD_COUNT);
    const stream = `{${prefix}webhooks:${shard}}:outbox`;
    expect(await mine.acquire(shard)).toBe(true);
    expect(await other.acquire(shard)).toBe(false);

    const a = await mine.read(shard, 'a', 10);
    expect(a.map((e) => e.event.id)).toEqual(list.map((e) => e.id));
    expect(await mine.commit(shard, 'a', a[2]!.position, ['a', 'b'])).toBe(true);
    // Webhook b has no position yet: nothing goes.
    expect(await client.xlen(stream)).toBe(3);
    expect(await mine.read(shard, 'a', 10)).toEqual([]);
    const b = await mine.read(shard, 'b', 1);
    expect(b.map((e) => e.event.id)).toEqual([list[0]!.id]);
    expect(await mine.commit(shard, 'b', b[0]!.position, ['a', 'b'])).toBe(true);
    expect(await client.xlen(stream)).toBe(2);
    expect((await mine.read(shard, 'b', 10)).map((e) => e.event.id)).toEqual([list[1]!.id, list[2]!.id]);
    // Not the lease holder: refused, nothing moves.
    expect(await other.commit(shard, 'b', a[2]!.position, ['a', 'b'])).toBe(false);
    expect(await client.hget(`{${prefix}webhooks:${shard}}:positions`, 'b')).toBe(b[0]!.position);
    // A webhook no longer configured holds nothing back.
    expect(await mine.commit(shard, 'a', a[2]!.position, ['a'])).toBe(true);
    expect(await client.xlen(stream)).toBe(0);
    await mine.release(shard);
    expect(await other.acquire(shard)).toBe(true);
    await other.release(shard);
  });

  it("settles an event from all its webhooks' outcomes, keeping each attempt's webhook", async () => {
    const prefix = `proto${randomUUID().slice(0, 8)}:`;
    const { outbox: mine } = outbox(prefix);
    const [event] = events('key:key_s', 1);
    await mine.append([event!]);
    const at = new Date().toISOString();
    await mine.settle(event!.id, 'a', { at, webhook: 'a', status: 200, duration_ms: 3 }, 'delivered', ['a', 'b']);
    expect(await mine.get(event!.id)).toMatchObject({ state: 'pending', attempts: [{ webhook: 'a', status: 200 }] });
    await mine.settle(event!.id, 'b', { at, webhook: 'b', error: 'ECONNREFUSED', duration_ms: 1 }, 'pending', ['a', 'b']);
    await mine.settle(event!.id, 'b', undefined, 'failed', ['a', 'b']);
    expect(await mine.get(event!.id)).toMatchObject({ state: 'failed', attempts: [{ webhook: 'a', status: 200 }, { webhook: 'b', error: 'ECONNREFUSED' }] });
    // Redeliver: pending again, and settled anew by both.
    await mine.requeue(event!, ['a', 'b']);
    await mine.settle(event!.id, 'a', { at, webhook: 'a', status: 204, duration_ms: 2 }, 'delivered', ['a', 'b']);
    expect((await mine.get(event!.id))!.state).toBe('pending');
    await mine.settle(event!.id, 'b', { at, webhook: 'b', status: 200, duration_ms: 2 }, 'delivered', ['a', 'b']);
    expect((await mine.get(event!.id))!.state).toBe('delivered');
    // An event whose state expired is not brought back by a late settle.
    await mine.settle('evt_01ZZZZZZZZZZZZZZZZZZZZZZZZ', 'a', { at, webhook: 'a', status: 200, duration_ms: 1 }, 'delivered', ['a']);
    expect(await mine.get('evt_01ZZZZZZZZZZZZZZZZZZZZZZZZ')).toBeUndefined();
  });

  it('rolling upgrade: entries a gateway of the earlier layout left are read by lanes with no position, and one it deleted is skipped, never lost', async () => {
    const prefix = `proto${randomUUID().slice(0, 8)}:`;
    const { outbox: mine, client } = outbox(prefix);
    const shard = shardOf('key:key_u', SHARD_COUNT);
    const stream = `{${prefix}webhooks:${shard}}:outbox`;
    const list = events('key:key_u', 4);
    // The earlier layout wrote the same stream with the same fields: XADD … e <event>.
    for (const event of list.slice(0, 2)) await client.xadd(stream, '*', 'e', JSON.stringify(event));
    expect(await mine.acquire(shard)).toBe(true);
    const first = await mine.read(shard, 'a', 1);
    expect(first.map((e) => e.event.id)).toEqual([list[0]!.id]);
    expect(await mine.commit(shard, 'a', first[0]!.position, ['a'])).toBe(true);
    await mine.release(shard);
    // An old gateway takes the shard, delivers the next entry to every webhook and deletes it
    // (its commit: XDEL), then the new layout's publishers add the rest.
    const oldHead = (await client.xrange(stream, '-', '+', 'COUNT', 1))[0]![0];
    await client.xdel(stream, oldHead);
    await mine.append(list.slice(2));
    expect(await mine.acquire(shard)).toBe(true);
    // Lane a reads on after its own position; lane b (no position) from the oldest entry kept.
    expect((await mine.read(shard, 'a', 10)).map((e) => e.event.id)).toEqual([list[2]!.id, list[3]!.id]);
    expect((await mine.read(shard, 'b', 10)).map((e) => e.event.id)).toEqual([list[2]!.id, list[3]!.id]);
    await mine.release(shard);
  });
});
