/// <reference lib="dom" />
// The dashboard on a phone (390 CSS pixels wide, in Debian's Chromium): no page scrolls
// sideways — wide tables scroll inside their own frame — with long names, usage data, the
// usage data table open and the create-key dialog up, and the MCP servers page's empty state
// (this gateway fronts none; test/e2e/dashboard-events.test.ts measures its table). And the Usage page refreshes by itself
// every USAGE_REFRESH_MS while the tab is visible, makes no request while it is hidden, and
// refreshes at once when shown again (the page's clock is Playwright's, moved forward by hand).
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../../scripts/chromium.mjs';
import { USAGE_REFRESH_MS } from '../../web/src/usage/usage-refresh.js';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { createKeys } from '../helpers/faults/create-keys.js';
import { postChat } from '../helpers/gateway.js';
import { startGatewayProcess, type GatewayProcess } from '../helpers/gateway-process.js';

const ADMIN_TOKEN = `adm-${randomUUID()}`;
const WIDTH = 390;

let upstream: FakeUpstream;
let dir: string;
let gateway: GatewayProcess;
let browser: { context: BrowserContext; close(): Promise<void> } | undefined;

beforeAll(async () => {
  [upstream, dir] = await Promise.all([startFakeUpstream(), mkdtemp(join(tmpdir(), 'agentgw-e2e-narrow-'))]);
  const document = {
    admin: { tokens: [{ name: 'ops', token: ADMIN_TOKEN, role: 'admin' }] },
    agents: { support: { upstream: upstream.baseUrl }, 'sales-assistant-with-a-long-name': { upstream: upstream.baseUrl } },
    keys: { file: join(dir, 'keys.json') },
    audit: { file: join(dir, 'audit.jsonl'), spool: join(dir, 'spool.jsonl'), admin_file: join(dir, 'admin-audit.jsonl'), usage_dir: join(dir, 'usage') },
    shutdown_grace: '1s',
  };
  const [key] = await createKeys(document, [{ account: 'acme-corporation-international', plan: 'pro', agents: ['support', 'sales-assistant-with-a-long-name'] }]);
  gateway = await startGatewayProcess(dir, 'narrow', document);
  for (let i = 0; i < 3; i++) expect((await postChat(gateway.url, '/agents/support/api/v1/chat', key!, { message: 'hi' })).status).toBe(200);
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await gateway?.stop('SIGKILL');
  await upstream?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function newPage(): Promise<Page> {
  browser ??= await launchChromium({ viewport: { width: WIDTH, height: 844 } });
  return browser.context.newPage();
}

/** How wide the page's content is, and the elements (outside a scrolling frame) that stick out. */
function sideways(page: Page): Promise<{ scrollWidth: number; sticking: string[] }> {
  return page.evaluate(() => {
    const width = document.documentElement.clientWidth;
    const sticking = [...document.querySelectorAll('body *')]
      .filter((el) => el.getBoundingClientRect().right > width + 1 && !el.closest('.table-wrap, .totals-card'))
      .map((el) => `${el.tagName.toLowerCase()}.${el.className}`);
    return { scrollWidth: document.documentElement.scrollWidth, sticking: sticking.slice(0, 5) };
  });
}

async function signIn(page: Page): Promise<void> {
  // Each test starts signed out: the pages share the browser's cookies.
  await page.context().clearCookies();
  await page.goto(`${gateway.adminUrl}/dashboard/`);
  expect(await sideways(page), 'sign-in page').toEqual({ scrollWidth: WIDTH, sticking: [] });
  await page.getByLabel('Admin token').fill(ADMIN_TOKEN);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'API Keys' }).waitFor();
}

async function open(page: Page, name: 'Usage' | 'Agents' | 'API Keys' | 'MCP servers'): Promise<void> {
  await page.getByRole('link', { name, exact: true }).click();
  await page.getByRole('heading', { name, level: 1 }).waitFor();
}

describe('the dashboard at 390 px wide', () => {
  it('scrolls no page sideways: sign-in, API Keys (and its create dialog), Usage (with its data table open), Agents, MCP servers', async () => {
    const page = await newPage();
    await signIn(page);
    await page.locator('[data-testid="keys-table"] tbody tr').first().waitFor();
    expect(await sideways(page), 'API Keys').toEqual({ scrollWidth: WIDTH, sticking: [] });
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByRole('dialog', { name: 'Create key' }).waitFor();
    expect(await sideways(page), 'create-key dialog').toEqual({ scrollWidth: WIDTH, sticking: [] });
    await page.keyboard.press('Escape');

    await open(page, 'Usage');
    await page.locator('[data-testid="usage-totals"]').waitFor();
    await page.getByText('Data table').click();
    expect(await sideways(page), 'Usage').toEqual({ scrollWidth: WIDTH, sticking: [] });

    await open(page, 'Agents');
    await page.locator('[data-testid="agents-table"]').waitFor();
    expect(await sideways(page), 'Agents').toEqual({ scrollWidth: WIDTH, sticking: [] });

    await open(page, 'MCP servers');
    await page.getByText('No MCP servers configured.').waitFor();
    expect(await sideways(page), 'MCP servers').toEqual({ scrollWidth: WIDTH, sticking: [] });
    await page.close();
  }, 120_000);
});

describe('the Usage page refreshes by itself', () => {
  it(`every ${USAGE_REFRESH_MS / 1000} s while visible, never while hidden, at once when shown again`, async () => {
    const page = await newPage();
    let reports = 0;
    page.on('request', (request) => {
      if (new URL(request.url()).pathname === '/admin/v1/usage') reports++;
    });
    const moreReportsThan = async (count: number) => {
      const deadline = Date.now() + 15_000;
      while (reports <= count && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      return reports > count;
    };
    await signIn(page);
    // The page's timers from here on are Playwright's: the Usage page's interval is made below.
    await page.clock.install();
    await open(page, 'Usage');
    await page.locator('[data-testid="usage-totals"]').waitFor();
    await expect.poll(() => reports).toBeGreaterThan(0);

    const loaded = reports;
    await page.clock.fastForward(USAGE_REFRESH_MS + 1_000);
    expect(await moreReportsThan(loaded), 'a refresh after the interval').toBe(true);
    await page.locator('[data-testid="usage-totals"]').waitFor();

    const setVisibility = (state: 'hidden' | 'visible') =>
      page.evaluate((value) => {
        Object.defineProperty(document, 'visibilityState', { value, configurable: true });
        document.dispatchEvent(new Event('visibilitychange'));
      }, state);
    await setVisibility('hidden');
    await new Promise((r) => setTimeout(r, 500)); // let a request already on its way be counted
    const whileHidden = reports;
    await page.clock.fastForward(5 * USAGE_REFRESH_MS);
    await new Promise((r) => setTimeout(r, 1_000));
    expect(reports, 'no request while hidden').toBe(whileHidden);

    await setVisibility('visible');
    expect(await moreReportsThan(whileHidden), 'a refresh as soon as it is shown again').toBe(true);
    expect(await page.getByText(`Refreshes every ${USAGE_REFRESH_MS / 1000} s while this tab is visible.`).count()).toBe(1);
    await page.close();
  }, 120_000);
});
