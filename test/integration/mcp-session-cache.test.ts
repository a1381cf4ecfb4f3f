// Per-server MCP sessions read through each instance's copies (src/mcp/session-cache.ts) on a
// real redis-server and a real 3-master Cluster: two stores stand for two gateway instances, each
// with its own subscriber connection. A copy saves the GETEX for at most min(1 s, idle/4) (the
// stores' clocks are the test's), an end on one instance drops the other's copy when its message
// arrives (mcp-sessions-processes.test.ts holds the cross-process order: 404 right after DELETE),
// nothing is kept while the subscription is down, and nothing on the channel can break a store.
import { Cluster, Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import type { McpSessionRecord } from '../../src/mcp/mcp-session-record.js';
import { RedisSessionStore } from '../../src/mcp/mcp-session-store.js';
import type { RedisClient } from '../../src/redis/redis-client.js';
import { waitFor } from '../helpers/redis-process.js';
import { TOPOLOGIES, useSingleAndClusterRedis, type Topology } from '../helpers/single-and-cluster-redis.js';

const IDLE_MS = 60_000;
const RECORD: McpSessionRecord = { server: 'files', keyId: 'key_1', target: 'http://files/mcp', upstreamSession: 'u1', protocol: '2025-06-18' };
const redis = useSingleAndClusterRedis();
const opened: RedisSessionStore[] = [];
const clients: Array<Redis | Cluster> = [];

afterEach(async () => {
  await Promise.all(opened.splice(0).map((store) => store.close()));
  for (const client of clients.splice(0)) client.disconnect();
});

/** A new connection of the topology's own (a subscriber, or an instance's shared connection). */
function connection(topology: Topology): Redis | Cluster {
  const seed = redis.client(topology);
  const client = seed instanceof Cluster ? new Cluster(seed.nodes('master').map((node) => ({ host: node.options.host!, port: node.options.port! })), { redisOptions: { maxRetriesPerRequest: 1 } }) : new Redis(seed.options.port!, seed.options.host!, { maxRetriesPerRequest: 1 });
  clients.push(client);
  return client;
}

/** One "instance": a store on its own connection, listening on its own subscriber, live before it is returned. */
async function instance(topology: Topology, prefix: string, clock: { now: number }): Promise<RedisSessionStore> {
  const store = new RedisSessionStore(connection(topology) as unknown as RedisClient, prefix, () => IDLE_MS, () => clock.now);
  store.listen(connection(topology) as unknown as RedisClient, (error) => {
    throw error;
  });
  opened.push(store);
  await waitFor('the store to subscribe', () => Promise.resolve(store.cache.isLive));
  return store;
}

/** GETEX calls the single server has run so far (INFO commandstats). */
async function getexCalls(): Promise<number> {
  const info = await (redis.client('single') as Redis).info('commandstats');
  const match = /cmdstat_getex:calls=(\d+)/.exec(info);
  return match ? Number(match[1]) : 0;
}

const prefixOf = (topology: Topology) => `cache-${topology}-${Math.random().toString(36).slice(2)}:`;

describe.each(TOPOLOGIES)('MCP session copies (%s)', (topology) => {
  it('a record read once is served without Redis until its recheck, which reads it again and renews its expiry', async () => {
    const clock = { now: 1_000_000 };
    const prefix = prefixOf(topology);
    const [a, b] = [await instance(topology, prefix, clock), await instance(topology, prefix, clock)];
    await a.put('s-read', RECORD);
    const key = `${prefix}mcp:session:s-read`;
    const before = topology === 'single' ? await getexCalls() : 0;
    for (let i = 0; i < 10; i++) expect(await b.touch('s-read')).toEqual(RECORD);
    if (topology === 'single') expect(await getexCalls()).toBe(before + 1);
    // The expiry in Redis runs down while copies are served…
    await redis.client(topology).pexpire(key, 30_000);
    expect(await b.touch('s-read')).toEqual(RECORD);
    expect(await redis.client(topology).pttl(key)).toBeLessThanOrEqual(30_000);
    // …and the first use after the recheck reads Redis, pushing it back to the idle expiry.
    clock.now += 1_000;
    expect(await b.touch('s-read')).toEqual(RECORD);
    expect(await redis.client(topology).pttl(key)).toBeGreaterThan(30_000);
    if (topology === 'single') expect(await getexCalls()).toBe(before + 2);
  });

  it('a session ended on one instance is gone from the other instance\'s copies', async () => {
    const clock = { now: 1_000_000 };
    const prefix = prefixOf(topology);
    const [a, b] = [await instance(topology, prefix, clock), await instance(topology, prefix, clock)];
    await a.put('s-end', RECORD);
    expect(await b.touch('s-end')).toEqual(RECORD);
    expect(b.cache.size).toBe(1);
    await a.delete('s-end');
    // B drops its copy when the message arrives (here, in one process, A's reply may be read
    // first; across processes the message is in B's socket before A can answer its client).
    await waitFor('the end to reach B', () => Promise.resolve(b.cache.size === 0));
    expect(await b.touch('s-end')).toBeUndefined();
    expect(await a.touch('s-end')).toBeUndefined();
    expect(await redis.client(topology).exists(`${prefix}mcp:session:s-end`)).toBe(0);
  });

  it('a record deleted behind the instances\' backs (no message) is served from a copy for at most the recheck', async () => {
    const clock = { now: 1_000_000 };
    const prefix = prefixOf(topology);
    const b = await instance(topology, prefix, clock);
    await b.put('s-gone', RECORD);
    await redis.client(topology).del(`${prefix}mcp:session:s-gone`);
    expect(await b.touch('s-gone')).toEqual(RECORD);
    clock.now += 999;
    expect(await b.touch('s-gone')).toEqual(RECORD);
    clock.now += 1;
    expect(await b.touch('s-gone')).toBeUndefined();
  });

  it('nothing on the channel breaks a store: garbage, empty and huge messages drop nothing but what they name', async () => {
    const clock = { now: 1_000_000 };
    const prefix = prefixOf(topology);
    const b = await instance(topology, prefix, clock);
    await b.put('s-kept', RECORD);
    const channel = `${prefix}mcp:session-ends`;
    for (const message of ['', 'x'.repeat(1_000_000), '\u0000\uffff', 'not-a-session']) await redis.client(topology).publish(channel, message);
    await redis.client(topology).publish(`${prefix}mcp:other-channel`, 's-kept');
    // Every message above was published before this round trip's reply; B's subscriber has them.
    await redis.client(topology).ping();
    expect(b.cache.isLive).toBe(true);
    if (topology === 'single') expect(await getexCallsAround(() => b.touch('s-kept'))).toBe(0);
    expect(await b.touch('s-kept')).toEqual(RECORD);
  });
});

/** GETEX calls made while `run` ran (single server). */
async function getexCallsAround(run: () => Promise<unknown>): Promise<number> {
  const before = await getexCalls();
  await run();
  return (await getexCalls()) - before;
}

describe('MCP session copies while the subscription is down (single)', () => {
  it('keeps nothing until subscribed: every read goes to Redis, as without copies', async () => {
    const clock = { now: 1_000_000 };
    const prefix = prefixOf('single');
    const store = new RedisSessionStore(connection('single') as unknown as RedisClient, prefix, () => IDLE_MS, () => clock.now);
    opened.push(store);
    // A subscriber that never connects (nothing listens on port 1).
    const dead = new Redis(1, '127.0.0.1', { lazyConnect: false, retryStrategy: () => 60_000, maxRetriesPerRequest: 0 });
    dead.on('error', () => undefined);
    clients.push(dead);
    store.listen(dead as unknown as RedisClient, () => undefined);
    await store.put('s-dead', RECORD);
    expect(await getexCallsAround(async () => {
      expect(await store.touch('s-dead')).toEqual(RECORD);
      expect(await store.touch('s-dead')).toEqual(RECORD);
    })).toBe(2);
    expect(store.cache.size).toBe(0);
  });

  it('a dropped subscriber connection clears every copy; copies are kept again once it is back', async () => {
    const clock = { now: 1_000_000 };
    const prefix = prefixOf('single');
    const b = await instance('single', prefix, clock);
    await b.put('s-drop', RECORD);
    expect(await getexCallsAround(() => b.touch('s-drop'))).toBe(0);
    await (redis.client('single') as Redis).client('KILL', 'TYPE', 'pubsub');
    await waitFor('the copies to be cleared', () => Promise.resolve(b.cache.size === 0));
    await waitFor('the subscription to come back', () => Promise.resolve(b.cache.isLive));
    expect(await getexCallsAround(() => b.touch('s-drop'))).toBe(1);
    expect(await getexCallsAround(() => b.touch('s-drop'))).toBe(0);
  });
});
