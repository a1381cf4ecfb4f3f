// The key-store bench (bench/scenarios/keys.mjs) times admin list pages only while they hold
// what the store has: a page with fewer rows than asked while more keys match its filter, or a
// walk that ends early, stops the run. Its records come from the product's one constructor,
// which leaves no field for an encoder to write empty.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { newKeyRecord } from '../../../src/keys/key-record.js';
import { fromStoredRecord, toStoredRecord } from '../../../src/keys/key-record-codec.js';
import { recordFields, pairsToObject } from '../../../src/keys/redis-key-fields.js';

type CheckPage = (label: string, pageNumber: number, rows: number, nextCursor: string | null, seenBefore: number, matching: number) => number;
const { checkPage } = (await import(pathToFileURL(join(process.cwd(), 'bench/scenarios/keys.mjs')).href)) as { checkPage: CheckPage };

describe('the key-store bench refuses pages that hide keys', () => {
  it('accepts full pages, and a short last page that ends the list', () => {
    expect(checkPage('none', 0, 50, 'c1', 0, 120)).toBe(50);
    expect(checkPage('none', 1, 50, 'c2', 50, 120)).toBe(100);
    expect(checkPage('none', 2, 20, null, 100, 120)).toBe(120);
    // A filter that matches nothing answers an empty page and no cursor.
    expect(checkPage('status=expired', 0, 0, null, 0, 0)).toBe(0);
  });

  it('refuses a page with fewer rows than asked while more match (the empty pages of malformed records)', () => {
    expect(() => checkPage('none', 0, 0, 'c1', 0, 10_000)).toThrow('keys: refusing the run: filter none, page 1 returned 0 rows of the 50 asked while 10000 matching keys are not listed yet');
    expect(() => checkPage('agent', 3, 49, 'c4', 150, 1_000)).toThrow(/filter agent, page 4 returned 49 rows of the 50 asked/);
    expect(() => checkPage('none', 2, 10, 'c3', 100, 115)).toThrow(/returned 10 rows of the 15 asked/);
  });

  it('refuses a walk that ends before every matching key was listed', () => {
    expect(() => checkPage('account', 0, 3, null, 0, 5)).toThrow(/returned 3 rows of the 5 asked/);
    expect(() => checkPage('none', 1, 50, null, 50, 150)).toThrow('keys: refusing the run: filter none ended after 100 rows while 150 keys match');
  });
});

describe('newKeyRecord, the one constructor of a new key', () => {
  const record = newKeyRecord({ keyId: 'key_AbCdEfGh12345678', hash: 'a'.repeat(64), account: 'acme', plan: 'pro', agents: ['support'], name: 'svc', createdAt: '2026-12-07T00:00:00.000Z' });

  it('fills every field, empty where a new key has nothing yet', () => {
    expect(record).toEqual({
      keyId: 'key_AbCdEfGh12345678', hash: 'a'.repeat(64), account: 'acme', plan: 'pro', agents: ['support'], name: 'svc', createdAt: '2026-12-07T00:00:00.000Z',
      expiresAt: null, revokedAt: null, lastUsedAt: null, metadata: {}, limits: null, tools: null, mcp: null, replaces: null, replacedBy: null,
    });
  });

  it('writes no empty field in either store\'s layout, and reads back as itself', () => {
    expect(Object.values(pairsToObject(recordFields(record)))).not.toContain('');
    expect(fromStoredRecord(JSON.parse(JSON.stringify(toStoredRecord(record))))).toEqual(record);
  });
});
