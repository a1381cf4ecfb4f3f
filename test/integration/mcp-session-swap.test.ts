// The aggregated session's compare-and-swap (src/mcp/mcp-session-swap.ts) on both stores: the
// memory store and a real redis-server. Writers that each read, merge their own server and swap,
// retrying on a changed record, all end up in the record however they interleave; a plain
// read-then-write would drop some (the race the swap exists for).
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AggregateSessionRecord } from '../../src/mcp/aggregate-session-record.js';
import { MemorySessionStore, RedisSessionStore, type McpSessionStore } from '../../src/mcp/mcp-session-store.js';
import type { RedisClient } from '../../src/redis/redis-client.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';

const IDLE_MS = 60_000;
const RECORD: AggregateSessionRecord = { keyId: 'key_1', protocol: '2025-06-18', client: '{"capabilities":{}}', upstreams: {} };
let redis: TestRedis;
let client: Redis;

beforeAll(async () => {
  redis = await startRedis();
  client = new Redis(redis.url, { maxRetriesPerRequest: 1 });
});

afterAll(async () => {
  client?.disconnect();
  await redis?.close();
});

/** One writer: read, add its server, swap; on a changed record merge into what is there and swap again. */
async function addServer(store: McpSessionStore, id: string, server: string): Promise<number> {
  let current = await store.touchAggregate(id);
  for (let tries = 1; ; tries++) {
    if (current === undefined) throw new Error('session gone');
    const swap = await store.swapAggregate(id, current, { ...current, upstreams: { ...current.upstreams, [server]: { target: `http://${server}/mcp`, upstreamSession: `s-${server}` } } });
    if (swap.swapped) return tries;
    current = swap.current;
  }
}

const stores: Array<[string, () => McpSessionStore]> = [
  ['memory', () => new MemorySessionStore(() => IDLE_MS)],
  ['redis', () => new RedisSessionStore(client as unknown as RedisClient, `swap-${Math.random().toString(36).slice(2)}:`, () => IDLE_MS)],
];

describe.each(stores)('the aggregated session swap (%s store)', (_name, makeStore) => {
  it('stores the new record only over the one it was read as, and answers the record found otherwise', async () => {
    const store = makeStore();
    await store.putAggregate('s', RECORD);
    const withFiles = { ...RECORD, upstreams: { files: { target: 'http://files/mcp', upstreamSession: 'f1' } } };
    expect(await store.swapAggregate('s', RECORD, withFiles)).toEqual({ swapped: true });
    expect(await store.touchAggregate('s')).toEqual(withFiles);
    // Read before the swap above: refused, and the record now stored comes back to merge into.
    const stale = await store.swapAggregate('s', RECORD, { ...RECORD, upstreams: { git: { target: 'http://git/mcp', upstreamSession: null } } });
    expect(stale).toEqual({ swapped: false, current: withFiles });
    expect(await store.touchAggregate('s')).toEqual(withFiles);
  });

  it('a session that is gone, or holds what is not an aggregated record, is answered as gone and not written', async () => {
    const store = makeStore();
    expect(await store.swapAggregate('missing', RECORD, RECORD)).toEqual({ swapped: false, current: undefined });
    expect(await store.touchAggregate('missing')).toBeUndefined();
    await store.put('per-server', { server: 'files', keyId: 'key_1', target: 'http://files/mcp', upstreamSession: 'u', protocol: '2025-06-18' });
    expect(await store.swapAggregate('per-server', RECORD, RECORD)).toEqual({ swapped: false, current: undefined });
    expect(await store.touch('per-server')).toMatchObject({ server: 'files' });
  });

  it('24 writers at once, each adding its own server, all end up in the record', async () => {
    const store = makeStore();
    await store.putAggregate('busy', RECORD);
    const servers = Array.from({ length: 24 }, (_, i) => `server${i}`);
    const tries = await Promise.all(servers.map((server) => addServer(store, 'busy', server)));
    expect(Object.keys((await store.touchAggregate('busy'))!.upstreams).sort()).toEqual([...servers].sort());
    // They did interleave: some writer found the record changed under it at least once.
    expect(Math.max(...tries)).toBeGreaterThan(1);
  });
});

describe('the aggregated session swap on Redis', () => {
  it('renews the idle expiry with the write', async () => {
    const store = new RedisSessionStore(client as unknown as RedisClient, 'swap-ttl:', () => IDLE_MS);
    await store.putAggregate('t', RECORD);
    await client.pexpire('swap-ttl:mcp:session:t', 1_000);
    expect(await store.swapAggregate('t', RECORD, { ...RECORD, protocol: '2025-11-25' })).toEqual({ swapped: true });
    expect(await client.pttl('swap-ttl:mcp:session:t')).toBeGreaterThan(1_000);
  });
});
