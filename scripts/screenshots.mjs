// `npm run screenshots`: the README's pictures of the dashboard (docs/images/*.png), taken
// with the browser the end-to-end tests use (scripts/chromium.mjs). It runs `serve --demo`
// in a scratch directory, makes a few keys and real requests through the demo agent, and
// photographs each page. Run it by hand when the dashboard changes; the tests never do.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launchChromium } from './chromium.mjs';
import { freePort } from './free-port.mjs';

const ROOT = process.cwd();
const OUT = join(ROOT, 'docs/images');
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const dir = await mkdtemp(join(tmpdir(), 'agentgw-screenshots-'));
const demoPort = await freePort();
await writeFile(
  join(dir, 'gateway.yaml'),
  [
    'listen: { host: 127.0.0.1, port: 0 }',
    'admin: { host: 127.0.0.1, port: 0 }',
    'agents:',
    `  demo: { upstream: "http://127.0.0.1:${demoPort}/api/v1", tools: [search, calculator] }`,
    `  support: { upstream: "http://127.0.0.1:${demoPort}/api/v1" }`,
    'log: { level: warn }',
    '',
  ].join('\n'),
);
const child = spawn(process.execPath, [join(ROOT, 'dist/cli/main.js'), 'serve', '--demo', '--config', 'gateway.yaml'], { cwd: dir, env: { ...process.env, REDIS_URL: '', PORT: '' }, stdio: ['ignore', 'pipe', 'pipe'] });
let output = '';
child.stdout.on('data', (c) => (output += c));
child.stderr.on('data', (c) => (output += c));
let browser;
try {
  const deadline = Date.now() + 20_000;
  let match;
  while (!(match = /listening on http:\/\/127\.0\.0\.1:(\d+) \(admin :(\d+)/.exec(output)) || !output.includes('Make another key')) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`serve --demo did not start:\n${output}`);
    await sleep(50);
  }
  const gateway = `http://127.0.0.1:${match[1]}`;
  const admin = `http://127.0.0.1:${match[2]}`;
  const adminToken = (await readFile(join(dir, 'var/demo-admin-token'), 'utf8')).trim();

  const api = async (method, path, body) => {
    const response = await fetch(`${admin}${path}`, { method, headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' }, body: body && JSON.stringify(body) });
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
    return response.json();
  };
  const keys = [
    await api('POST', '/admin/v1/keys', { account: 'acme', plan: 'pro', agents: ['demo', 'support'], name: 'acme production', expires_in: '90d' }),
    await api('POST', '/admin/v1/keys', { account: 'acme', plan: 'starter', agents: ['demo'], name: 'acme staging' }),
    await api('POST', '/admin/v1/keys', { account: 'globex', plan: 'starter', agents: ['support'], name: 'globex support bot', expires_in: '30d' }),
  ];
  const retired = await api('POST', '/admin/v1/keys', { account: 'initech', plan: 'starter', agents: ['demo'], name: 'initech trial' });
  await api('POST', `/admin/v1/keys/${retired.key_id}/revoke`);
  const chat = (key, agent, message) =>
    fetch(`${gateway}/agents/${agent}/api/v1/chat`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ message }) });
  const plan = [
    [keys[0], 'demo', 14],
    [keys[0], 'support', 6],
    [keys[1], 'demo', 5],
    [keys[2], 'support', 9],
  ];
  let sent = 0;
  for (const [key, agent, n] of plan) {
    for (let i = 0; i < n; i++) {
      const answer = await chat(key.key, agent, `What is ${i} * 7?`);
      await answer.arrayBuffer();
      if (answer.status !== 200) throw new Error(`chat answered ${answer.status}`);
      sent++;
    }
  }
  // A call with the revoked key: refused before any key is known, so not in the usage.
  await (await chat(retired.key, 'demo', 'hello?')).arrayBuffer();
  // Wait for the rollups to hold every answered request.
  for (let tries = 0; ; tries++) {
    const usage = await api('GET', '/admin/v1/usage?group_by=agent&granularity=hour');
    if (usage.data.reduce((total, row) => total + row.requests, 0) >= sent) break;
    if (tries > 100) throw new Error('usage rollups did not arrive');
    await sleep(100);
  }

  // And for last_used_at, which the gateway writes in batches every few seconds.
  for (let tries = 0; ; tries++) {
    const listed = await api('GET', '/admin/v1/keys');
    if (listed.data.filter((k) => keys.some((made) => made.key_id === k.key_id)).every((k) => k.last_used_at !== null)) break;
    if (tries > 150) throw new Error('last_used_at was not written');
    await sleep(100);
  }

  await mkdir(OUT, { recursive: true });
  browser = await launchChromium({ viewport: { width: 1200, height: 720 } });
  const page = await browser.context.newPage();
  await page.goto(`${admin}/dashboard/`);
  await page.getByLabel('Admin token').fill(adminToken);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.locator('tr[data-key-id]').first().waitFor();
  await page.screenshot({ path: join(OUT, 'dashboard-keys.png') });

  await page.getByRole('button', { name: 'Create key' }).click();
  const dialog = page.getByRole('dialog', { name: 'Create key' });
  await dialog.getByLabel('Account').fill('umbrella');
  await dialog.getByLabel('Name (optional)').fill('umbrella analytics');
  await dialog.getByRole('checkbox', { name: 'demo' }).check();
  await dialog.getByRole('button', { name: 'Create key' }).click();
  await page.getByText('You will not see it again.').waitFor();
  await page.screenshot({ path: join(OUT, 'dashboard-new-key.png') });
  await page.getByRole('button', { name: 'I have copied it' }).click();

  await page.getByRole('link', { name: 'Usage' }).click();
  await page.getByLabel('Split by').selectOption('key');
  await page.locator('[data-testid=usage-totals] tbody tr').nth(2).waitFor();
  const plot = await page.locator('[data-testid=usage-chart] .u-over').boundingBox();
  await page.mouse.move(plot.x + plot.width - 3, plot.y + plot.height / 2);
  await page.screenshot({ path: join(OUT, 'dashboard-usage.png') });

  await page.getByRole('link', { name: 'Agents' }).click();
  await page.getByTestId('agents-table').waitFor();
  await page.screenshot({ path: join(OUT, 'dashboard-agents.png') });
  process.stdout.write(`wrote ${['keys', 'new-key', 'usage', 'agents'].map((n) => `docs/images/dashboard-${n}.png`).join(', ')}\n`);
} finally {
  await browser?.close();
  if (child.exitCode === null) {
    child.kill('SIGTERM');
    await once(child, 'exit');
  }
  await rm(dir, { recursive: true, force: true });
}
