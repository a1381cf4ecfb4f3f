/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
// The dashboard in a real browser (docs/dashboard.md): Debian's Chromium, driven by
// playwright-core, against a `serve` process with a real upstream. An operator signs in,
// creates a key and reads it off the page, calls the public route with it, re-scopes,
// rotates and revokes it and sees the route follow each change, finds a known number of
// requests on the Usage page, and looks at the agents; a viewer gets no write controls and a
// forced write is refused; keyboard focus around the key dialogs never drops to <body>.
// Every request the page makes stays on the gateway's origin, the CSP header is the strict
// one and no CSP violation is reported; a write without the CSRF token is refused. Every
// page and dialog photographed also has its text checked for AA contrast. Screenshots of
// each page go to var/test-artifacts/dashboard/.
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../../scripts/chromium.mjs';
import { DASHBOARD_CSP } from '../../src/admin/dashboard-headers.js';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { postChat } from '../helpers/gateway.js';
import { startGatewayProcess, type GatewayProcess } from '../helpers/gateway-process.js';
import { lowContrastText } from '../helpers/text-contrast.js';
import { unlabelledControls } from '../helpers/unlabelled-controls.js';

const ADMIN_TOKEN = `adm-${randomUUID()}`;
const VIEWER_TOKEN = `view-${randomUUID()}`;
const ARTIFACTS = join(process.cwd(), 'var/test-artifacts/dashboard');
const USAGE_REQUESTS = 7;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let upstream: FakeUpstream;
let dir: string;
let gateway: GatewayProcess;
let browser: Promise<{ context: BrowserContext; close(): Promise<void> }> | undefined;
/** Every URL the browser asked for, and every console message about the CSP. */
const requested: string[] = [];
const cspViolations: string[] = [];

beforeAll(async () => {
  [upstream, dir] = await Promise.all([startFakeUpstream(), mkdtemp(join(tmpdir(), 'agentgw-e2e-dashboard-'))]);
  await mkdir(ARTIFACTS, { recursive: true });
  gateway = await startGatewayProcess(dir, 'dashboard', {
    admin: {
      tokens: [
        { name: 'ops', token: ADMIN_TOKEN, role: 'admin' },
        { name: 'watcher', token: VIEWER_TOKEN, role: 'viewer' },
      ],
    },
    agents: { support: { upstream: upstream.baseUrl }, sales: { upstream: upstream.baseUrl } },
    keys: { file: join(dir, 'keys.json') },
    audit: { file: join(dir, 'audit.jsonl'), spool: join(dir, 'spool.jsonl'), admin_file: join(dir, 'admin-audit.jsonl'), usage_dir: join(dir, 'usage') },
    // Each answer of the fake runner (5 tokens) costs $0.00005: the Usage page charts it.
    pricing: { default: 0.01 },
    shutdown_grace: '1s',
  });
}, 60_000);

/**
 * A new page in the shared browser, launched on first use inside a test: without Chromium
 * every test here fails with the reason (a failing beforeAll would only mark them skipped).
 */
async function newPage(): Promise<Page> {
  browser ??= launchChromium().then((launched) => {
    launched.context.on('request', (request) => requested.push(request.url()));
    launched.context.on('console', (message) => {
      if (/Content[- ]Security[- ]Policy/i.test(message.text())) cspViolations.push(message.text());
    });
    return launched;
  });
  return (await browser).context.newPage();
}

afterAll(async () => {
  await (await browser?.catch(() => undefined))?.close();
  await gateway?.stop('SIGKILL');
  await upstream?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function signIn(page: Page, token: string): Promise<void> {
  // Each test starts signed out, whatever the one before left behind.
  await page.context().clearCookies();
  const response = await page.goto(`${gateway.adminUrl}/dashboard/`);
  expect(response!.status()).toBe(200);
  expect(response!.headers()['content-security-policy']).toBe(DASHBOARD_CSP);
  expect(response!.headers()['x-frame-options']).toBe('DENY');
  await page.getByLabel('Admin token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'API Keys' }).waitFor();
}

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
}

function chat(key: string, agent: string): Promise<Response> {
  return postChat(gateway.url, `/agents/${agent}/api/v1/chat`, key, { message: 'hi' });
}

/** Polls the public route until it answers `status` (changes reach the gateway within 1 s). */
async function expectChatStatus(key: string, agent: string, status: number): Promise<void> {
  const deadline = Date.now() + 3_000;
  let last = 0;
  while (Date.now() < deadline) {
    last = (await chat(key, agent)).status;
    if (last === status) return;
    await sleep(50);
  }
  expect(`${agent}: ${last}`).toBe(`${agent}: ${status}`);
}

/**
 * Hovers the usage chart's latest hour and reads its legend value. Switching the chart's
 * measure rebuilds its plot, so the plot area may be detached or not laid out for a moment
 * (no bounding box): the caller polls this, and each try finds the plot afresh.
 */
async function hoverLatestHour(page: Page): Promise<string> {
  const box = await page.locator('[data-testid=usage-chart] .u-over').boundingBox();
  if (box === null) return 'the plot area is not laid out';
  await page.mouse.move(box.x + box.width - 2, box.y + box.height / 2);
  return (await page.locator('[data-testid=usage-chart] .u-legend .u-series').nth(1).locator('.u-value').textContent()) ?? 'no legend value';
}

function row(page: Page, keyId: string) {
  return page.locator(`tr[data-key-id="${keyId}"]`);
}

/**
 * What has keyboard focus, in words: "body" when it was lost, "row <key id>" for a key's
 * row, else the element's tag and name ("button Copy", "h1 API Keys", "input name").
 */
async function focused(page: Page): Promise<string> {
  return page.evaluate(() => {
    const el = document.activeElement;
    if (!el || el === document.body) return 'body';
    if (el.matches('tr[data-key-id]')) return `row ${el.getAttribute('data-key-id')}`;
    return `${el.tagName.toLowerCase()} ${el.getAttribute('aria-label') ?? el.getAttribute('name') ?? el.textContent?.trim()}`;
  });
}

/**
 * Lets Chromium run its rendering steps (two frames, then a task): it moves focus off a
 * control that became disabled there, not at once. Focus is checked after this, not raced.
 */
async function afterRendering(page: Page): Promise<void> {
  await page.evaluate(() => new Promise<void>((resolve) => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(resolve, 0)))));
}

/**
 * Lets the test hold the page's next request to a URL matching `glob` (holdNext), for as
 * long as it needs a busy state on screen. One route for the page's life: routing on and
 * off between steps switches Chromium's request interception on and off each time.
 */
async function requestGate(page: Page, glob: string): Promise<{ holdNext(): { received: Promise<void>; release(): void } }> {
  let next: { arrived(): void; released: Promise<void> } | undefined;
  await page.route(glob, async (route) => {
    const hold = next;
    next = undefined;
    if (hold) {
      hold.arrived();
      await hold.released;
    }
    await route.continue();
  });
  return {
    holdNext() {
      let arrived!: () => void;
      let release!: () => void;
      const received = new Promise<void>((resolve) => (arrived = resolve));
      next = { arrived, released: new Promise<void>((resolve) => (release = resolve)) };
      return { received, release };
    },
  };
}

describe('dashboard in Chromium', () => {
  it('an admin manages a key end to end and finds its usage', async () => {
    const page = await newPage();
    const response = await page.goto(`${gateway.adminUrl}/dashboard/`);
    expect(response!.headers()['content-security-policy']).toBe(DASHBOARD_CSP);
    await page.getByLabel('Admin token').waitFor();
    await shot(page, 'sign-in');
    expect(await lowContrastText(page)).toEqual([]);
    // A wrong token is refused on the page.
    await page.getByLabel('Admin token').fill('not-the-token-0000');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('not valid');
    await signIn(page, ADMIN_TOKEN);
    await page.getByText('No keys yet.').waitFor();
    expect(await unlabelledControls(page)).toEqual([]);
    expect(await lowContrastText(page)).toEqual([]);

    // Create a key; the raw key is on the page once, with the warning.
    await page.getByRole('button', { name: 'Create key' }).click();
    const dialog = page.getByRole('dialog', { name: 'Create key' });
    await dialog.getByLabel('Account').fill('acme');
    await dialog.getByLabel('Name (optional)').fill('acme production');
    await dialog.getByLabel('Plan').selectOption('starter');
    await dialog.getByRole('checkbox', { name: 'support' }).check();
    expect(await unlabelledControls(page)).toEqual([]);
    await shot(page, 'create-key');
    expect(await lowContrastText(page)).toEqual([]);
    await dialog.getByRole('button', { name: 'Create key' }).click();
    const created = page.getByRole('dialog', { name: 'Key created' });
    await created.getByText('You will not see it again.').waitFor();
    // The form (and the focused submit button) gave way to the raw key in the same dialog:
    // focus is on Copy, not lost to <body> while the modal is open.
    expect(await focused(page)).toBe('button Copy');
    const rawKey = await created.getByTestId('raw-key').inputValue();
    expect(rawKey).toMatch(/^ha_[0-9A-Za-z]{38}$/);
    await shot(page, 'key-created');
    expect(await lowContrastText(page)).toEqual([]);
    await created.getByRole('button', { name: 'I have copied it' }).click();
    await created.waitFor({ state: 'detached' });
    expect(await focused(page)).toBe('button Create key');
    const keyId = (await page.locator('tr[data-key-id]').first().getAttribute('data-key-id'))!;
    await expect.poll(() => row(page, keyId).textContent()).toContain('acme production');
    expect(await row(page, keyId).textContent()).toContain('active');

    // The key works on the public route, for its agent only.
    expect((await chat(rawKey, 'support')).status).toBe(200);
    expect((await chat(rawKey, 'sales')).status).toBe(401);

    // Edit its scope: sales instead of support.
    await row(page, keyId).getByRole('button', { name: `Edit ${keyId}` }).click();
    const edit = page.getByRole('dialog');
    await edit.getByRole('checkbox', { name: 'support' }).uncheck();
    await edit.getByRole('checkbox', { name: 'sales' }).check();
    await edit.getByRole('button', { name: 'Save changes' }).click();
    await expect.poll(() => row(page, keyId).locator('td').nth(3).textContent()).toBe('sales');
    await edit.waitFor({ state: 'detached' });
    expect(await focused(page)).toBe(`button Edit ${keyId}`);
    await expectChatStatus(rawKey, 'sales', 200);
    await expectChatStatus(rawKey, 'support', 401);

    // Limit its tools (docs/policy.md, "Tool scope on keys"): the row shows the scope, and a
    // request naming another tool is refused.
    await row(page, keyId).getByRole('button', { name: `Edit ${keyId}` }).click();
    const scopeEdit = page.getByRole('dialog');
    expect(await scopeEdit.getByLabel(/^Tool scope/).inputValue()).toBe('');
    await scopeEdit.getByLabel(/^Tool scope/).fill('search, files');
    expect(await unlabelledControls(page)).toEqual([]);
    await shot(page, 'edit-key-tools');
    expect(await lowContrastText(page)).toEqual([]);
    await scopeEdit.getByRole('button', { name: 'Save changes' }).click();
    await expect.poll(() => row(page, keyId).locator('.key-tools').textContent()).toBe('tools: search, files');
    await scopeEdit.waitFor({ state: 'detached' });
    await expect.poll(async () => (await postChat(gateway.url, '/agents/sales/api/v1/chat', rawKey, { message: 'hi', tools: ['web_search'] })).status, { timeout: 3_000 }).toBe(400);
    expect((await postChat(gateway.url, '/agents/sales/api/v1/chat', rawKey, { message: 'hi', tools: ['files'] })).status).toBe(200);
    // Emptied, the scope is removed.
    await row(page, keyId).getByRole('button', { name: `Edit ${keyId}` }).click();
    const unscope = page.getByRole('dialog');
    expect(await unscope.getByLabel(/^Tool scope/).inputValue()).toBe('search, files');
    await unscope.getByLabel(/^Tool scope/).fill('');
    await unscope.getByRole('button', { name: 'Save changes' }).click();
    await expect.poll(() => row(page, keyId).locator('.key-tools').count()).toBe(0);
    await unscope.waitFor({ state: 'detached' });

    // Rotate, ending the old key now: the old key is refused, the new one works.
    await row(page, keyId).getByRole('button', { name: `Rotate ${keyId}` }).click();
    const rotate = page.getByRole('dialog');
    await rotate.getByLabel('Old key keeps working for').selectOption('0s');
    await rotate.getByRole('button', { name: 'Rotate key' }).click();
    const rotated = page.getByRole('dialog', { name: 'Key rotated' });
    const newKey = await rotated.getByTestId('raw-key').inputValue();
    expect(newKey).toMatch(/^ha_[0-9A-Za-z]{38}$/);
    expect(newKey).not.toBe(rawKey);
    expect(await focused(page)).toBe('button Copy');
    await rotated.getByRole('button', { name: 'I have copied it' }).click();
    // The old key is rotated (it expires), not revoked: its row keeps its buttons.
    await rotated.waitFor({ state: 'detached' });
    expect(await focused(page)).toBe(`button Rotate ${keyId}`);
    await expectChatStatus(newKey, 'sales', 200);
    await expectChatStatus(rawKey, 'sales', 401);
    const newKeyId = (await page.locator('tr[data-key-id]').evaluateAll((rows, old) => rows.map((r) => r.getAttribute('data-key-id')).find((id) => id !== old), keyId))!;
    expect(newKeyId).toMatch(/^key_/);

    // Revoke the new key behind the confirmation; the public route refuses it.
    await row(page, newKeyId).getByRole('button', { name: `Revoke ${newKeyId}` }).click();
    const confirm = page.getByRole('dialog', { name: /^Revoke/ });
    await confirm.getByText('This cannot be undone.').waitFor();
    await shot(page, 'revoke-confirm');
    expect(await lowContrastText(page)).toEqual([]);
    await confirm.getByRole('button', { name: 'Revoke key' }).click();
    await expect.poll(() => row(page, newKeyId).textContent()).toContain('revoked');
    // The Revoke button that opened the dialog is gone with the row's other buttons: focus is
    // on the key's row, which now says "revoked".
    await confirm.waitFor({ state: 'detached' });
    expect(await focused(page)).toBe(`row ${newKeyId}`);
    await expectChatStatus(newKey, 'sales', 401);
    const refused = (await (await chat(newKey, 'sales')).json()) as { error: { type: string } };
    expect(refused.error.type).toBe('revoked_api_key');
    // Filters: only the revoked key.
    await page.getByLabel('Status').selectOption('revoked');
    await expect.poll(() => page.locator('tr[data-key-id]').count()).toBe(1);
    await page.getByLabel('Status').selectOption('');
    await expect.poll(() => page.locator('tr[data-key-id]').count()).toBe(2);
    // Search: an exact key id finds that key; a name prefix nobody has, none (any case).
    await page.getByLabel('Search').fill(newKeyId);
    await expect.poll(() => page.locator('tr[data-key-id]').count()).toBe(1);
    expect(await row(page, newKeyId).count()).toBe(1);
    await page.getByLabel('Search').fill('ACME PROD');
    await expect.poll(async () => {
      const rows = await page.locator('tr[data-key-id]').allTextContents();
      return rows.length > 0 && rows.every((text) => text.includes('acme production'));
    }).toBe(true);
    await page.getByLabel('Search').fill('no such name');
    await page.getByText('No keys match these filters.').waitFor();
    await page.getByLabel('Search').fill('');
    await expect.poll(() => page.locator('tr[data-key-id]').count()).toBe(2);
    await shot(page, 'keys');
    expect(await lowContrastText(page)).toEqual([]);

    // A write without the CSRF token, from the page itself, is refused.
    const noCsrf = await page.evaluate(async () => {
      const answer = await fetch('/admin/v1/keys', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ account: 'x', plan: 'starter', agents: ['support'] }) });
      return { status: answer.status, body: (await answer.json()) as { error: { type: string } } };
    });
    expect([noCsrf.status, noCsrf.body.error.type]).toEqual([403, 'csrf_token_invalid']);

    // Usage: a fresh key, a known number of requests, that number on the page.
    const usageKey = (await (
      await fetch(`${gateway.adminUrl}/admin/v1/keys`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ account: 'globex', plan: 'scale', agents: ['support'], name: 'usage probe' }),
      })
    ).json()) as { key: string; key_id: string };
    // All of them in one hour, so the chart's last bar holds them all.
    const secondsToHour = 3600 - (Math.floor(Date.now() / 1000) % 3600);
    if (secondsToHour < 20) await sleep((secondsToHour + 1) * 1000);
    for (let i = 0; i < USAGE_REQUESTS; i++) expect((await chat(usageKey.key, 'support')).status).toBe(200);

    await page.getByRole('link', { name: 'Usage', exact: true }).click();
    await page.getByRole('heading', { name: 'Usage' }).waitFor();
    await page.getByLabel('Split by').selectOption('key');
    await page.getByLabel('Key ID').fill(usageKey.key_id);
    const totalsRows = page.locator('[data-testid=usage-totals] tbody tr');
    const requestsCell = page.locator(`[data-testid=usage-totals] tr[data-group="${usageKey.key_id}"] td[data-col=requests]`);
    // Rollups ride the audit batches: refresh until they are in (and the filter has applied:
    // the table then holds this key alone).
    await expect
      .poll(async () => {
        await page.getByRole('button', { name: 'Refresh' }).click();
        await page.waitForTimeout(200);
        return `${await totalsRows.count()} row(s), ${(await requestsCell.count()) > 0 ? await requestsCell.textContent() : 'none'}`;
      }, { timeout: 15_000, interval: 300 })
      .toBe(`1 row(s), ${USAGE_REQUESTS}`);
    expect(await page.locator(`[data-testid=usage-totals] tr[data-group="${usageKey.key_id}"] td[data-col=tokens]`).textContent()).toBe(String(USAGE_REQUESTS * 5));
    // The chart: its label states the total, and hovering the current hour shows the count.
    expect(await page.getByTestId('usage-chart').getAttribute('aria-label')).toContain(`${USAGE_REQUESTS} in total`);
    await expect.poll(() => hoverLatestHour(page), { timeout: 15_000, interval: 300 }).toBe(`${USAGE_REQUESTS} requests`);
    await shot(page, 'usage');
    expect(await lowContrastText(page)).toEqual([]);
    const topByRequests = page.locator('.top-list').filter({ hasText: 'Top keys by requests' });
    expect(await topByRequests.textContent()).toContain(usageKey.key_id);
    // Cost: the totals' column and the chart, in dollars as the page's locale writes them.
    const usd = (n: number) => page.evaluate((value) => new Intl.NumberFormat(undefined, { style: 'currency', currency: 'USD', minimumFractionDigits: 2, maximumFractionDigits: 6 }).format(value), n);
    const expectedCost = await usd((USAGE_REQUESTS * 5 * 0.01) / 1000);
    expect(await page.locator(`[data-testid=usage-totals] tr[data-group="${usageKey.key_id}"] td[data-col=cost_usd]`).textContent()).toBe(expectedCost);
    await page.getByRole('radio', { name: 'Cost (USD)' }).check();
    await expect.poll(() => page.getByTestId('usage-chart').getAttribute('aria-label')).toContain(`Cost (USD) per hour`);
    expect(await page.getByTestId('usage-chart').getAttribute('aria-label')).toContain(`${expectedCost} in total`);
    await expect.poll(() => hoverLatestHour(page), { timeout: 15_000, interval: 300 }).toBe(expectedCost);

    // Agents: both configured agents, their upstream and the last hour's traffic.
    await page.getByRole('link', { name: 'Agents' }).click();
    const agents = page.getByTestId('agents-table');
    await agents.waitFor();
    expect(await agents.locator('tr[data-agent="support"]').textContent()).toContain(upstream.baseUrl);
    expect(await agents.locator('tr[data-agent="sales"]').textContent()).toContain(upstream.baseUrl);
    // Each runner's state as GET /admin/v1/agents reports it (docs/upstreams.md): the one
    // runner answered every request, so it is up.
    expect(await agents.locator('tr[data-agent="support"] .badge').allTextContents()).toEqual(['up']);
    expect(await agents.locator('tr[data-agent="sales"] .badge').allTextContents()).toEqual(['up']);
    await shot(page, 'agents');
    expect(await lowContrastText(page)).toEqual([]);

    // Sign out: back to the form, and the session no longer opens the API.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Admin token').waitFor();
    expect(await page.evaluate(async () => (await fetch('/admin/v1/keys')).status)).toBe(401);
    await page.close();

    // Nothing was loaded from anywhere but the gateway's admin origin, and the CSP held.
    const origin = new URL(gateway.adminUrl).origin;
    const foreign = requested.filter((url) => !url.startsWith(`${origin}/`) && !url.startsWith('data:'));
    expect(foreign).toEqual([]);
    expect(requested.some((url) => url.includes('/dashboard/assets/'))).toBe(true);
    expect(cspViolations).toEqual([]);
  }, 120_000);

  it('a viewer sees no write controls, and a forced write is refused', async () => {
    const page = await newPage();
    await signIn(page, VIEWER_TOKEN);
    await page.locator('tr[data-key-id]').first().waitFor();
    expect(await page.getByText('Read only').count()).toBe(1);
    expect(await page.getByRole('button', { name: 'Create key' }).count()).toBe(0);
    expect(await page.getByRole('button', { name: /^(Edit|Rotate|Revoke) / }).count()).toBe(0);
    await shot(page, 'keys-viewer');
    expect(await lowContrastText(page)).toEqual([]);

    // Paging: 25 keys a page, the next page by the API's cursor, and back.
    for (let i = 0; i < 25; i++) {
      const made = await fetch(`${gateway.adminUrl}/admin/v1/keys`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ account: 'bulk', plan: 'starter', agents: ['support'], name: `bulk ${i}` }),
      });
      expect(made.status).toBe(201);
    }
    const total = ((await (await fetch(`${gateway.adminUrl}/admin/v1/keys?limit=500`, { headers: { authorization: `Bearer ${VIEWER_TOKEN}` } })).json()) as { data: unknown[] }).data.length;
    expect(total).toBeGreaterThan(25);
    await page.reload();
    await expect.poll(() => page.locator('tr[data-key-id]').count()).toBe(25);
    const firstPage = await page.locator('tr[data-key-id]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-key-id')));
    await page.getByRole('button', { name: 'Next' }).click();
    await expect.poll(() => page.getByText('Page 2').count()).toBe(1);
    await expect.poll(() => page.locator('tr[data-key-id]').count()).toBe(total - 25);
    const secondPage = await page.locator('tr[data-key-id]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-key-id')));
    expect(secondPage.filter((id) => firstPage.includes(id))).toEqual([]);
    expect(await page.getByRole('button', { name: 'Next' }).isDisabled()).toBe(true);
    await page.getByRole('button', { name: 'Previous' }).click();
    await expect.poll(() => page.locator('tr[data-key-id]').first().getAttribute('data-key-id')).toBe(firstPage[0]);
    // A filter starts again at the first page.
    await page.getByRole('button', { name: 'Next' }).click();
    await page.getByText('Page 2').waitFor();
    await page.getByLabel('Account').fill('bulk');
    await page.getByText('Page 1').waitFor();
    await expect.poll(() => page.locator('tr[data-key-id]').count()).toBe(25);
    const forced = await page.evaluate(async () => {
      const session = (await (await fetch('/dashboard/session')).json()) as { csrf_token: string; role: string };
      const answer = await fetch('/admin/v1/keys', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-csrf-token': session.csrf_token },
        body: JSON.stringify({ account: 'x', plan: 'starter', agents: ['support'] }),
      });
      return { role: session.role, status: answer.status, body: (await answer.json()) as { error: { type: string } } };
    });
    expect(forced).toEqual({ role: 'viewer', status: 403, body: { error: expect.objectContaining({ type: 'insufficient_role' }) } });
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Admin token').waitFor();
    await page.close();
  }, 60_000);

  it('the first Tab shows a skip link that moves focus to the content; the pages open from the keyboard', async () => {
    const page = await newPage();
    await signIn(page, ADMIN_TOKEN);
    await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
    await page.keyboard.press('Tab');
    const skip = await page.evaluate(() => {
      const el = document.activeElement as HTMLElement;
      const rect = el.getBoundingClientRect();
      return { text: el.textContent, onScreen: rect.left >= 0 && rect.top >= 0 && rect.width > 0, outline: getComputedStyle(el).outlineStyle };
    });
    expect(skip).toEqual({ text: 'Skip to content', onScreen: true, outline: expect.not.stringMatching(/^none$/) });
    expect(await lowContrastText(page)).toEqual([]);
    await page.keyboard.press('Enter');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('main');
    // From the top of a fresh load: Tab to the Usage link in the sidebar, open it with Enter.
    await page.reload();
    await page.getByRole('heading', { name: 'API Keys' }).waitFor();
    const reached: string[] = [];
    for (let i = 0; i < 10 && reached.at(-1) !== 'Usage'; i++) {
      await page.keyboard.press('Tab');
      reached.push((await page.evaluate(() => document.activeElement?.textContent?.trim())) ?? '');
    }
    expect(reached.at(-1)).toBe('Usage');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Usage' }).waitFor();
    expect(await page.evaluate(() => location.hash)).toBe('#/usage');
    // Signed out before the page closes, so no sign-out is still in flight when the next
    // test signs in (the browser context shares one cookie jar).
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Admin token').waitFor();
    await page.close();
  }, 60_000);

  it('dialogs keep keyboard focus inside, close on Esc, and give focus back', async () => {
    const page = await newPage();
    await signIn(page, ADMIN_TOKEN);
    const opener = page.getByRole('button', { name: 'Create key' });
    // The button is disabled until the page has the catalog (plans, agents): focus() on a
    // disabled button does nothing and Enter would open nothing, so wait for it first.
    await expect.poll(() => opener.isEnabled(), { timeout: 10_000 }).toBe(true);
    await opener.focus();
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog', { name: 'Create key' });
    await dialog.waitFor();
    expect(await page.evaluate(() => document.activeElement?.getAttribute('name'))).toBe('account');
    for (let i = 0; i < 15; i++) {
      await page.keyboard.press(i % 4 === 3 ? 'Shift+Tab' : 'Tab');
      expect(await page.evaluate(() => document.activeElement?.closest('dialog') !== null)).toBe(true);
    }
    // Focus is visible: the focused control draws an outline.
    expect(await page.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle)).not.toBe('none');
    // Where focus is the moment the dialog leaves the page: a MutationObserver's callback runs
    // right after the removal, before any paint. Focus must be back on the opener by then, not
    // on <body> until some later frame (that gap was real once: CI saw <body> here).
    await page.evaluate(() => {
      const dialogElement = document.querySelector('dialog')!;
      new MutationObserver((_, observer) => {
        if (dialogElement.isConnected) return;
        observer.disconnect();
        document.body.dataset.focusAtDialogRemoval = document.activeElement?.textContent ?? '';
      }).observe(document.body, { childList: true, subtree: true });
    });
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    expect(await page.evaluate(() => document.body.dataset.focusAtDialogRemoval)).toBe('Create key');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Create key');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.close();
  }, 60_000);

  it('focus never drops to <body>: a busy button keeps it; when the opener is gone, the key\'s row or the heading takes it', async () => {
    // Two fresh keys of their own account, listed by that account.
    const ids: string[] = [];
    for (const name of ['focus one', 'focus two']) {
      const made = await fetch(`${gateway.adminUrl}/admin/v1/keys`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ account: 'focus', plan: 'starter', agents: ['support'], name }),
      });
      ids.push(((await made.json()) as { key_id: string }).key_id);
    }
    const [first, second] = ids as [string, string];
    const page = await newPage();
    const writes = await requestGate(page, '**/admin/v1/keys/**');
    /**
     * Enter on the focused button of `dialog` with its request held: the button, now showing
     * `busyLabel`, keeps focus; then the request goes on and the dialog closes.
     */
    const pressHeld = async (dialog: Locator, busyLabel: string) => {
      const held = writes.holdNext();
      await page.keyboard.press('Enter');
      await held.received;
      await dialog.getByRole('button', { name: busyLabel }).waitFor();
      await afterRendering(page);
      expect(await focused(page)).toBe(`button ${busyLabel}`);
      held.release();
      await dialog.waitFor({ state: 'detached' });
    };
    await signIn(page, ADMIN_TOKEN);
    await page.getByLabel('Account').fill('focus');
    await expect.poll(() => page.locator('tr[data-key-id]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-key-id')).sort())).toEqual([...ids].sort());

    // Edit, saved from its submit button while the server is held: "Saving…" keeps focus.
    await row(page, second).getByRole('button', { name: `Edit ${second}` }).focus();
    await page.keyboard.press('Enter');
    const edit = page.getByRole('dialog', { name: /^Edit/ });
    expect(await focused(page)).toBe('input name');
    await page.keyboard.type(' renamed');
    await edit.getByRole('button', { name: 'Save changes' }).focus();
    await pressHeld(edit, 'Saving…');
    expect(await row(page, second).textContent()).toContain('focus two renamed');
    expect(await focused(page)).toBe(`button Edit ${second}`);

    const confirm = page.getByRole('dialog', { name: /^Revoke/ });
    /** Revoke from the keyboard: Enter on the row's Revoke button, Tab from Cancel, Enter. */
    const revoke = async (keyId: string) => {
      await row(page, keyId).getByRole('button', { name: `Revoke ${keyId}` }).focus();
      await page.keyboard.press('Enter');
      await confirm.waitFor();
      expect(await focused(page)).toBe('button Cancel');
      await page.keyboard.press('Tab');
      expect(await focused(page)).toBe('button Revoke key');
      await pressHeld(confirm, 'Revoking…');
    };
    // The dialog closes once the table shows the key revoked, with no buttons in its row.
    await revoke(first);
    expect(await row(page, first).textContent()).toContain('revoked');
    expect(await focused(page)).toBe(`row ${first}`);
    // The row shows that focus is there.
    expect(await page.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle)).not.toBe('none');
    // Only active keys listed: revoking the second key takes its row off the list.
    await page.getByLabel('Status').selectOption('active');
    await row(page, first).waitFor({ state: 'detached' });
    await revoke(second);
    await row(page, second).waitFor({ state: 'detached' });
    expect(await focused(page)).toBe('h1 API Keys');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Admin token').waitFor();
    await page.close();
  }, 60_000);
});
