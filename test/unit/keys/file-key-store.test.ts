import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdir, readFile, readdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FileKeyStore, sidecarPathFor } from '../../../src/keys/file-key-store.js';
import { KeyConflictError } from '../../../src/keys/key-store.js';
import { KeyService } from '../../../src/keys/key-service.js';
import { ManualClock } from '../../../src/clock.js';
import type { Logger } from '../../../src/logger.js';
import { silentLogger } from '../../../src/logger.js';
import { openFileStore, testConfig } from '../../helpers/key-stores.js';
import { waitFor } from '../../helpers/wait.js';
import { tempDir } from '../../helpers/files.js';
import { collectKeys, eachKeyPage, matchesPage, PAGE_SCAN_BUDGET } from '../../../src/keys/key-pages.js';

let dir: string;
let cleanup: () => Promise<void>;
const stores: FileKeyStore[] = [];

beforeEach(async () => {
  ({ dir, cleanup } = await tempDir());
});
afterEach(async () => {
  await Promise.all(stores.splice(0).map((s) => s.close()));
  await cleanup();
});

async function open(path: string, watch = false, logger: Logger = silentLogger): Promise<FileKeyStore> {
  const store = await FileKeyStore.open({ path, logger, watch, pollIntervalMs: 100 });
  stores.push(store);
  return store;
}

describe('FileKeyStore', () => {
  it('pages every filter and combination in (created_at, key_id) order, and stops a rare match at the scan budget with a cursor', async () => {
    const path = join(dir, 'keys.json');
    const clock = new ManualClock(Date.parse('2030-01-01T00:00:00.000Z'));
    const store = await open(path);
    const service = new KeyService({ store, config: testConfig, clock });
    const names = ['Alpha', 'alps', 'beta', ''];
    for (let i = 0; i < 40; i++) {
      if (i % 2 === 0) clock.advance(1);
      const { record } = await service.createKey({ account: `acct${i % 3}`, plan: 'pro', agents: i % 4 === 0 ? ['support', 'sales'] : ['support'], name: names[i % 4]!, ...(i % 5 === 0 ? { expiresInMs: 10 } : {}) });
      if (i % 7 === 0) await service.revokeKey(record.keyId);
    }
    clock.advance(100);
    const all = await collectKeys(store, { nowMs: clock.now() });
    expect(all.map((r) => `${r.createdAt}|${r.keyId}`)).toEqual(all.map((r) => `${r.createdAt}|${r.keyId}`).sort());
    for (const filters of [{}, { account: 'acct1' }, { agent: 'sales' }, { status: 'expired' as const }, { status: 'revoked' as const }, { namePrefix: 'al' }, { account: 'acct0', status: 'active' as const, namePrefix: 'alp' }]) {
      const query = { ...filters, limit: 3, nowMs: clock.now() };
      const paged: string[] = [];
      for await (const page of eachKeyPage(store, query)) paged.push(...page.records.map((r) => r.keyId));
      expect(paged, JSON.stringify(filters)).toEqual(all.filter((r) => matchesPage(r, query)).map((r) => r.keyId));
    }

    // Past the budget of entries looked at, a page that found nothing yet says where to go on.
    const many = [...Array(PAGE_SCAN_BUDGET + 20).keys()].map((i) => ({
      key_id: `key_${String(i).padStart(16, '0')}`,
      hash: i.toString(16).padStart(64, '0'),
      account: 'bulk',
      plan: 'pro',
      agents: ['support'],
      name: i === PAGE_SCAN_BUDGET + 10 ? 'needle' : 'hay',
      created_at: new Date(Date.parse('2029-01-01T00:00:00.000Z') + i).toISOString(),
    }));
    await writeFile(path, JSON.stringify({ version: 1, keys: many }));
    const big = await open(path);
    const first = await big.listPage({ namePrefix: 'needle', limit: 5, nowMs: clock.now() });
    expect(first.records).toEqual([]);
    expect(first.next).not.toBeNull();
    const second = await big.listPage({ namePrefix: 'needle', limit: 5, nowMs: clock.now(), after: first.next! });
    expect(second.records.map((r) => r.name)).toEqual(['needle']);
    expect(second.next).toBeNull();
  });

  it('treats a missing file as empty and creates the directory and file on first write', async () => {
    const path = join(dir, 'nested', 'var', 'keys.json');
    const store = await open(path);
    expect(await collectKeys(store)).toEqual([]);
    const service = new KeyService({ store, config: testConfig, clock: new ManualClock() });
    const { rawKey, record } = await service.createKey({ account: 'acme', plan: 'starter', agents: ['support'], name: 'ci' });
    const text = await readFile(path, 'utf8');
    const document = JSON.parse(text);
    expect(document.version).toBe(1);
    expect(document.keys).toEqual([
      {
        key_id: record.keyId,
        hash: record.hash,
        account: 'acme',
        plan: 'starter',
        agents: ['support'],
        name: 'ci',
        created_at: record.createdAt,
        expires_at: null,
        revoked_at: null,
        last_used_at: null,
        metadata: {},
        limits: null,
        tools: null,
        replaces: null,
        replaced_by: null,
      },
    ]);
    expect(text).not.toContain(rawKey);
    expect(text).not.toContain(rawKey.slice(3, 35));
    expect(await store.findByHash(record.hash)).toEqual(record);
    expect(await store.findById(record.keyId)).toEqual(record);
    // no temp or lock files left behind
    expect((await readdir(join(dir, 'nested', 'var'))).sort()).toEqual(['keys.json']);
    expect((await stat(path)).mode & 0o777).toBe(0o600);
  });

  it('revokes once (first time wins), lists by account, rejects duplicates', async () => {
    const store = await open(join(dir, 'keys.json'));
    const clock = new ManualClock(Date.parse('2024-05-01T00:00:00.000Z'));
    const service = new KeyService({ store, config: testConfig, clock });
    const a = await service.createKey({ account: 'acme', plan: 'starter', agents: ['support'] });
    const b = await service.createKey({ account: 'globex', plan: 'pro', agents: ['sales'] });
    expect((await collectKeys(store, { account: 'acme' })).map((r) => r.keyId)).toEqual([a.record.keyId]);
    expect(await collectKeys(store)).toHaveLength(2);
    const revoked = await store.revoke(a.record.keyId, '2024-05-02T00:00:00.000Z');
    expect(revoked?.revokedAt).toBe('2024-05-02T00:00:00.000Z');
    const again = await store.revoke(a.record.keyId, '2024-05-03T00:00:00.000Z');
    expect(again?.revokedAt).toBe('2024-05-02T00:00:00.000Z');
    expect(await store.revoke('key_0000000000000000', '2024-05-03T00:00:00.000Z')).toBeUndefined();
    await expect(store.create({ ...b.record })).rejects.toBeInstanceOf(KeyConflictError);
    await expect(store.create({ ...b.record, keyId: 'key_AAAAAAAAAAAAAAAA' })).rejects.toBeInstanceOf(KeyConflictError);
  });

  it('keeps last_used_at in a sidecar so CLI writes and gateway flushes never clobber each other', async () => {
    const path = join(dir, 'keys.json');
    const gateway = await open(path, true);
    const cli = await open(path);
    const clock = new ManualClock(Date.parse('2024-05-01T00:00:00.000Z'));
    const service = new KeyService({ store: cli, config: testConfig, clock });
    const first = await service.createKey({ account: 'acme', plan: 'starter', agents: ['support'] });
    await waitFor('the watching store to see the new key', async () => (await gateway.findByHash(first.record.hash)) !== undefined, 2_000, 10);
    // Interleave many CLI creates with many gateway last-used flushes.
    const created: string[] = [];
    await Promise.all([
      (async () => {
        for (let i = 0; i < 8; i++) created.push((await service.createKey({ account: `a${i}`, plan: 'starter', agents: ['support'] })).record.keyId);
      })(),
      (async () => {
        for (let i = 0; i < 8; i++) await gateway.touchLastUsed([{ hash: first.record.hash, atIso: new Date(Date.parse('2024-05-01T00:00:00.000Z') + i * 1000).toISOString() }]);
      })(),
    ]);
    const fresh = await open(path);
    const all = await collectKeys(fresh);
    expect(all.map((r) => r.keyId).sort()).toEqual([first.record.keyId, ...created].sort());
    expect((await fresh.findById(first.record.keyId))?.lastUsedAt).toBe('2024-05-01T00:00:07.000Z');
    // the key file itself was never rewritten by the gateway
    expect(JSON.parse(await readFile(path, 'utf8')).keys.every((k: { last_used_at: unknown }) => k.last_used_at === null)).toBe(true);
    expect(sidecarPathFor(path)).toBe(join(dir, 'keys.last-used.json'));
    // last_used_at never moves backwards
    await gateway.touchLastUsed([{ hash: first.record.hash, atIso: '2024-04-01T00:00:00.000Z' }]);
    expect((await (await open(path)).findById(first.record.keyId))?.lastUsedAt).toBe('2024-05-01T00:00:07.000Z');
  });

  it('serialises concurrent writers from separate store instances (no lost creates)', async () => {
    const path = join(dir, 'keys.json');
    const one = await open(path);
    const two = await open(path);
    const s1 = new KeyService({ store: one, config: testConfig });
    const s2 = new KeyService({ store: two, config: testConfig });
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? s1 : s2).createKey({ account: 'acme', plan: 'starter', agents: ['support'] })));
    const stored = await collectKeys(await open(path));
    expect(stored.map((r) => r.keyId).sort()).toEqual(results.map((r) => r.record.keyId).sort());
  });

  it('one-shot open refuses a corrupt file; a watching store keeps its last good keys and logs', async () => {
    const path = join(dir, 'keys.json');
    const errors: unknown[] = [];
    const logger = { ...silentLogger, error: (...args: unknown[]) => void errors.push(args), warn: () => {} } as unknown as Logger;
    const writer = await open(path);
    const { record } = await new KeyService({ store: writer, config: testConfig }).createKey({ account: 'acme', plan: 'starter', agents: ['support'] });
    const gateway = await open(path, true, logger);
    expect(await gateway.findByHash(record.hash)).toBeDefined();
    await writeFile(path, '{"version": 1, "keys": [ {"oops": ');
    await waitFor('the broken file to be reported', () => errors.length > 0, 2_000, 10);
    expect(await gateway.findByHash(record.hash)).toBeDefined();
    await expect(FileKeyStore.open({ path, logger: silentLogger, watch: false })).rejects.toThrow(/not valid JSON/);
    // writers refuse to overwrite a file they cannot read
    await expect(writer.revoke(record.keyId, new Date().toISOString())).rejects.toThrow(/not valid JSON/);
    await writeFile(path, JSON.stringify({ version: 2, keys: [] }));
    await expect(FileKeyStore.open({ path, logger: silentLogger, watch: false })).rejects.toThrow(/unsupported version/);
  });

  it('a watching store sees a revoke written by another instance and emits the hash', async () => {
    const path = join(dir, 'keys.json');
    await mkdir(dir, { recursive: true });
    const writer = await open(path);
    const { record } = await new KeyService({ store: writer, config: testConfig }).createKey({ account: 'acme', plan: 'starter', agents: ['support'] });
    const gateway = await openFileStore(path, true);
    stores.push(gateway);
    const seen: string[] = [];
    gateway.onInvalidate((h) => seen.push(h));
    await writer.revoke(record.keyId, new Date().toISOString());
    // Generous for a loaded machine: the watch or the poll, whichever comes first.
    await waitFor('the invalidation of the revoked key', () => seen.includes(record.hash), 30_000, 10);
    expect((await gateway.findByHash(record.hash))?.revokedAt).not.toBeNull();
  });

  it('without fs.watch, the stat poll alone picks up a change', async () => {
    const path = join(dir, 'keys.json');
    const writer = await open(path);
    const gateway = await FileKeyStore.open({ path, logger: silentLogger, watch: true, fsWatch: false, pollIntervalMs: 250 });
    stores.push(gateway);
    const seen: string[] = [];
    gateway.onInvalidate((h) => seen.push(h));
    const { record } = await new KeyService({ store: writer, config: testConfig }).createKey({ account: 'acme', plan: 'starter', agents: ['support'] });
    // The emitted hash, not a lookup: a lookup of an unknown key would read the file itself.
    await waitFor('the stat poll to see the new key', () => seen.includes(record.hash), 30_000, 10);
  });

  it('finds a key another process just wrote at once, before any watch event or poll', async () => {
    const path = join(dir, 'keys.json');
    const writer = await open(path);
    // Neither fs.watch nor a poll within the test's life: only the lookup's own check can see it.
    const gateway = await FileKeyStore.open({ path, logger: silentLogger, watch: true, fsWatch: false, pollIntervalMs: 3_600_000 });
    stores.push(gateway);
    expect(await gateway.findByHash('0'.repeat(64))).toBeUndefined();
    const { record } = await new KeyService({ store: writer, config: testConfig }).createKey({ account: 'acme', plan: 'starter', agents: ['support'] });
    expect((await gateway.findByHash(record.hash))?.keyId).toBe(record.keyId);
    // A one-shot (CLI) store reads the file once and does not look again.
    const oneShot = await open(path);
    const { record: later } = await new KeyService({ store: writer, config: testConfig }).createKey({ account: 'acme', plan: 'starter', agents: ['support'] });
    expect(await oneShot.findByHash(later.hash)).toBeUndefined();
  });

  it('answers a flood of unknown keys as unknown, and still finds a key written during it', async () => {
    const path = join(dir, 'keys.json');
    const writer = await open(path);
    const gateway = await FileKeyStore.open({ path, logger: silentLogger, watch: true, fsWatch: false, pollIntervalMs: 3_600_000 });
    stores.push(gateway);
    const unknown = (i: number): string => i.toString(16).padStart(64, 'f');
    const flood = Array.from({ length: 2_000 }, (_, i) => gateway.findByHash(unknown(i)));
    const { record } = await new KeyService({ store: writer, config: testConfig }).createKey({ account: 'acme', plan: 'starter', agents: ['support'] });
    // Asked while misses of the flood may still be checking the file: it waits for a check that started after it.
    const found = gateway.findByHash(record.hash);
    const more = Array.from({ length: 2_000 }, (_, i) => gateway.findByHash(unknown(i + 2_000)));
    expect((await found)?.keyId).toBe(record.keyId);
    expect((await Promise.all([...flood, ...more])).every((r) => r === undefined)).toBe(true);
  });
});
