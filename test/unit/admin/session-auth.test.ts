// The pieces of dashboard request authentication that need no server: reading the cookie,
// the cookie's attributes, and telling a same-origin request from a cross-site one.
import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { isCrossSite } from '../../../src/admin/admin-session-auth.js';
import { clearedSessionCookie, readCookie, sessionCookie, sessionIdOf } from '../../../src/admin/session-cookie.js';

function request(headers: Record<string, string>, encrypted = false): IncomingMessage {
  return { headers, socket: { encrypted } } as unknown as IncomingMessage;
}

describe('session cookie', () => {
  it('reads one cookie among several, and nothing from a missing header', () => {
    expect(readCookie('a=1; agentgw_session=abc_-; b=2', 'agentgw_session')).toBe('abc_-');
    expect(readCookie('agentgw_session_x=1; xagentgw_session=2', 'agentgw_session')).toBeUndefined();
    expect(readCookie(undefined, 'agentgw_session')).toBeUndefined();
    expect(readCookie('garbage;;=;', 'agentgw_session')).toBeUndefined();
  });

  it('is HttpOnly, SameSite=Strict and Path=/, and Secure only over TLS', () => {
    const plain = sessionCookie(request({}), 'id1', 3_600_000);
    expect(plain).toBe('agentgw_session=id1; Max-Age=3600; Path=/; HttpOnly; SameSite=Strict');
    expect(sessionCookie(request({}, true), 'id1', 3_600_000)).toMatch(/; Secure$/);
    expect(clearedSessionCookie(request({}))).toBe('agentgw_session=; Max-Age=0; Path=/; HttpOnly; SameSite=Strict');
  });

  it('over TLS: Secure and the __Host- prefix, read back under that name only (issue 33)', () => {
    expect(sessionCookie(request({}, true), 'id1', 3_600_000)).toBe('__Host-agentgw_session=id1; Max-Age=3600; Path=/; HttpOnly; SameSite=Strict; Secure');
    expect(clearedSessionCookie(request({}, true))).toBe('__Host-agentgw_session=; Max-Age=0; Path=/; HttpOnly; SameSite=Strict; Secure');
    expect(sessionIdOf(request({ cookie: '__Host-agentgw_session=tls-id' }, true))).toBe('tls-id');
    // A cookie without the prefix (plantable over plain HTTP) is not read over TLS.
    expect(sessionIdOf(request({ cookie: 'agentgw_session=planted' }, true))).toBeUndefined();
  });
});

describe('isCrossSite', () => {
  const host = { host: '127.0.0.1:9090' };
  it('accepts same-origin requests and requests without either header', () => {
    expect(isCrossSite(request({ ...host }))).toBe(false);
    expect(isCrossSite(request({ ...host, origin: 'http://127.0.0.1:9090', 'sec-fetch-site': 'same-origin' }))).toBe(false);
    // Behind a TLS-terminating proxy the scheme differs; the host is what matters.
    expect(isCrossSite(request({ ...host, origin: 'https://127.0.0.1:9090' }))).toBe(false);
  });

  it('refuses another origin, a same-site or cross-site fetch, and an opaque origin', () => {
    expect(isCrossSite(request({ ...host, origin: 'http://evil.example' }))).toBe(true);
    expect(isCrossSite(request({ ...host, origin: 'http://127.0.0.1:9091' }))).toBe(true);
    expect(isCrossSite(request({ ...host, 'sec-fetch-site': 'cross-site' }))).toBe(true);
    expect(isCrossSite(request({ ...host, 'sec-fetch-site': 'same-site' }))).toBe(true);
    expect(isCrossSite(request({ ...host, origin: 'null' }))).toBe(true);
  });
});
