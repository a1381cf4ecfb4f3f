// Concurrent writers never lose an update (docs/admin-api.md "Consistency"): two store
// instances (two connections to Redis; two handles on one key file, as two gateways or a
// gateway and the CLI have) race read-modify-writes of one key; every change survives.
// Two concurrent rotations of one key make exactly one new key.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FileKeyStore } from '../../src/keys/file-key-store.js';
import type { KeyRecord } from '../../src/keys/key-record.js';
import type { KeyStore } from '../../src/keys/key-store.js';
import { KeyService, KeyServiceError } from '../../src/keys/key-service.js';
import { createRedisKeyStore } from '../../src/keys/redis-key-store.js';
import { createRedisClientFactory } from '../../src/redis/redis-client.js';
import { NO_LIMITS } from '../helpers/key-stores.js';
import { silentLogger } from '../../src/logger.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { collectKeys } from '../../src/keys/key-pages.js';

const config = {
  plans: new Map([['pro', NO_LIMITS]]),
  agents: new Map([['support', {} as never]]),
};

let redis: TestRedis;
let dir: string;

beforeAll(async () => {
  [redis, dir] = await Promise.all([startRedis(), mkdtemp(join(tmpdir(), 'agentgw-concurrent-'))]);
});

afterAll(async () => {
  await redis?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

let reopen: () => Promise<KeyStore>;

/** Two store instances on one store; `reopen` makes a third, to read what was stored. */
async function openPair(kind: 'file' | 'redis'): Promise<[KeyStore, KeyStore]> {
  if (kind === 'file') {
    const path = join(dir, `${randomUUID()}.json`);
    // Not watching (as the CLI opens it): each instance's index is its own last read.
    reopen = () => FileKeyStore.open({ path, logger: silentLogger, watch: false });
  } else {
    const prefix = `conc${randomUUID().slice(0, 8)}:`;
    const clients = createRedisClientFactory({ url: redis.url, prefix, commandTimeoutMs: 2_000 }, silentLogger);
    reopen = () => createRedisKeyStore({ redis: clients, prefix, commandTimeoutMs: 2_000, logger: silentLogger, subscribe: false, waitForConnectionMs: 5_000 });
  }
  return [await reopen(), await reopen()];
}

async function stored(keyId: string): Promise<KeyRecord> {
  const store = await reopen();
  try {
    return (await store.findById(keyId))!;
  } finally {
    await store.close();
  }
}

describe.each(['file', 'redis'] as const)('concurrent key updates (%s store)', (kind) => {
  it('keeps every one of 40 racing read-modify-writes from two store instances', async () => {
    const [a, b] = await openPair(kind);
    try {
      const { record } = await new KeyService({ store: a, config }).createKey({ account: 'acme', plan: 'pro', agents: ['support'] });
      const writes = Array.from({ length: 40 }, (_, i) =>
        (i % 2 === 0 ? a : b).update(record.keyId, (current) => ({ record: { ...current, metadata: { ...current.metadata, [`w${i}`]: String(i) } } })),
      );
      await Promise.all(writes);
      const final = await stored(record.keyId);
      expect(Object.keys(final.metadata).sort()).toEqual(Array.from({ length: 40 }, (_, i) => `w${i}`).sort());
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('two API-style updates of different fields through two services both survive, and a revocation is never undone', async () => {
    const [a, b] = await openPair(kind);
    try {
      const service = (store: KeyStore) => new KeyService({ store, config });
      const { record } = await service(a).createKey({ account: 'acme', plan: 'pro', agents: ['support'] });
      await Promise.all([
        service(a).updateKey(record.keyId, { name: 'from-a' }),
        service(b).updateKey(record.keyId, { metadata: { from: 'b' } }),
        service(b).revokeKey(record.keyId),
        service(a).updateKey(record.keyId, { expiresAt: '2099-01-01T00:00:00Z' }),
      ]);
      const final = await stored(record.keyId);
      expect(final).toMatchObject({ name: 'from-a', metadata: { from: 'b' }, expiresAt: '2099-01-01T00:00:00.000Z' });
      expect(final.revokedAt).not.toBeNull();
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('two racing rotations of one key make exactly one replacement', async () => {
    const [a, b] = await openPair(kind);
    try {
      const { record } = await new KeyService({ store: a, config }).createKey({ account: 'acme', plan: 'pro', agents: ['support'] });
      const results = await Promise.allSettled([
        new KeyService({ store: a, config }).rotateKey(record.keyId, { graceMs: 60_000 }),
        new KeyService({ store: b, config }).rotateKey(record.keyId, { graceMs: 60_000 }),
      ]);
      const won = results.filter((r) => r.status === 'fulfilled');
      const lost = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
      expect(won).toHaveLength(1);
      expect(lost).toHaveLength(1);
      expect(lost[0]!.reason).toBeInstanceOf(KeyServiceError);
      const fresh = await reopen();
      const keys = await collectKeys(fresh);
      await fresh.close();
      expect(keys).toHaveLength(2);
      const old = keys.find((k) => k.keyId === record.keyId)!;
      expect(keys.find((k) => k.keyId !== record.keyId)!.replaces).toBe(record.keyId);
      expect(old.replacedBy).toBe(keys.find((k) => k.keyId !== record.keyId)!.keyId);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});
