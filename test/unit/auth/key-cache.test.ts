import { describe, expect, it } from 'vitest';
import { KeyCache } from '../../../src/auth/key-cache.js';
import type { KeyRecord } from '../../../src/keys/key-record.js';

function record(n: number, overrides: Partial<KeyRecord> = {}): KeyRecord {
  return {
    keyId: `key_${String(n).padStart(16, '0')}`,
    hash: n.toString(16).padStart(64, '0'),
    account: 'acme',
    plan: 'starter',
    agents: ['support'],
    name: '',
    createdAt: '2024-01-01T00:00:00.000Z',
    expiresAt: null,
    revokedAt: null,
    lastUsedAt: null,
    metadata: {},
    limits: null,
    tools: null,
    mcp: null,
    replaces: null,
    replacedBy: null,
    ...overrides,
  };
}

describe('KeyCache', () => {
  it('keeps positive entries with a freshness deadline and derived fields', async () => {
    const cache = new KeyCache({ ttlMs: 1000, negativeTtlMs: 100 });
    const r = record(1, { expiresAt: '2024-02-01T00:00:00.000Z', revokedAt: '2024-01-15T00:00:00.000Z' });
    const entry = cache.setPositive(r, 5_000);
    expect(entry.freshUntilMs).toBe(6_000);
    expect(entry.expiresAtMs).toBe(Date.parse('2024-02-01T00:00:00.000Z'));
    expect(entry.revoked).toBe(true);
    expect(await entry.resolved).toEqual({ keyId: r.keyId, account: 'acme', plan: 'starter', limits: null, tools: null, mcp: null });
    expect(cache.get(r.hash)).toBe(entry);
    expect(cache.setPositive(record(2), 0).expiresAtMs).toBe(Number.POSITIVE_INFINITY);
  });

  it('keeps negative entries apart and lets a positive replace a negative', () => {
    const cache = new KeyCache({ ttlMs: 1000, negativeTtlMs: 100 });
    cache.setNegative('h1', 50);
    expect(cache.getNegative('h1')).toBe(150);
    expect(cache.get('h1')).toBeUndefined();
    cache.setPositive(record(1, { hash: 'h1' }), 60);
    expect(cache.getNegative('h1')).toBeUndefined();
    expect(cache.get('h1')).toBeDefined();
  });

  it('invalidate and clear drop both kinds and bump the generation', () => {
    const cache = new KeyCache({ ttlMs: 1000, negativeTtlMs: 100 });
    cache.setPositive(record(1), 0);
    cache.setNegative('n', 0);
    const g = cache.generation;
    cache.invalidate(record(1).hash);
    expect(cache.get(record(1).hash)).toBeUndefined();
    expect(cache.getNegative('n')).toBe(100);
    expect(cache.generation).toBe(g + 1);
    cache.clear();
    expect(cache.getNegative('n')).toBeUndefined();
    expect(cache.generation).toBe(g + 2);
  });

  it('expireAll keeps known entries but makes each one due, drops unknown ones, and bumps the generation', () => {
    const cache = new KeyCache({ ttlMs: 1000, negativeTtlMs: 100 });
    const entry = cache.setPositive(record(1), 0);
    cache.setNegative('n', 0);
    const g = cache.generation;
    cache.expireAll();
    expect(cache.peek(record(1).hash)).toBe(entry);
    expect(entry.freshUntilMs).toBe(0);
    expect(cache.getNegative('n')).toBeUndefined();
    expect(cache.generation).toBe(g + 1);
  });

  it('stays within its bounds; recently hit entries survive eviction (second chance)', () => {
    const cache = new KeyCache({ ttlMs: 1000, negativeTtlMs: 100, maxEntries: 3, maxNegativeEntries: 2 });
    for (const n of [1, 2, 3]) cache.setPositive(record(n), 0);
    cache.get(record(1).hash); // referenced
    cache.setPositive(record(4), 0);
    expect(cache.size).toBe(3);
    expect(cache.get(record(1).hash)).toBeDefined();
    expect(cache.get(record(2).hash)).toBeUndefined();
    for (const h of ['a', 'b', 'c', 'd']) cache.setNegative(h, 0);
    expect(cache.negativeSize).toBe(2);
    expect(cache.getNegative('a')).toBeUndefined();
    expect(cache.getNegative('d')).toBe(100);
  });

  it('a flood of negative entries cannot evict positive ones', () => {
    const cache = new KeyCache({ ttlMs: 1000, negativeTtlMs: 100, maxEntries: 2, maxNegativeEntries: 5 });
    cache.setPositive(record(1), 0);
    for (let i = 0; i < 100; i++) cache.setNegative(`n${i}`, 0);
    expect(cache.get(record(1).hash)).toBeDefined();
  });
});
