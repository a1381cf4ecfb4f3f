import { describe, expect, it } from 'vitest';
import { hashTagOf, isTaggableKey, keyBeside } from '../../../src/redis/redis-key-layout.js';

describe('hash tags', () => {
  it('reads the hash tag as Redis Cluster does', () => {
    expect(hashTagOf('agentgw:audit')).toBe('agentgw:audit');
    expect(hashTagOf('{agentgw}:audit')).toBe('agentgw');
    expect(hashTagOf('agentgw:rl:{account:acme}:minute')).toBe('account:acme');
    // An empty tag, or an unclosed one, means the whole key is hashed.
    expect(hashTagOf('a{}b')).toBe('a{}b');
    expect(hashTagOf('a{b')).toBe('a{b');
  });

  it('puts a key beside another in its slot', () => {
    expect(keyBeside('agentgw:audit', 'usage:2026-11-24')).toBe('{agentgw:audit}:usage:2026-11-24');
    expect(keyBeside('{gw}:audit', 'usage')).toBe('{gw}:usage');
    for (const key of ['agentgw:audit', '{gw}:audit', 'x{t}y']) expect(hashTagOf(keyBeside(key, 's'))).toBe(hashTagOf(key));
  });

  it('accepts only keys whose slot a tag can name', () => {
    expect(['agentgw:audit', '{gw}:audit', 'a{b}c'].every(isTaggableKey)).toBe(true);
    expect(['a{}b', 'a}b', 'a{b', '{a}{b}'].some(isTaggableKey)).toBe(false);
  });
});
