// The per-instance copies of MCP session records (src/mcp/session-cache.ts): served for at most
// min(1 s, idle/4) after Redis answered, never kept while invalidations cannot arrive, dropped on
// an end, never kept by a read that began before an invalidation, and bounded in number.
import { describe, expect, it } from 'vitest';
import type { McpSessionRecord } from '../../../src/mcp/mcp-session-record.js';
import { MAX_RECHECK_MS, SessionCache } from '../../../src/mcp/session-cache.js';

const RECORD: McpSessionRecord = { server: 'files', keyId: 'key_1', target: 'http://files/mcp', upstreamSession: 'u1', protocol: '2025-06-18' };

function cacheAt(idleMs = 3_600_000, max?: number) {
  const clock = { now: 1_000_000 };
  const cache = new SessionCache(() => idleMs, () => clock.now, max);
  cache.setLive(true);
  return { cache, clock };
}

describe('SessionCache', () => {
  it('serves a copy for less than 1 s after Redis answered, then asks Redis again', () => {
    const { cache, clock } = cacheAt();
    cache.keep('s1', RECORD, cache.mark);
    expect(cache.fresh('s1')).toEqual(RECORD);
    clock.now += MAX_RECHECK_MS - 1;
    expect(cache.fresh('s1')).toEqual(RECORD);
    clock.now += 1;
    expect(cache.fresh('s1')).toBeUndefined();
  });

  it('under a short idle expiry, serves a copy for a quarter of it (never past the Redis record it copies)', () => {
    const { cache, clock } = cacheAt(400);
    cache.keep('s1', RECORD, cache.mark);
    clock.now += 99;
    expect(cache.fresh('s1')).toEqual(RECORD);
    clock.now += 1;
    expect(cache.fresh('s1')).toBeUndefined();
  });

  it('keeps nothing while not live, and going live or not clears every copy', () => {
    const clock = { now: 0 };
    const cache = new SessionCache(() => 60_000, () => clock.now);
    cache.keep('s1', RECORD, cache.mark);
    expect(cache.fresh('s1')).toBeUndefined();
    expect(cache.size).toBe(0);
    cache.setLive(true);
    cache.keep('s1', RECORD, cache.mark);
    expect(cache.size).toBe(1);
    cache.setLive(false);
    expect(cache.fresh('s1')).toBeUndefined();
    cache.setLive(true);
    expect(cache.fresh('s1')).toBeUndefined();
  });

  it('a read that began before an invalidation does not keep what it read', () => {
    const { cache } = cacheAt();
    const mark = cache.mark;
    cache.forget('s1'); // the session ended while the read was in flight
    cache.keep('s1', RECORD, mark);
    expect(cache.fresh('s1')).toBeUndefined();
    // A read begun after it keeps.
    cache.keep('s1', RECORD, cache.mark);
    expect(cache.fresh('s1')).toEqual(RECORD);
  });

  it('a read that found no record drops the copy, whatever its mark', () => {
    const { cache } = cacheAt();
    cache.keep('s1', RECORD, cache.mark);
    const stale = cache.mark - 5;
    cache.keep('s1', undefined, stale);
    expect(cache.fresh('s1')).toBeUndefined();
  });

  it('holds at most its bound, the least recently read going first', () => {
    const { cache } = cacheAt(3_600_000, 3);
    for (const id of ['a', 'b', 'c']) cache.keep(id, RECORD, cache.mark);
    cache.keep('a', RECORD, cache.mark); // read again: now the newest
    cache.keep('d', RECORD, cache.mark);
    expect(cache.size).toBe(3);
    expect(cache.fresh('b')).toBeUndefined();
    expect(cache.fresh('a')).toEqual(RECORD);
    expect(cache.fresh('c')).toEqual(RECORD);
    expect(cache.fresh('d')).toEqual(RECORD);
  });
});
