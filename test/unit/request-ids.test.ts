import { afterAll, describe, expect, it, vi } from 'vitest';
import { newRequestId, saneClientRequestId } from '../../src/request/request-ids.js';
import { generateApiKey } from '../../src/keys/key-format.js';

// The id generator keeps the latest millisecond it saw, for the whole process, and this file
// moves it centuries ahead: the test worker's later files (vitest.config.ts: a worker keeps its
// process) must not make ids there, so they get the modules afresh (decision 0115).
afterAll(() => vi.resetModules());

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const msOf = (id: string): number => parseInt(id.slice(0, 8) + id.slice(9, 13), 16);

describe('newRequestId (UUIDv7)', () => {
  // The generator keeps the latest millisecond it saw (module state): each test moves the clock forward.
  it('is a lower-case UUIDv7 carrying the given millisecond', () => {
    const now = Date.now();
    for (const ms of [now, now + 1, now + 2 ** 20 + 0.5, now + 2 ** 33]) {
      const id = newRequestId(ms);
      expect(id).toMatch(UUID_V7);
      expect(msOf(id)).toBe(Math.floor(ms));
    }
  });

  it('is strictly increasing within a process, whatever the clock does, and never repeats', () => {
    const base = Date.now() + 2 ** 34;
    const times = [base, base, base + 1, base - 5_000, base + 1, base + 2];
    // 10,000 ids in one millisecond: more than the 12-bit sequence holds, so it moves on to the next millisecond.
    for (let i = 0; i < 10_000; i++) times.push(base + 3);
    const ids = times.map((t) => newRequestId(t));
    for (let i = 1; i < ids.length; i++) expect(ids[i]! > ids[i - 1]!, `${ids[i - 1]} < ${ids[i]}`).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    expect(msOf(ids[0]!)).toBe(base);
    // The clock stepping back does not move ids back.
    expect(msOf(ids[3]!)).toBe(base + 1);
    for (const id of ids) expect(id).toMatch(UUID_V7);
  });
});

describe('saneClientRequestId', () => {
  it('keeps a sane id and refuses anything else', () => {
    expect(saneClientRequestId('abc-123_x.y:z@w')).toBe('abc-123_x.y:z@w');
    for (const bad of [undefined, '', 'a b', 'x'.repeat(129), ['a', 'b'], 'ünïcode', generateApiKey().rawKey, `id-${generateApiKey().rawKey}`]) {
      expect(saneClientRequestId(bad)).toBeUndefined();
    }
  });
});
