// The dashboard's agent runs (docs/dashboard.md "Usage"): a key's row links to its usage,
// where the key's runs (`context.session_id`) are ranked by cost, tokens, tool calls or
// turns; an account's runs span its keys. A real gateway process in embedded mode (its
// rollup files) and Chromium.
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../../scripts/chromium.mjs';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { postChat } from '../helpers/gateway.js';
import { startGatewayProcess, type GatewayProcess } from '../helpers/gateway-process.js';
import { lowContrastText } from '../helpers/text-contrast.js';

const ADMIN_TOKEN = `adm-${randomUUID()}`;
const ARTIFACTS = join(process.cwd(), 'var/test-artifacts/dashboard');

let upstream: FakeUpstream;
let dir: string;
let gateway: GatewayProcess;
let browser: { context: BrowserContext; close(): Promise<void> } | undefined;

beforeAll(async () => {
  [upstream, dir] = await Promise.all([startFakeUpstream(), mkdtemp(join(tmpdir(), 'agentgw-e2e-sessions-'))]);
  // The runner answers with the tokens and tool calls the request's `n` and `calls` ask for.
  upstream.handle((_req, res, seen) => {
    const asked = JSON.parse(seen.body.toString('utf8')) as { n: number; calls: number };
    const body = JSON.stringify({
      response: 'ok',
      tool_calls: Array.from({ length: asked.calls }, () => ({ tool: 'web_search', input: {}, output: {} })),
      metadata: { model: 'm', tokens_used: asked.n, latency_ms: 1 },
    });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
  await mkdir(ARTIFACTS, { recursive: true });
  gateway = await startGatewayProcess(dir, 'sessions', {
    admin: { tokens: [{ name: 'ops', token: ADMIN_TOKEN, role: 'admin' }] },
    agents: { support: { upstream: upstream.baseUrl } },
    keys: { file: join(dir, 'keys.json') },
    audit: { file: join(dir, 'audit.jsonl'), spool: join(dir, 'spool.jsonl'), admin_file: join(dir, 'admin-audit.jsonl'), usage_dir: join(dir, 'usage') },
    pricing: { default: 0.01 },
    shutdown_grace: '1s',
  });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await gateway?.stop('SIGKILL');
  await upstream?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function createKey(account: string, name: string): Promise<{ key: string; key_id: string }> {
  const answer = await fetch(`${gateway.adminUrl}/admin/v1/keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ account, plan: 'starter', agents: ['support'], name }),
  });
  expect(answer.status).toBe(201);
  return (await answer.json()) as { key: string; key_id: string };
}

/** The session ids in the card, top first. */
function cardRuns(page: Page): Promise<string[]> {
  return page.locator('[data-testid=usage-sessions] tbody tr').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-session') ?? ''));
}

describe('dashboard: agent runs', () => {
  it("ranks a key's runs by cost, tokens, tool calls and turns, and an account's across its keys", async () => {
    const first = await createKey('initech', 'runs probe');
    const second = await createKey('initech', 'other key');
    // run-costly: 2 turns, 3000 tokens, 1 tool call. run "loops": 5 turns, 50 tokens, 20 tool calls.
    const turns: [string, string, number, number][] = [
      [first.key, 'run-costly', 1000, 0],
      [first.key, 'run-costly', 2000, 1],
      ...Array.from({ length: 5 }, () => [first.key, 'run "loops"', 10, 4] as [string, string, number, number]),
      [second.key, 'run-other-key', 5000, 0],
    ];
    for (const [key, session, n, calls] of turns) {
      expect((await postChat(gateway.url, '/agents/support/api/v1/chat', key, { message: 'hi', n, calls, context: { session_id: session } })).status).toBe(200);
    }

    browser = await launchChromium();
    const page = await browser.context.newPage();
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.goto(`${gateway.adminUrl}/dashboard/`);
    await page.getByLabel('Admin token').fill(ADMIN_TOKEN);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'API Keys' }).waitFor();
    // The key's row links to its usage, filtered on the key.
    await page.locator(`tr[data-key-id="${first.key_id}"]`).getByRole('link', { name: 'Usage and agent runs' }).click();
    await page.getByRole('heading', { name: 'Usage' }).waitFor();
    expect(await page.getByLabel('Key ID').inputValue()).toBe(first.key_id);
    // Rollups reach the files within a flush: refresh until both runs are in.
    await expect
      .poll(async () => {
        await page.getByRole('button', { name: 'Refresh' }).click();
        await page.waitForTimeout(200);
        return cardRuns(page);
      }, { timeout: 20_000, interval: 300 })
      .toEqual(['run-costly', 'run "loops"']);
    const cell = (session: string, col: string) => page.locator(`[data-testid=usage-sessions] tr[data-session='${session}'] td[data-col=${col}]`).textContent();
    expect(await cell('run "loops"', 'requests')).toBe('5');
    expect(await cell('run "loops"', 'tool_calls')).toBe('20');
    expect(await cell('run-costly', 'tokens')).toBe('3,000');
    await page.getByLabel('Top by').selectOption('tool_calls');
    await expect.poll(() => cardRuns(page)).toEqual(['run "loops"', 'run-costly']);
    await page.getByLabel('Top by').selectOption('requests');
    await expect.poll(() => cardRuns(page)).toEqual(['run "loops"', 'run-costly']);
    await page.getByLabel('Top by').selectOption('tokens');
    await expect.poll(() => cardRuns(page)).toEqual(['run-costly', 'run "loops"']);
    await page.screenshot({ path: join(ARTIFACTS, 'usage-sessions.png'), fullPage: true });
    expect(await lowContrastText(page)).toEqual([]);

    // The account's runs span its keys.
    await page.getByLabel('Key ID').fill('');
    await page.getByLabel('Account', { exact: true }).fill('initech');
    await expect.poll(() => cardRuns(page), { timeout: 10_000 }).toEqual(['run-other-key', 'run-costly', 'run "loops"']);
    // Without a key or an account, the card says what to enter.
    await page.getByLabel('Account', { exact: true }).fill('');
    await page.getByText('Enter a key ID or an account above to see its agent runs').waitFor();
  });
});
