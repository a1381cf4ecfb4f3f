import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { parseTrustProxy, type TrustProxy } from '../../../src/config/trust-proxy.js';
import { clientAddress, entryAddress } from '../../../src/http/client-address.js';

function trust(setting: unknown): TrustProxy {
  const parsed = parseTrustProxy(setting);
  if (!('trust' in parsed)) throw new Error(parsed.problems.join('; '));
  return parsed.trust;
}

function request(peer: string | undefined, forwardedFor?: string): IncomingMessage {
  return { socket: { remoteAddress: peer }, headers: forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor } } as unknown as IncomingMessage;
}

const of = (setting: unknown, peer: string | undefined, xff?: string) => clientAddress(request(peer, xff), trust(setting));

describe('clientAddress', () => {
  it('ignores X-Forwarded-For without trust_proxy (false, 0, [])', () => {
    for (const setting of [false, 0, []]) {
      expect(of(setting, '::ffff:192.0.2.9', '203.0.113.1, 198.51.100.2')).toEqual({ clientIp: '192.0.2.9', forwardedFor: '192.0.2.9' });
    }
  });

  it('true is one hop: the rightmost entry is the client, whatever the client wrote to its left', () => {
    expect(of(true, '10.0.0.2', 'forged, 203.0.113.66, 198.51.100.7')).toEqual({ clientIp: '198.51.100.7', forwardedFor: '198.51.100.7, 10.0.0.2' });
    expect(of(true, '10.0.0.2', ' 198.51.100.7 ')).toEqual({ clientIp: '198.51.100.7', forwardedFor: '198.51.100.7, 10.0.0.2' });
    expect(of(true, '10.0.0.2')).toEqual({ clientIp: '10.0.0.2', forwardedFor: '10.0.0.2' });
  });

  it('a hop count n takes the n-th entry from the right, or the leftmost of a shorter chain', () => {
    expect(of(2, '10.0.0.2', '1.1.1.1, 198.51.100.7, 10.0.0.3')).toEqual({ clientIp: '198.51.100.7', forwardedFor: '198.51.100.7, 10.0.0.3, 10.0.0.2' });
    expect(of(3, '10.0.0.2', '198.51.100.7, 10.0.0.3')).toEqual({ clientIp: '198.51.100.7', forwardedFor: '198.51.100.7, 10.0.0.3, 10.0.0.2' });
  });

  it('a list skips trusted proxies from the right (IPv4 and IPv6 ranges) and needs the peer on it', () => {
    const list = ['10.0.0.0/8', '2001:db8::/32', '127.0.0.1'];
    expect(of(list, '127.0.0.1', '1.1.1.1, 198.51.100.7, 10.1.2.3, 2001:db8::5')).toEqual({ clientIp: '198.51.100.7', forwardedFor: '198.51.100.7, 10.1.2.3, 2001:db8::5, 127.0.0.1' });
    expect(of(list, '::ffff:10.9.9.9', '2001:db9::1')).toEqual({ clientIp: '2001:db9::1', forwardedFor: '2001:db9::1, 10.9.9.9' });
    // A peer that is not one of our proxies: its header is the client's own, not believed.
    expect(of(list, '192.0.2.1', '10.1.2.3, 198.51.100.7')).toEqual({ clientIp: '192.0.2.1', forwardedFor: '192.0.2.1' });
    // Nothing but proxies: the leftmost.
    expect(of(list, '127.0.0.1', '10.0.0.7, 10.0.0.8')).toEqual({ clientIp: '10.0.0.7', forwardedFor: '10.0.0.7, 10.0.0.8, 127.0.0.1' });
  });

  it('stops at an entry that is not an address: the client is the last address a trusted hop wrote', () => {
    expect(of(true, '10.0.0.2', 'evil"json')).toEqual({ clientIp: '10.0.0.2', forwardedFor: '10.0.0.2' });
    expect(of(2, '10.0.0.2', '198.51.100.7, , 10.0.0.3')).toEqual({ clientIp: '10.0.0.3', forwardedFor: '10.0.0.3, 10.0.0.2' });
    expect(of(['127.0.0.1'], '127.0.0.1', '999.1.1.1')).toEqual({ clientIp: '127.0.0.1', forwardedFor: '127.0.0.1' });
    expect(of(true, undefined, '198.51.100.7')).toEqual({ clientIp: '198.51.100.7', forwardedFor: '198.51.100.7, unknown' });
  });

  it('reads entries with ports and brackets as their address', () => {
    expect(entryAddress('198.51.100.7:8443')).toBe('198.51.100.7');
    expect(entryAddress('[2001:db8::1]:443')).toBe('2001:db8::1');
    expect(entryAddress(' 2001:db8::1 ')).toBe('2001:db8::1');
    expect(entryAddress('::ffff:198.51.100.7')).toBe('198.51.100.7');
    for (const bad of ['', 'unknown', '[2001:db8::1', '1.2.3', 'a:b']) expect(entryAddress(bad)).toBeUndefined();
  });
});

describe('parseTrustProxy', () => {
  it('explains what it takes', () => {
    for (const [setting, pattern] of [
      ['yes', /got "yes"; expected false, true/],
      [-1, /-1 is not a hop count/],
      [33, /33 is not a hop count/],
      [1.5, /1\.5 is not a hop count/],
      [['10.0.0.0/33'], /"10\.0\.0\.0\/33": the prefix length after "\/" must be 0 to 32/],
      [['fd00::/129'], /must be 0 to 128 for an IPv6 range/],
      [['proxy.internal'], /"proxy\.internal" is not an IP address or CIDR range/],
      [[7], /entry 0 is 7, not a string/],
    ] as Array<[unknown, RegExp]>) {
      const parsed = parseTrustProxy(setting);
      expect('problems' in parsed && parsed.problems.join('; '), JSON.stringify(setting)).toMatch(pattern);
    }
  });
});
