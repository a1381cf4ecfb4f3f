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
