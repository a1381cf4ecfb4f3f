/// <reference lib="dom" />
// The dashboard's Agents page shows an A2A agent's card (docs/a2a.md): the skills of a real
// A2A server built with the official SDK (@a2a-js/sdk), their names, descriptions and tags, as
// the gateway process read them from its agent card — in Debian's Chromium. A skill whose
// name is markup is shown as text, never run.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../../scripts/chromium.mjs';
import { startA2aServer, type TestA2aServer } from '../helpers/a2a-servers.js';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { startGatewayProcess, type GatewayProcess } from '../helpers/gateway-process.js';

const ADMIN_TOKEN = `adm-${randomUUID()}`;
const SKILLS = [
  { id: 'book-flight', name: 'Book a flight', description: 'Finds and books a flight between two cities.', tags: ['travel', 'booking'] },
  { id: 'weather', name: 'Weather', description: 'Tells the forecast for a city.', tags: [] },
  { id: 'markup', name: '<img src=x onerror="window.__ran=1">', description: '<b>not bold</b>', tags: ['hostile'] },
];

let a2a: TestA2aServer;
let native: FakeUpstream;
let dir: string;
let gateway: GatewayProcess;
let browser: { context: BrowserContext; close(): Promise<void> } | undefined;

beforeAll(async () => {
  [a2a, native, dir] = await Promise.all([
    startA2aServer({ kind: 'streaming', skills: SKILLS }),
    startFakeUpstream(),
    mkdtemp(join(tmpdir(), 'agentgw-e2e-a2a-')),
  ]);
  gateway = await startGatewayProcess(dir, 'a2a-dashboard', {
    admin: { tokens: [{ name: 'ops', token: ADMIN_TOKEN, role: 'viewer' }] },
    agents: { travel: { protocol: 'a2a', upstream: a2a.url }, support: { upstream: native.baseUrl } },
    keys: { file: join(dir, 'keys.json') },
    audit: { file: join(dir, 'audit.jsonl'), spool: join(dir, 'spool.jsonl'), admin_file: join(dir, 'admin-audit.jsonl'), usage_dir: join(dir, 'usage') },
    shutdown_grace: '1s',
  });
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await gateway?.stop('SIGKILL');
  await Promise.all([a2a?.close(), native?.close()]);
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function agentsPage(): Promise<Page> {
  browser ??= await launchChromium();
  const page = await browser.context.newPage();
  await page.goto(`${gateway.adminUrl}/dashboard/`);
  await page.getByLabel('Admin token').fill(ADMIN_TOKEN);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'API Keys' }).waitFor();
  await page.getByRole('link', { name: 'Agents', exact: true }).click();
  await page.getByRole('heading', { name: 'Agents', level: 1 }).waitFor();
  await page.locator('[data-testid="agents-table"]').waitFor();
  return page;
}

describe('the Agents page with an A2A agent', () => {
  it("shows the card's skills: names, descriptions and tags, in the card's order", async () => {
    const page = await agentsPage();
    const card = page.locator('tr[data-agent="travel"] [data-testid="a2a-card"]');
    await expect.poll(() => card.innerText()).toContain('A2A 1.0');
    expect(await card.innerText()).toContain('streams');
    expect(await card.innerText()).toContain('test streaming agent');
    const items = card.getByRole('list', { name: 'Skills of test streaming agent' }).getByRole('listitem');
    expect(await items.count()).toBe(SKILLS.length);
    for (const [index, skill] of SKILLS.entries()) {
      const item = items.nth(index);
      expect(await item.locator('.skill-name').innerText()).toBe(skill.name);
      expect(await item.locator('.skill-description').innerText()).toBe(skill.description);
      if (skill.tags.length > 0) expect(await item.innerText()).toContain(skill.tags.join(', '));
    }
    // Markup in a card is text: nothing from it ran or became an element.
    expect(await page.evaluate(() => (window as unknown as { __ran?: number }).__ran)).toBeUndefined();
    expect(await card.locator('img, b').count()).toBe(0);
    // The native agent next to it has no card.
    expect(await page.locator('tr[data-agent="support"] [data-testid="a2a-card"]').count()).toBe(0);
    await page.close();
  }, 120_000);
});
