/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
// The dashboard's Events page in a real browser (docs/notifications.md "Admin API"): Debian's
// Chromium, driven by playwright-core, against a `serve` process in embedded mode whose outbox
// already holds two events (written with the gateway's own file outbox before it starts) and
// a real receiver. An admin sees both delivered, filters by type, and redelivers one: the
// receiver gets the same Webhook-Id again. A viewer sees the list without the button. Every
// request stays on the gateway's origin; a screenshot goes to var/test-artifacts/dashboard/.
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../../scripts/chromium.mjs';
import { FileWebhookOutbox } from '../../src/notifications/file-webhook-outbox.js';
import { newEventId } from '../../src/notifications/event-id.js';
import { startGatewayProcess, type GatewayProcess } from '../helpers/gateway-process.js';
import { waitFor } from '../helpers/wait.js';
import { deliveredIds, startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';

const ADMIN_TOKEN = `adm-${randomUUID()}`;
const VIEWER_TOKEN = `view-${randomUUID()}`;
const SECRET = `whsec-${randomUUID()}`;
const ARTIFACTS = join(process.cwd(), 'var/test-artifacts/dashboard');

let dir: string;
let receiver: WebhookReceiver;
let gateway: GatewayProcess;
let browser: Promise<{ context: BrowserContext; close(): Promise<void> }> | undefined;
const requested: string[] = [];
const ids = { created: '', down: '' };

beforeAll(async () => {
  [dir, receiver] = await Promise.all([mkdtemp(join(tmpdir(), 'agentgw-e2e-events-')), startWebhookReceiver([SECRET])]);
  await mkdir(ARTIFACTS, { recursive: true });
  const webhooks = join(dir, 'webhooks');
  const outbox = await FileWebhookOutbox.open(webhooks, Date.now());
  ids.created = newEventId(Date.now());
  ids.down = newEventId(Date.now() + 1);
  await outbox.append([
    { id: ids.created, type: 'key.created', created_at: new Date().toISOString(), subject: 'key:key_e2e', data: { key_id: 'key_e2e', account: 'acme' } },
    { id: ids.down, type: 'upstream.down', created_at: new Date().toISOString(), subject: 'agent:support', data: { agent: 'support', target: 'http://127.0.0.1:9' } },
  ]);
  await outbox.close();
  gateway = await startGatewayProcess(dir, 'events', {
    admin: {
      tokens: [
        { name: 'ops', token: ADMIN_TOKEN, role: 'admin' },
        { name: 'watcher', token: VIEWER_TOKEN, role: 'viewer' },
      ],
    },
    agents: { support: { upstream: 'http://127.0.0.1:9/api/v1' } },
    keys: { file: join(dir, 'keys.json') },
    audit: { file: join(dir, 'audit.jsonl'), spool: join(dir, 'spool.jsonl'), admin_file: join(dir, 'admin-audit.jsonl'), usage_dir: join(dir, 'usage') },
    notifications: { webhooks: [{ url: receiver.url, secret: SECRET }], dir: webhooks },
    // The MCP servers page has a table to measure at every width (the server is never called).
    mcp_servers: {
      'document-search-and-retrieval': {
        upstreams: [{ url: 'http://127.0.0.1:9/mcp/a-long-path-of-the-document-search-service', weight: 3 }, { url: 'http://127.0.0.1:9/mcp/b', weight: 1 }],
        headers: { Authorization: 'Bearer not-a-real-token', 'X-Tenant-Identifier': 'acme' },
        tools: ['search_documents_by_full_text_query', 'retrieve_document_by_identifier', 'list_collections'],
      },
    },
    shutdown_grace: '1s',
  });
  await waitFor('both seeded events delivered', () => deliveredIds(receiver).length === 2, 20_000);
}, 60_000);

async function newPage(): Promise<Page> {
  browser ??= launchChromium().then((launched) => {
    launched.context.on('request', (request) => requested.push(request.url()));
    return launched;
  });
  return (await browser).context.newPage();
}

afterAll(async () => {
  await (await browser?.catch(() => undefined))?.close();
  await gateway?.stop('SIGKILL');
  await receiver?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function openEvents(page: Page, token: string): Promise<void> {
  await page.context().clearCookies();
  await page.goto(`${gateway.adminUrl}/dashboard/`);
  await page.getByLabel('Admin token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'API Keys' }).waitFor();
  await page.getByRole('link', { name: 'Events' }).click();
  await page.getByRole('heading', { name: 'Events' }).waitFor();
}

describe('dashboard Events page', () => {
  it('lists the events with their state, filters by type, and redelivers one with the same Webhook-Id', async () => {
    const page = await newPage();
    await openEvents(page, ADMIN_TOKEN);
    const rows = page.locator('[data-testid="events-table"] tbody tr');
    await waitFor('two rows', async () => (await rows.count()) === 2, 10_000);
    for (const id of [ids.created, ids.down]) {
      const row = page.locator(`tr[data-event-id="${id}"]`);
      expect(await row.locator('.badge').textContent()).toBe('delivered');
    }
    expect(await rows.first().getAttribute('data-event-id')).toBe(ids.down);
    await page.screenshot({ path: join(ARTIFACTS, 'events.png'), fullPage: true });

    await page.getByLabel('Type').selectOption('key.created');
    await waitFor('one row', async () => (await rows.count()) === 1, 10_000);
    expect(await rows.first().getAttribute('data-event-id')).toBe(ids.created);

    await page.getByRole('button', { name: `Redeliver ${ids.created}` }).click();
    await page.getByText(`${ids.created} queued for delivery again.`).waitFor();
    await waitFor('the redelivery', () => deliveredIds(receiver).filter((id) => id === ids.created).length === 2, 20_000);
    expect(deliveredIds(receiver).filter((id) => id === ids.down)).toHaveLength(1);
    expect(receiver.received.every((r) => r.verified)).toBe(true);
    const origin = new URL(gateway.adminUrl).origin;
    expect(requested.filter((url) => new URL(url).origin !== origin)).toEqual([]);
    await page.close();
  });

  it('shows a viewer the events without a Redeliver button', async () => {
    const page = await newPage();
    await openEvents(page, VIEWER_TOKEN);
    await page.locator(`tr[data-event-id="${ids.down}"]`).waitFor();
    expect(await page.getByRole('button', { name: /^Redeliver/ }).count()).toBe(0);
    await page.getByText('Read only: you are signed in with a viewer token.').waitFor();
    await page.close();
  });
});

/** What a width does to the page: sideways scroll, each table frame, the search box, the dates. */
interface Fit {
  clientWidth: number;
  scrollWidth: number;
  tables: { overflowing: boolean; marked: boolean; hint: string; buttons: number; buttonsCut: string[] }[];
  placeholderCut: string[];
}

function measureFit(page: Page): Promise<Fit> {
  return page.evaluate(() => {
    const tables = [...document.querySelectorAll<HTMLElement>('.table-wrap')].map((wrap) => {
      const frame = wrap.getBoundingClientRect();
      const buttons = [...wrap.querySelectorAll<HTMLElement>('button')];
      const buttonsCut = buttons
        .filter((button) => {
          const box = button.getBoundingClientRect();
          return box.left < frame.left - 1 || box.right > frame.right + 1 || box.right > document.documentElement.clientWidth + 1;
        })
        .map((button) => button.getAttribute('aria-label') ?? button.textContent ?? '');
      return { overflowing: wrap.scrollWidth > wrap.clientWidth + 1, marked: wrap.dataset.overflowing === 'true', hint: getComputedStyle(wrap, '::before').content, buttons: buttons.length, buttonsCut };
    });
    const context = document.createElement('canvas').getContext('2d')!;
    const placeholderCut = [...document.querySelectorAll<HTMLInputElement>('input[placeholder]')]
      .filter((input) => input.offsetParent !== null)
      .filter((input) => {
        const style = getComputedStyle(input);
        context.font = style.font;
        const room = input.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
        return context.measureText(input.placeholder).width > room + 1;
      })
      .map((input) => `${input.name}: ${input.placeholder}`);
    return { clientWidth: document.documentElement.clientWidth, scrollWidth: document.documentElement.scrollWidth, tables, placeholderCut };
  });
}

const PAGES = [
  { name: 'API Keys', ready: '[data-testid="keys-table"] tbody tr' },
  { name: 'Usage', ready: '[data-testid="usage-totals"], .state-empty' },
  { name: 'Agents', ready: '[data-testid="agents-table"] tbody tr' },
  { name: 'Events', ready: '[data-testid="events-table"] tbody tr' },
  { name: 'MCP servers', ready: '[data-testid="mcp-table"] tbody tr' },
] as const;

describe('every page at 390, 768 and 1280 px', () => {
  it('scrolls no page sideways; a table wider than its frame says so and keeps its buttons whole; the search placeholders fit; dates are written one way', async () => {
    // A key whose name and account widen the keys table, created as an admin would.
    const created = await fetch(`${gateway.adminUrl}/admin/v1/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ account: 'acme-corporation-international-holdings', plan: 'starter', agents: ['support'], name: 'the production key of the billing export service' }),
    });
    expect(created.status).toBe(201);
    const page = await newPage();
    await openEvents(page, ADMIN_TOKEN);
    for (const width of [390, 768, 1280]) {
      await page.setViewportSize({ width, height: 900 });
      for (const { name, ready } of PAGES) {
        const where = `${name} at ${width} px`;
        await page.getByRole('link', { name, exact: true }).click();
        await page.getByRole('heading', { name, level: 1 }).waitFor();
        await page.locator(ready).first().waitFor();
        // The overflow mark follows the layout a frame later.
        await expect.poll(async () => (await measureFit(page)).tables.every((table) => table.overflowing === table.marked), { timeout: 10_000 }).toBe(true);
        const fit = await measureFit(page);
        await page.screenshot({ path: join(ARTIFACTS, `width-${width}-${name.replace(' ', '-').toLowerCase()}.png`), fullPage: true });
        expect(fit.scrollWidth, where).toBe(fit.clientWidth);
        expect(fit.placeholderCut, where).toEqual([]);
        for (const table of fit.tables) {
          expect(table.buttonsCut, where).toEqual([]);
          expect(table.hint, where).toBe(table.overflowing ? '"Scroll sideways for more columns →"' : 'none');
        }
        if (name === 'Events') {
          // The Redeliver buttons are there, and whole, at every width (1280 px cut them before).
          // (The key created above added a key.created event: one button per row.)
          expect(fit.tables[0]!.buttons, where).toBe(await page.locator('[data-testid="events-table"] tbody tr').count());
          expect(fit.tables[0]!.buttons, where).toBeGreaterThanOrEqual(2);
          const dates = await page.locator('[data-testid="events-table"] tbody tr td:nth-child(7)').allTextContents();
          for (const date of dates) expect(date, where).toMatch(/^[A-Z][a-z]{2} \d{1,2}, \d{1,2}:\d{2}\s?[AP]M$/);
        }
        if (name === 'API Keys') {
          const dates = await page.locator('[data-testid="keys-table"] tbody tr td[title$="Z"]').first().textContent();
          expect(dates, where).toMatch(/^[A-Z][a-z]{2} \d{1,2}$/);
        }
      }
      if (width === 1280) {
        // Nothing to scroll at desktop width: the Events table fits its frame.
        await page.getByRole('link', { name: 'Events', exact: true }).click();
        await page.locator('[data-testid="events-table"] tbody tr').first().waitFor();
        expect((await measureFit(page)).tables[0]!.overflowing, 'Events at 1280 px').toBe(false);
      }
    }
    await page.close();
  }, 240_000);
});
