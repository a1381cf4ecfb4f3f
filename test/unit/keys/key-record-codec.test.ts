import { describe, expect, it } from 'vitest';
import { fromStoredRecord, toStoredRecord } from '../../../src/keys/key-record-codec.js';
import { recordFields, pairsToObject, updatableFields } from '../../../src/keys/redis-key-fields.js';

const stored = {
  key_id: 'key_0000000000000001',
  hash: '1'.padStart(64, '0'),
  account: 'acme',
  plan: 'pro',
  agents: ['support'],
  name: '',
  created_at: '2026-01-01T00:00:00.000Z',
};

describe('a key record tool scope in storage', () => {
  it('reads a record written before tool scopes (no field) or with null as no restriction', () => {
    expect(fromStoredRecord(stored).tools).toBeNull();
    expect(fromStoredRecord({ ...stored, tools: null }).tools).toBeNull();
  });

  it('round-trips a scope, an empty one included, through the stored shape and the Redis hash fields', () => {
    for (const tools of [['search', 'web_search'], []]) {
      const record = fromStoredRecord({ ...stored, tools });
      expect(record.tools).toEqual(tools);
      expect(fromStoredRecord(JSON.parse(JSON.stringify(toStoredRecord(record)))).tools).toEqual(tools);
      const fields = pairsToObject(recordFields(record));
      expect(JSON.parse(fields.tools!)).toEqual(tools);
      expect(updatableFields(record).get('tools')).toBe(JSON.stringify(tools));
    }
    // No scope: no field in the hash, so an update that clears it deletes the field.
    const plain = fromStoredRecord(stored);
    expect(pairsToObject(recordFields(plain)).tools).toBeUndefined();
    expect(updatableFields(plain).has('tools')).toBe(false);
  });

  it('refuses a stored scope that is not a list of strings, naming the key', () => {
    expect(() => fromStoredRecord({ ...stored, tools: 'search' })).toThrow(/tools of key_0000000000000001/);
    expect(() => fromStoredRecord({ ...stored, tools: ['search', 3] })).toThrow(/tools of key_0000000000000001/);
  });
});
