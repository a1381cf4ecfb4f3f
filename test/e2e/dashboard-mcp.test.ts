/// <reference lib="dom" />
// The dashboard's MCP servers page and the key form's MCP scope (docs/mcp.md "Dashboard"), in
// Debian's Chromium through playwright-core, against a `serve` process fronting two real MCP
// servers made with the official SDK. The page lists both with their upstreams' state, the
// header names the gateway sends (never a value), their allow-list and the tools they last
// listed; a call made through /mcp/{server} with the SDK's client shows in its counts. An admin
// creates a key in the form with an MCP scope of one tool: the SDK client may call that tool
// and not another, nor reach the other server; the keys page shows the scope, and an edit to
// "all tools" reaches the request path. A viewer sees the page and no write control, and a
// forced write of an MCP scope is refused. Every request stays on the gateway's origin.
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../../scripts/chromium.mjs';
import { startGatewayProcess, type GatewayProcess } from '../helpers/gateway-process.js';
import { startTestMcpServer, type TestMcpServer } from '../helpers/mcp-servers.js';
import { lowContrastText } from '../helpers/text-contrast.js';
import { unlabelledControls } from '../helpers/unlabelled-controls.js';
import { waitFor } from '../helpers/wait.js';

const ADMIN_TOKEN = `adm-${randomUUID()}`;
const VIEWER_TOKEN = `view-${randomUUID()}`;
const HEADER_SECRET = `files-token-${randomUUID()}`;
const ARTIFACTS = join(process.cwd(), 'var/test-artifacts/dashboard');

let files: TestMcpServer;
let git: TestMcpServer;
let dir: string;
let gateway: GatewayProcess;
let browser: Promise<{ context: BrowserContext; close(): Promise<void> }> | undefined;
const requested: string[] = [];

beforeAll(async () => {
  [files, git, dir] = await Promise.all([startTestMcpServer(), startTestMcpServer(), mkdtemp(join(tmpdir(), 'agentgw-e2e-mcp-'))]);
  await mkdir(ARTIFACTS, { recursive: true });
  gateway = await startGatewayProcess(dir, 'mcp-dashboard', {
    admin: {
      tokens: [
        { name: 'ops', token: ADMIN_TOKEN, role: 'admin' },
        { name: 'watcher', token: VIEWER_TOKEN, role: 'viewer' },
      ],
    },
    agents: { support: { upstream: 'http://127.0.0.1:9/api/v1' } },
    mcp_servers: {
      files: { upstream: files.url, headers: { Authorization: `Bearer ${HEADER_SECRET}` }, tools: ['echo', 'add', 'secret'] },
      git: { upstream: git.url },
    },
    keys: { file: join(dir, 'keys.json') },
    audit: { file: join(dir, 'audit.jsonl'), spool: join(dir, 'spool.jsonl'), admin_file: join(dir, 'admin-audit.jsonl'), usage_dir: join(dir, 'usage') },
    shutdown_grace: '1s',
  });
}, 90_000);

afterAll(async () => {
  await (await browser?.catch(() => undefined))?.close();
  await gateway?.stop('SIGKILL');
  await Promise.all([files?.close(), git?.close()]);
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function newPage(): Promise<Page> {
  browser ??= launchChromium().then((launched) => {
    launched.context.on('request', (request) => requested.push(request.url()));
    return launched;
  });
  return (await browser).context.newPage();
}

async function signIn(page: Page, token: string): Promise<void> {
  await page.context().clearCookies();
  await page.goto(`${gateway.adminUrl}/dashboard/`);
  await page.getByLabel('Admin token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'API Keys' }).waitFor();
}

async function openMcpPage(page: Page): Promise<void> {
  await page.getByRole('link', { name: 'MCP servers', exact: true }).click();
  await page.getByRole('heading', { name: 'MCP servers', level: 1 }).waitFor();
  await page.locator('[data-testid="mcp-table"] tbody tr').first().waitFor();
}

async function connect(server: string, rawKey: string): Promise<Client> {
  const client = new Client({ name: 'dashboard-mcp-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${gateway.url}/mcp/${server}`), { requestInit: { headers: { authorization: `Bearer ${rawKey}` } } }));
  return client;
}

async function adminKey(mcp: Record<string, string[]>): Promise<{ key: string; key_id: string }> {
  const answer = await fetch(`${gateway.adminUrl}/admin/v1/keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ account: 'acme', plan: 'starter', agents: ['support'], mcp }),
  });
  expect(answer.status).toBe(201);
  return (await answer.json()) as { key: string; key_id: string };
}

/** A tools/call's outcome in words: the tool's text, or the JSON-RPC error code. */
async function callOutcome(client: Client, tool: string, args: Record<string, unknown>): Promise<string> {
  try {
    const result = await client.callTool({ name: tool, arguments: args });
    return `ok ${(result.content as { text: string }[])[0]!.text}`;
  } catch (error) {
    return `error ${String((error as { code?: number }).code)}`;
  }
}

describe('the MCP servers page', () => {
  it('shows both servers, their upstream state, header names never values, tools, and a call made through /mcp/{server} in its counts', async () => {
    const page = await newPage();
    await signIn(page, ADMIN_TOKEN);
    await openMcpPage(page);
    const filesRow = page.locator('tr[data-mcp-server="files"]');
    const gitRow = page.locator('tr[data-mcp-server="git"]');
    expect(await page.locator('[data-testid="mcp-table"] tbody tr').count()).toBe(2);
    expect(await filesRow.locator('[data-testid="mcp-target-state"]').innerText()).toBe('up');
    expect(await gitRow.locator('[data-testid="mcp-target-state"]').innerText()).toBe('up');
    expect(await filesRow.innerText()).toContain('sends headers: Authorization');
    expect(await filesRow.innerText()).toContain('allow-list: add, echo, secret');
    expect(await filesRow.innerText()).toContain('not listed through this instance yet');
    expect(await filesRow.locator('[data-testid="mcp-calls"]').innerText()).toBe('0');
    expect(await page.content()).not.toContain(HEADER_SECRET);

    const client = await connect('files', (await adminKey({ files: ['*'] })).key);
    await client.listTools();
    expect(await callOutcome(client, 'echo', { text: 'hello' })).toBe('ok hello');
    // Outside the allow-list: refused by the gateway, not forwarded.
    expect(await callOutcome(client, 'fails', {})).toBe('error -32602');
    await client.close();

    await page.getByRole('button', { name: 'Refresh' }).click();
    await expect.poll(() => filesRow.locator('[data-testid="mcp-calls"]').innerText(), { timeout: 10_000 }).toBe('1');
    expect(await filesRow.locator('[data-testid="mcp-refused"]').innerText()).toBe('1');
    expect(await filesRow.locator('[data-testid="mcp-errors"]').innerText()).toBe('0');
    expect(await filesRow.locator('[data-testid="mcp-by-tool"]').innerText()).toContain('echo: 1');
    for (const tool of ['echo', 'add', 'secret', 'fails', 'wait']) expect(await filesRow.locator('.mcp-listed').innerText()).toContain(tool);
    expect(await gitRow.locator('[data-testid="mcp-calls"]').innerText()).toBe('0');
    expect(await page.getByTestId('mcp-total-calls').innerText()).toBe('1');
    expect(await page.content()).not.toContain(HEADER_SECRET);
    await page.screenshot({ path: join(ARTIFACTS, 'mcp-servers.png'), fullPage: true });
    expect(await lowContrastText(page)).toEqual([]);
    await page.close();
  }, 120_000);
});

describe('the key form edits the MCP scope', () => {
  it('creates a key that may call one tool of one server, shows the scope, and widens it to all tools', async () => {
    const page = await newPage();
    await signIn(page, ADMIN_TOKEN);
    await page.getByRole('button', { name: 'Create key' }).click();
    const dialog = page.getByRole('dialog', { name: 'Create key' });
    await dialog.getByLabel('Account').fill('acme');
    await dialog.getByLabel('Name (optional)').fill('mcp one tool');
    await dialog.getByRole('checkbox', { name: 'support' }).check();
    const filesScope = dialog.locator('[data-mcp-scope="files"]');
    const gitScope = dialog.locator('[data-mcp-scope="git"]');
    // Every server starts with no access.
    expect(await filesScope.getByRole('radio', { name: 'No access' }).isChecked()).toBe(true);
    expect(await gitScope.getByRole('radio', { name: 'No access' }).isChecked()).toBe(true);
    await filesScope.getByRole('radio', { name: 'Chosen tools' }).check();
    // The allow-list's names are offered as ticks.
    const ticks = filesScope.getByRole('group', { name: 'Tools of files' }).getByRole('checkbox');
    expect(await ticks.evaluateAll((boxes) => boxes.map((box) => (box as HTMLInputElement).value))).toEqual(['add', 'echo', 'secret']);
    await filesScope.getByRole('checkbox', { name: 'echo' }).check();
    // A name no scope can hold is refused by the API, named in the form, and nothing is created.
    await filesScope.getByLabel('Other tools').fill('<b>bold</b>');
    await dialog.getByRole('button', { name: 'Create key' }).click();
    await expect.poll(() => dialog.getByRole('alert').innerText()).toContain('mcp.files[1]');
    expect(await page.locator('tr[data-key-id]', { hasText: 'mcp one tool' }).count()).toBe(0);
    await filesScope.getByLabel('Other tools').fill('');
    await page.screenshot({ path: join(ARTIFACTS, 'mcp-key-form.png'), fullPage: true });
    expect(await lowContrastText(page)).toEqual([]);
    expect(await unlabelledControls(page)).toEqual([]);
    await dialog.getByRole('button', { name: 'Create key' }).click();
    const created = page.getByRole('dialog', { name: 'Key created' });
    const rawKey = await created.getByTestId('raw-key').inputValue();
    expect(rawKey).toMatch(/^ha_[0-9A-Za-z]{38}$/);
    await created.getByRole('button', { name: 'I have copied it' }).click();
    await created.waitFor({ state: 'detached' });
    const keyId = (await page.locator('tr[data-key-id]', { hasText: 'mcp one tool' }).getAttribute('data-key-id'))!;
    const keyRow = page.locator(`tr[data-key-id="${keyId}"]`);
    await expect.poll(() => keyRow.getByTestId('key-mcp').innerText()).toBe('mcp: files (echo)');

    // The key calls echo, and nothing else; git is outside its scope (403 on connect).
    const client = await connect('files', rawKey);
    expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(['echo']);
    expect(await callOutcome(client, 'echo', { text: 'in scope' })).toBe('ok in scope');
    const calledBefore = files.called.length;
    expect(await callOutcome(client, 'add', { a: 1, b: 2 })).toBe('error -32602');
    expect(files.called.slice(calledBefore)).toEqual([]);
    await expect(connect('git', rawKey)).rejects.toThrow(/403|key_not_allowed/);

    // Edit: all tools of files. The row says so, and add is callable once the change reaches the gateway.
    await keyRow.getByRole('button', { name: `Edit ${keyId}` }).click();
    const edit = page.getByRole('dialog');
    const editFiles = edit.locator('[data-mcp-scope="files"]');
    expect(await editFiles.getByRole('radio', { name: 'Chosen tools' }).isChecked()).toBe(true);
    expect(await editFiles.getByRole('checkbox', { name: 'echo' }).isChecked()).toBe(true);
    await editFiles.getByRole('radio', { name: 'All tools' }).check();
    await edit.getByRole('button', { name: 'Save changes' }).click();
    await edit.waitFor({ state: 'detached' });
    await expect.poll(() => keyRow.getByTestId('key-mcp').innerText()).toBe('mcp: files (all tools)');
    await waitFor('add allowed after the edit', async () => (await callOutcome(client, 'add', { a: 2, b: 3 })) === 'ok 5', 10_000);
    await client.close();

    // Edit again: no access to any server removes the scope.
    await keyRow.getByRole('button', { name: `Edit ${keyId}` }).click();
    const clear = page.getByRole('dialog');
    await clear.locator('[data-mcp-scope="files"]').getByRole('radio', { name: 'No access' }).check();
    await clear.getByRole('button', { name: 'Save changes' }).click();
    await clear.waitFor({ state: 'detached' });
    await expect.poll(() => keyRow.getByTestId('key-mcp').count()).toBe(0);
    const shown = (await (await fetch(`${gateway.adminUrl}/admin/v1/keys/${keyId}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json()) as { mcp: unknown };
    expect(shown.mcp).toBeNull();
    const origin = new URL(gateway.adminUrl).origin;
    expect(requested.filter((url) => new URL(url).origin !== origin)).toEqual([]);
    await page.close();
  }, 120_000);

  it('a viewer sees the MCP page but no write control, and a forced MCP scope write is refused', async () => {
    const { key_id: keyId } = await adminKey({ git: ['*'] });
    const page = await newPage();
    await signIn(page, VIEWER_TOKEN);
    await page.locator('tr[data-key-id]').first().waitFor();
    expect(await page.getByRole('button', { name: 'Create key' }).count()).toBe(0);
    expect(await page.getByRole('button', { name: /^Edit / }).count()).toBe(0);
    await expect.poll(() => page.getByTestId('key-mcp').allInnerTexts()).toContain('mcp: git (all tools)');
    await openMcpPage(page);
    expect(await page.locator('[data-testid="mcp-table"] tbody tr').count()).toBe(2);
    const forced = await page.evaluate(async (id) => {
      const session = (await (await fetch('/dashboard/session')).json()) as { csrf_token: string };
      const answer = await fetch(`/admin/v1/keys/${id}`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/json', 'x-csrf-token': session.csrf_token },
        body: JSON.stringify({ mcp: { files: ['*'] } }),
      });
      return { status: answer.status, type: ((await answer.json()) as { error: { type: string } }).error.type };
    }, keyId);
    expect(forced).toEqual({ status: 403, type: 'insufficient_role' });
    const after = (await (await fetch(`${gateway.adminUrl}/admin/v1/keys/${keyId}`, { headers: { authorization: `Bearer ${VIEWER_TOKEN}` } })).json()) as { mcp: unknown };
    expect(after.mcp).toEqual({ git: ['*'] });
    await page.close();
  }, 120_000);
});
