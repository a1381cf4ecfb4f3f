import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import type { FileKeyStore } from '../../../src/keys/file-key-store.js';
import { hashApiKey, parseApiKey } from '../../../src/keys/key-format.js';
import { KeyService, KeyServiceError } from '../../../src/keys/key-service.js';
import { ManualClock } from '../../../src/clock.js';
import { openFileStore, testConfig } from '../../helpers/key-stores.js';
import { tempDir } from '../../helpers/files.js';

let store: FileKeyStore;
let cleanup: () => Promise<void>;
let service: KeyService;
const clock = new ManualClock(Date.parse('2024-06-01T00:00:00.000Z'));

beforeEach(async () => {
  const tmp = await tempDir();
  cleanup = tmp.cleanup;
  store = await openFileStore(join(tmp.dir, 'keys.json'));
  service = new KeyService({ store, config: testConfig, clock });
});
afterEach(async () => {
  await store.close();
  await cleanup();
});

describe('KeyService', () => {
  it('creates a key whose record holds only the hash, with expiry from expiresInMs', async () => {
    const { rawKey, record } = await service.createKey({ account: 'team@acme.io', plan: 'pro', agents: ['support', 'sales', 'support'], name: 'prod', expiresInMs: 86_400_000 });
    expect(parseApiKey(rawKey)).toBe(true);
    expect(record).toEqual({
      keyId: expect.stringMatching(/^key_[0-9A-Za-z]{16}$/),
      hash: hashApiKey(rawKey),
      account: 'team@acme.io',
      plan: 'pro',
      agents: ['support', 'sales'],
      name: 'prod',
      createdAt: '2024-06-01T00:00:00.000Z',
      expiresAt: '2024-06-02T00:00:00.000Z',
      revokedAt: null,
      lastUsedAt: null,
      metadata: {},
      limits: null,
      tools: null,
      mcp: null,
      replaces: null,
      replacedBy: null,
    });
    expect(await service.showKey(record.keyId)).toEqual(record);
    expect(JSON.stringify(await service.listKeyPage())).not.toContain(rawKey);
  });

  it.each([
    [{ account: '', plan: 'pro', agents: ['support'] }, /account "" is not valid/],
    [{ account: 'a b', plan: 'pro', agents: ['support'] }, /account "a b" is not valid/],
    [{ account: 'x'.repeat(129), plan: 'pro', agents: ['support'] }, /is not valid/],
    [{ account: 'acme', plan: 'gold', agents: ['support'] }, /unknown plan "gold"; the config defines: starter, pro/],
    [{ account: 'acme', plan: 'pro', agents: [] }, /at least one agent/],
    [{ account: 'acme', plan: 'pro', agents: ['support', 'billing'] }, /unknown agent\(s\) "billing"; the config defines: support, sales/],
    [{ account: 'acme', plan: 'pro', agents: ['support'], name: 'a\nb' }, /control characters/],
    [{ account: 'acme', plan: 'pro', agents: ['support'], expiresInMs: 0 }, /positive duration/],
  ])('rejects %j', async (input, message) => {
    await expect(service.createKey(input)).rejects.toThrow(KeyServiceError);
    await expect(service.createKey(input)).rejects.toThrow(message);
    expect((await service.listKeyPage()).keys).toEqual([]);
  });

  it('revokes idempotently and reports unknown or malformed key ids', async () => {
    const { record } = await service.createKey({ account: 'acme', plan: 'pro', agents: ['support'] });
    const first = await service.revokeKey(record.keyId);
    expect(first.alreadyRevoked).toBe(false);
    expect(first.record.revokedAt).toBe('2024-06-01T00:00:00.000Z');
    clock.advance(1000);
    const second = await service.revokeKey(record.keyId);
    expect(second.alreadyRevoked).toBe(true);
    expect(second.record.revokedAt).toBe('2024-06-01T00:00:00.000Z');
    await expect(service.revokeKey('key_0000000000000000')).rejects.toThrow(/no key key_0000000000000000/);
    await expect(service.showKey('nope')).rejects.toThrow(/not a key id/);
  });
});
