// The dashboard on the admin listener (docs/dashboard.md), the gateway in process: the built
// page and its assets with the security headers, no path outside the build, sign-in
// sessions, the admin API over a session cookie with CSRF protection on writes, viewers,
// idle timeout and lifetime (injected clock), sign-out, and a token removed on reload.
// Admin answers are checked against openapi/admin.yaml.
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { get } from 'node:http';
import { connect } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DASHBOARD_CSP } from '../../src/admin/dashboard-headers.js';
import type { Clock } from '../../src/clock.js';
import { parseConfig } from '../../src/config/load-config.js';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { OpenApiCheck, type CheckedAnswer } from '../helpers/openapi-check.js';
import { collectKeys } from '../../src/keys/key-pages.js';

const ADMIN_TOKEN = `adm-${randomUUID()}`;
const VIEWER_TOKEN = `view-${randomUUID()}`;
const MINUTE_MS = 60_000;
const admin = new OpenApiCheck('admin');

let upstream: FakeUpstream;
let gw: TestGateway | undefined;
let nowMs = Date.now();
const clock: Clock = { now: () => nowMs };

beforeAll(async () => {
  upstream = await startFakeUpstream();
});
afterAll(async () => {
  await upstream?.close();
});
afterEach(async () => {
  await gw?.close();
  gw = undefined;
});

const TOKENS = [
  { name: 'ops', token: ADMIN_TOKEN, role: 'admin' },
  { name: 'watcher', token: VIEWER_TOKEN, role: 'viewer' },
];

async function start(tokens: unknown[] = TOKENS, extraAdmin: Record<string, unknown> = {}): Promise<TestGateway> {
  nowMs = Date.now();
  gw = await startTestGateway({ agents: { support: upstream.baseUrl }, clock, config: { admin: { host: '127.0.0.1', port: 0, tokens, ...extraAdmin } } });
  return gw;
}

interface Session {
  cookie: string;
  csrf: string;
  setCookie: string;
}

async function signIn(g: TestGateway, token = ADMIN_TOKEN): Promise<Session> {
  const answer = await admin.fetch(`${g.adminUrl}/dashboard/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token }) });
  expect(answer.status, answer.text).toBe(201);
  const setCookie = answer.headers.get('set-cookie')!;
  return { cookie: setCookie.split(';')[0]!, csrf: (answer.body as { csrf_token: string }).csrf_token, setCookie };
}

function withSession(g: TestGateway, session: Session, method: string, path: string, options: { csrf?: string | null; body?: unknown; headers?: Record<string, string> } = {}): Promise<CheckedAnswer> {
  const headers: Record<string, string> = { cookie: session.cookie, ...options.headers };
  const csrf = options.csrf === undefined ? session.csrf : options.csrf;
  if (csrf !== null) headers['x-csrf-token'] = csrf;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  return admin.fetch(`${g.adminUrl}${path}`, { method, headers, body: options.body === undefined ? undefined : JSON.stringify(options.body) });
}

const newKey = { account: 'acme', plan: 'starter', agents: ['support'] };

/** A raw request line (fetch and URL normalise `..` away before sending). */
function rawGet(port: number, target: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(`GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`));
    let text = '';
    socket.on('data', (c: Buffer) => (text += c.toString('latin1')));
    socket.on('end', () => resolve(text));
    socket.on('error', reject);
  });
}

/** Bytes on the wire (gzip accepted, as browsers do) of one asset. */
function gzippedBytes(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    get(url, { headers: { 'accept-encoding': 'gzip, deflate, br' } }, (res) => {
      let bytes = 0;
      res.on('data', (c: Buffer) => (bytes += c.length));
      res.on('end', () => resolve(res.headers['content-encoding'] === 'gzip' ? bytes : Number.NaN));
    }).on('error', reject);
  });
}

/** The JavaScript budget of the first page load (docs/dashboard.md "Size"). */
const FIRST_LOAD_JS_BUDGET_BYTES = 150 * 1024;

function expectSecurityHeaders(headers: Headers): void {
  expect(headers.get('content-security-policy')).toBe(DASHBOARD_CSP);
  expect(headers.get('x-frame-options')).toBe('DENY');
  expect(headers.get('x-content-type-options')).toBe('nosniff');
  expect(headers.get('referrer-policy')).toBe('no-referrer');
}

describe('dashboard pages', () => {
  it('answers 404 everywhere under /dashboard when no admin token is configured', async () => {
    const g = await start([]);
    for (const path of ['/dashboard', '/dashboard/', '/dashboard/session', '/dashboard/assets/x.js']) {
      const answer = await fetch(`${g.adminUrl}${path}`, { redirect: 'manual' });
      expect([path, answer.status]).toEqual([path, 404]);
      expectSecurityHeaders(answer.headers);
      expect(((await answer.json()) as { error: { type: string } }).error.type).toBe('not_found');
    }
    const signIn = await fetch(`${g.adminUrl}/dashboard/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: ADMIN_TOKEN }) });
    expect(signIn.status).toBe(404);
    expect(signIn.headers.get('set-cookie')).toBeNull();
  });

  it('serves the built page and its assets with a strict CSP, and nothing else', async () => {
    const g = await start();
    const redirect = await fetch(`${g.adminUrl}/dashboard`, { redirect: 'manual' });
    expect([redirect.status, redirect.headers.get('location')]).toEqual([308, '/dashboard/']);
    const page = await fetch(`${g.adminUrl}/dashboard/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expectSecurityHeaders(page.headers);
    const html = await page.text();
    expect(html).toBe(await readFile('dist/dashboard/index.html', 'utf8'));
    // No inline script or style: every script has a src and there is no <style> block.
    const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    expect(scripts.length).toBeGreaterThan(0);
    for (const [, attributes, body] of scripts) {
      expect(attributes).toMatch(/\bsrc="\/dashboard\/assets\/[^"]+\.js"/);
      expect(body!.trim()).toBe('');
    }
    expect(html).not.toMatch(/<style\b|\sstyle="/);
    const assetPaths = [...html.matchAll(/(?:src|href)="(\/dashboard\/[^"]+)"/g)].map((m) => m[1]!);
    expect(assetPaths.some((p) => p.endsWith('.css'))).toBe(true);
    for (const path of assetPaths) {
      const asset = await fetch(`${g.adminUrl}${path}`);
      expect([path, asset.status]).toEqual([path, 200]);
      expectSecurityHeaders(asset.headers);
      if (path.startsWith('/dashboard/assets/')) expect(asset.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
      if (path.endsWith('.js')) expect(asset.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
      if (path.endsWith('.css')) expect(asset.headers.get('content-type')).toBe('text/css; charset=utf-8');
    }
    const missing = await fetch(`${g.adminUrl}/dashboard/assets/nope.js`);
    expect(missing.status).toBe(404);
    expectSecurityHeaders(missing.headers);
    expect((await fetch(`${g.adminUrl}/dashboard/`, { method: 'POST' })).status).toBe(405);
  });

  it('loads under 150 KB of JavaScript, gzipped, on the first page', async () => {
    const g = await start();
    const html = await (await fetch(`${g.adminUrl}/dashboard/`)).text();
    const scripts = [...html.matchAll(/<(?:script|link)\b[^>]*(?:src|href)="(\/dashboard\/[^"]+\.js)"/g)].map((m) => m[1]!);
    expect(scripts.length).toBeGreaterThan(0);
    let total = 0;
    for (const path of scripts) total += await gzippedBytes(`${g.adminUrl}${path}`);
    expect(total).toBeGreaterThan(0);
    expect(total).toBeLessThan(FIRST_LOAD_JS_BUDGET_BYTES);
  });

  it('never answers with a file outside the build, however the path is spelled', async () => {
    const g = await start();
    const packageJson = await readFile('package.json', 'utf8');
    for (const target of [
      '/dashboard/../package.json',
      '/dashboard/../../package.json',
      '/dashboard/assets/../../../package.json',
      '/dashboard/..%2f..%2fpackage.json',
      '/dashboard/%2e%2e/%2e%2e/package.json',
      '/dashboard/assets/..%2F..%2F..%2Fpackage.json',
      '/dashboard/..\\..\\package.json',
      '/dashboard//etc/passwd',
      '/dashboard/%00index.html',
      '/dashboard/index.html%00.js',
    ]) {
      const answer = await rawGet(g.running.adminPort!, target);
      expect([target, answer.split('\r\n')[0]]).toEqual([target, 'HTTP/1.1 404 Not Found']);
      expect(answer).not.toContain('"devDependencies"');
      expect(answer).not.toContain(packageJson.slice(0, 40));
      expect(answer).not.toContain('root:');
    }
  });
});

describe('dashboard sessions', () => {
  it('signs in with an admin token: HttpOnly SameSite=Strict cookie, no token in the answer', async () => {
    const g = await start();
    const session = await signIn(g);
    expect(session.setCookie).toMatch(/^agentgw_session=[A-Za-z0-9_-]{43}; Max-Age=43200; Path=\/; HttpOnly; SameSite=Strict$/);
    const shown = await withSession(g, session, 'GET', '/dashboard/session');
    expect(shown.status).toBe(200);
    expect(shown.body).toMatchObject({ name: 'ops', role: 'admin', csrf_token: session.csrf });
    expect(shown.text).not.toContain(ADMIN_TOKEN);
    expect(shown.headers.get('cache-control')).toBe('no-store');
    expectSecurityHeaders(shown.headers);
    const keys = await withSession(g, session, 'GET', '/admin/v1/keys');
    expect(keys.status).toBe(200);
    expect(keys.headers.get('cache-control')).toBe('no-store');
    expect(g.logs.join('')).not.toContain(ADMIN_TOKEN);
  });

  it('refuses a wrong token, a malformed body and a sign-in from another site, without a cookie', async () => {
    const g = await start();
    const post = (body: string, headers: Record<string, string> = {}) =>
      admin.fetch(`${g.adminUrl}/dashboard/session`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    const wrong = await post(JSON.stringify({ token: `${ADMIN_TOKEN}x` }));
    expect([wrong.status, (wrong.body as { error: { type: string } }).error.type]).toEqual([401, 'invalid_admin_token']);
    const malformed = await post(JSON.stringify({ token: ADMIN_TOKEN, extra: 1 }));
    expect([malformed.status, (malformed.body as { error: { param: string } }).error.param]).toEqual([400, 'extra']);
    const crossSite = await post(JSON.stringify({ token: ADMIN_TOKEN }), { origin: 'http://evil.example' });
    expect([crossSite.status, (crossSite.body as { error: { type: string } }).error.type]).toEqual([403, 'csrf_token_invalid']);
    for (const answer of [wrong, malformed, crossSite]) expect(answer.headers.get('set-cookie')).toBeNull();
    const anonymous = await admin.fetch(`${g.adminUrl}/dashboard/session`);
    expect([anonymous.status, (anonymous.body as { error: { type: string } }).error.type]).toEqual([401, 'missing_admin_token']);
  });

  it('refuses a session write without the CSRF token, with a wrong one, or from another site; writes nothing', async () => {
    const g = await start();
    const session = await signIn(g);
    const count = async () => (await collectKeys(g.running.keyStore)).length;
    const refusals = [
      await withSession(g, session, 'POST', '/admin/v1/keys', { csrf: null, body: newKey }),
      await withSession(g, session, 'POST', '/admin/v1/keys', { csrf: `${session.csrf.slice(0, -1)}${session.csrf.endsWith('A') ? 'B' : 'A'}`, body: newKey }),
      await withSession(g, session, 'POST', '/admin/v1/keys', { csrf: '', body: newKey }),
      await withSession(g, session, 'POST', '/admin/v1/keys', { body: newKey, headers: { origin: 'http://evil.example' } }),
      await withSession(g, session, 'POST', '/admin/v1/keys', { body: newKey, headers: { 'sec-fetch-site': 'cross-site' } }),
    ];
    for (const answer of refusals) expect([answer.status, (answer.body as { error: { type: string } }).error.type]).toEqual([403, 'csrf_token_invalid']);
    expect(await count()).toBe(0);
    const created = await withSession(g, session, 'POST', '/admin/v1/keys', { body: newKey, headers: { origin: g.adminUrl, 'sec-fetch-site': 'same-origin' } });
    expect(created.status, created.text).toBe(201);
    expect(await count()).toBe(1);
    const keyId = (created.body as { key_id: string }).key_id;
    const patchNoCsrf = await withSession(g, session, 'PATCH', `/admin/v1/keys/${keyId}`, { csrf: null, body: { name: 'x' } });
    expect(patchNoCsrf.status).toBe(403);
    const revokeNoCsrf = await withSession(g, session, 'POST', `/admin/v1/keys/${keyId}/revoke`, { csrf: null });
    expect(revokeNoCsrf.status).toBe(403);
    expect((await collectKeys(g.running.keyStore))[0]).toMatchObject({ name: '', revokedAt: null });
    // The admin audit trail (written before the answer) names the token the session was opened with.
    const trail = (await readFile(g.config.audit.adminFile!, 'utf8')).trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(trail).toEqual([expect.objectContaining({ actor: 'ops', action: 'key.create', key_id: keyId })]);
  });

  it('gives a viewer reads only: a write with a valid CSRF token is 403 insufficient_role', async () => {
    const g = await start();
    const session = await signIn(g, VIEWER_TOKEN);
    expect((await withSession(g, session, 'GET', '/dashboard/session')).body).toMatchObject({ role: 'viewer', name: 'watcher' });
    expect((await withSession(g, session, 'GET', '/admin/v1/keys')).status).toBe(200);
    const write = await withSession(g, session, 'POST', '/admin/v1/keys', { body: newKey });
    expect([write.status, (write.body as { error: { type: string } }).error.type]).toEqual([403, 'insufficient_role']);
    expect(await collectKeys(g.running.keyStore)).toHaveLength(0);
  });

  it('ends a session after the idle timeout and after its lifetime (config keys)', async () => {
    const g = await start(TOKENS, { session_idle_timeout: '10m', session_max_age: '1h' });
    const idle = await signIn(g);
    nowMs += 9 * MINUTE_MS;
    expect((await withSession(g, idle, 'GET', '/admin/v1/keys')).status).toBe(200);
    nowMs += 9 * MINUTE_MS;
    expect((await withSession(g, idle, 'GET', '/admin/v1/keys')).status).toBe(200);
    nowMs += 10 * MINUTE_MS;
    const ended = await withSession(g, idle, 'GET', '/admin/v1/keys');
    expect([ended.status, (ended.body as { error: { type: string } }).error.type]).toEqual([401, 'invalid_admin_token']);

    const busy = await signIn(g);
    for (let i = 0; i < 6; i++) {
      nowMs += 9 * MINUTE_MS;
      expect((await withSession(g, busy, 'GET', '/dashboard/session')).status).toBe(200);
    }
    nowMs += 7 * MINUTE_MS;
    expect((await withSession(g, busy, 'GET', '/dashboard/session')).status).toBe(401);
  });

  it('signs out: needs the CSRF token while live, then the session is gone and the cookie cleared', async () => {
    const g = await start();
    const session = await signIn(g);
    const refused = await withSession(g, session, 'DELETE', '/dashboard/session', { csrf: null });
    expect(refused.status).toBe(403);
    expect((await withSession(g, session, 'GET', '/dashboard/session')).status).toBe(200);
    const out = await withSession(g, session, 'DELETE', '/dashboard/session');
    expect(out.status).toBe(204);
    expect(out.headers.get('set-cookie')).toBe('agentgw_session=; Max-Age=0; Path=/; HttpOnly; SameSite=Strict');
    expect((await withSession(g, session, 'GET', '/admin/v1/keys')).status).toBe(401);
  });

  it('ends the sessions of an admin token removed by a reload; a bearer token still wins over a cookie', async () => {
    const g = await start();
    const ops = await signIn(g);
    const watcher = await signIn(g, VIEWER_TOKEN);
    // With a bearer token the cookie is not consulted: the viewer's cookie does not downgrade it.
    const bearer = await admin.fetch(`${g.adminUrl}/admin/v1/keys`, {
      method: 'POST',
      headers: { cookie: watcher.cookie, authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(newKey),
    });
    expect(bearer.status).toBe(201);
    const document = { agents: { support: { upstream: upstream.baseUrl } }, admin: { tokens: [TOKENS[1]] }, keys: { file: g.config.keys.file } };
    g.running.reload(parseConfig(document, 'reload', {}));
    expect((await withSession(g, ops, 'GET', '/admin/v1/keys')).status).toBe(401);
    expect((await withSession(g, watcher, 'GET', '/admin/v1/keys')).status).toBe(200);
  });
});
