/// <reference lib="dom" />
// Dashboard sign-in through the identity provider in a real browser (docs/identity.md
// "Dashboard sign-in"): Debian's Chromium, driven by playwright-core, against a `serve`
// process configured with admin.oidc and a real OpenID provider (oidc-provider, its own login
// and consent pages). A person of the admin group signs in on the provider's login page and
// can write; the admin trail records their sub and email; a person of the viewer group can
// only read; a person in neither group is refused; an admin token still works beside it.
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../../scripts/chromium.mjs';
import { freePort } from '../helpers/free-port.js';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { startGatewayProcess, type GatewayProcess } from '../helpers/gateway-process.js';
import { startTestProvider, type TestProvider } from '../helpers/oidc-provider.js';
import { waitFor } from '../helpers/wait.js';

const ADMIN_TOKEN = `adm-${randomUUID()}`;
const CLIENT_SECRET = `secret-${randomUUID()}`;

let upstream: FakeUpstream;
let provider: TestProvider;
let dir: string;
let gateway: GatewayProcess;
let browser: Promise<{ context: BrowserContext; close(): Promise<void> }> | undefined;

beforeAll(async () => {
  [upstream, dir] = await Promise.all([startFakeUpstream(), mkdtemp(join(tmpdir(), 'agentgw-e2e-oidc-'))]);
  const adminPort = await freePort();
  const adminUrl = `http://127.0.0.1:${adminPort}`;
  provider = await startTestProvider([], {
    clientId: 'agent-gateway',
    clientSecret: CLIENT_SECRET,
    redirectUri: `${adminUrl}/dashboard/oidc/callback`,
    people: {
      alice: { email: 'alice@example.test', groups: ['gateway-admins'] },
      bob: { email: 'bob@example.test', groups: ['gateway-viewers'] },
      carol: { email: 'carol@example.test', groups: ['sales'] },
    },
  });
  gateway = await startGatewayProcess(
    dir,
    'dashboard-oidc',
    {
      admin: {
        tokens: [{ name: 'break-glass', token: ADMIN_TOKEN, role: 'admin' }],
        oidc: {
          issuer: provider.issuer,
          client_id: 'agent-gateway',
          client_secret: CLIENT_SECRET,
          scopes: ['openid', 'email', 'groups'],
          roles: { claim: 'groups', admin: ['gateway-admins'], viewer: ['gateway-viewers'] },
        },
      },
      agents: { support: { upstream: upstream.baseUrl } },
      keys: { file: join(dir, 'keys.json') },
      audit: { file: join(dir, 'audit.jsonl'), spool: join(dir, 'spool.jsonl'), admin_file: join(dir, 'admin-audit.jsonl') },
      shutdown_grace: '1s',
    },
    {},
    { adminPort },
  );
}, 60_000);

afterAll(async () => {
  await (await browser?.catch(() => undefined))?.close();
  await gateway?.stop('SIGKILL');
  await provider?.close();
  await upstream?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function newPage(): Promise<Page> {
  browser ??= launchChromium();
  const { context } = await browser;
  await context.clearCookies();
  return context.newPage();
}

/** From the dashboard's sign-in page through the provider's login and consent pages, back to the dashboard. */
async function signInAs(page: Page, login: string): Promise<void> {
  await page.goto(`${gateway.adminUrl}/dashboard/`);
  await page.getByRole('link', { name: 'Sign in with your identity provider' }).click();
  await page.locator('input[name="login"]').fill(login);
  await page.locator('input[name="password"]').fill('any password');
  await page.locator('button[type="submit"]').click();
  // The provider asks for consent the first time.
  await page.locator('button[type="submit"]').click();
}

/** The page's own session and a write through the API with its CSRF token. */
async function sessionAndWrite(page: Page): Promise<{ name: string; role: string; write: number }> {
  return page.evaluate(async () => {
    const session = (await (await fetch('/dashboard/session')).json()) as { name: string; role: string; csrf_token: string };
    const answer = await fetch('/admin/v1/keys', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-csrf-token': session.csrf_token },
      body: JSON.stringify({ account: 'oidc-made', plan: 'starter', agents: ['support'] }),
    });
    return { name: session.name, role: session.role, write: answer.status };
  });
}

describe('dashboard sign-in through the identity provider', () => {
  it("an admin-group person signs in on the provider's login page, writes, and is in the admin trail by sub and email", async () => {
    const page = await newPage();
    await signInAs(page, 'alice');
    await page.getByRole('heading', { name: 'API Keys' }).waitFor();
    expect(await page.getByRole('button', { name: 'Create key' }).count()).toBe(1);
    expect(await sessionAndWrite(page)).toEqual({ name: 'oidc:alice@example.test', role: 'admin', write: 201 });
    const cookies = await page.context().cookies(gateway.adminUrl);
    expect(cookies.find((cookie) => cookie.name === 'agentgw_session')).toMatchObject({ httpOnly: true, sameSite: 'Strict' });
    const entry = await waitFor('the admin trail entry', async () => {
      const text = await readFile(join(dir, 'admin-audit.jsonl'), 'utf8').catch(() => '');
      return text.split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>).find((e) => e.action === 'key.create');
    }, 10_000);
    expect(entry).toMatchObject({ actor: 'oidc:alice@example.test', actor_sub: 'alice', actor_email: 'alice@example.test' });
    await page.close();
  }, 90_000);

  it('a viewer-group person can read but not write', async () => {
    const page = await newPage();
    await signInAs(page, 'bob');
    await page.getByRole('heading', { name: 'API Keys' }).waitFor();
    await page.getByText('Read only').waitFor();
    expect(await page.getByRole('button', { name: 'Create key' }).count()).toBe(0);
    expect(await sessionAndWrite(page)).toEqual({ name: 'oidc:bob@example.test', role: 'viewer', write: 403 });
    await page.close();
  }, 90_000);

  it('a person in neither group is refused a session', async () => {
    const page = await newPage();
    await signInAs(page, 'carol');
    await page.getByText('no role for this gateway').waitFor();
    const status = await page.evaluate(async () => (await fetch('/dashboard/session')).status);
    expect(status).toBe(401);
    await page.close();
  }, 90_000);

  it('a callback not started in this browser signs nobody in', async () => {
    const answer = await fetch(`${gateway.adminUrl}/dashboard/oidc/callback?code=stolen&state=made-up`);
    expect(answer.status).toBe(401);
    expect(answer.headers.get('set-cookie')).toBeNull();
  });

  it('an admin token still works beside the provider (break-glass)', async () => {
    const answer = await fetch(`${gateway.adminUrl}/admin/v1/keys`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(answer.status).toBe(200);
    const { data } = (await answer.json()) as { data: Array<{ account: string }> };
    expect(data.map((key) => key.account)).toContain('oidc-made');
  });
});
