// What a new user does: `npm start` (serve --demo with config/gateway.yaml) from a fresh
// directory, then the printed curl line. Tokens must arrive one by one. Every start prints
// the dashboard's address, a demo admin token that signs in, and a working keys create line.
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { copyFile, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { builtCliOutput, spawnBuiltCli } from '../helpers/cli.js';
import { freePort } from '../helpers/free-port.js';
import { openSse } from '../helpers/sse-client.js';

let child: ChildProcess | undefined;
let dir: string | undefined;

afterEach(async () => {
  if (child && child.exitCode === null) {
    child.kill('SIGTERM');
    await once(child, 'exit');
  }
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function startDemo(workDir: string, env: NodeJS.ProcessEnv): Promise<{ process: ChildProcess; output: () => string }> {
  const demo = spawnBuiltCli(['serve', '--demo', '--config', 'gateway.yaml'], { cwd: workDir, env });
  await demo.waitForOutput((output) => output.includes('Make another key'), 'npm start to come up', 15_000);
  return { process: demo.child, output: demo.output };
}

/** The dashboard block of the banner: address, demo admin token, keys create line. */
function dashboardBlock(output: string): { url: string; token: string; createLine: string } {
  const url = /Dashboard: (http:\/\/\S+\/dashboard\/)/.exec(output)?.[1];
  const token = /Sign in with the demo admin token \(kept in var\/demo-admin-token\):\n\s+([0-9a-f]{64})\n/.exec(output)?.[1];
  const createLine = /\n\s+(node bin\/agent-gateway\.mjs keys create [^\n]+)\n/.exec(output)?.[1];
  if (!url || !token || !createLine) throw new Error(`no dashboard block in:\n${output}`);
  return { url, token, createLine };
}

async function signsIn(adminPort: string, token: string): Promise<number> {
  const answer = await fetch(`http://127.0.0.1:${adminPort}/dashboard/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token }) });
  return answer.status;
}

describe('npm start (serve --demo)', () => {
  it('serves the demo agent in embedded mode, prints a working key once, and streams tokens one by one', async () => {
    dir = await mkdtemp(join(tmpdir(), 'agentgw-start-'));
    await copyFile('config/gateway.yaml', join(dir, 'gateway.yaml'));
    const env = { PORT: String(await freePort()), ADMIN_PORT: String(await freePort()), DEMO_AGENT_URL: `http://127.0.0.1:${await freePort()}/api/v1`, REDIS_URL: '' };

    const first = await startDemo(dir, env);
    child = first.process;
    await new Promise((r) => setTimeout(r, 300));
    const key = /Bearer (ha_[0-9A-Za-z]+)/.exec(first.output())?.[1];
    expect(key, first.output()).toBeDefined();
    expect(first.output()).toContain(`curl -N http://127.0.0.1:${env.PORT}/agents/demo/api/v1/chat/stream`);
    expect((await stat(join(dir, 'var/keys.json'))).isFile()).toBe(true);
    const dashboard = dashboardBlock(first.output());
    expect(dashboard.url).toBe(`http://127.0.0.1:${env.ADMIN_PORT}/dashboard/`);
    expect((await fetch(dashboard.url)).status).toBe(200);
    expect(await signsIn(env.ADMIN_PORT, dashboard.token)).toBe(201);
    const tokenFile = await stat(join(dir, 'var/demo-admin-token'));
    expect(tokenFile.mode & 0o777).toBe(0o600);
    expect((await readFile(join(dir, 'var/demo-admin-token'), 'utf8')).trim()).toBe(dashboard.token);
    // The printed keys create line works as printed (from the checkout: bin/agent-gateway.mjs, the shim before dist/cli/main.js).
    const args = dashboard.createLine.replace(/^node bin\/agent-gateway\.mjs /, '').match(/"[^"]*"|\S+/g)!.map((a) => a.replace(/^"|"$/g, ''));
    const made = await builtCliOutput(args, { cwd: dir, env });
    expect(made.split('\n')[0]).toMatch(/^ha_[0-9A-Za-z]{38}$/);
    // The same token opens the admin API.
    const listed = await fetch(`http://127.0.0.1:${env.ADMIN_PORT}/admin/v1/keys`, { headers: { authorization: `Bearer ${dashboard.token}` } });
    expect(listed.status).toBe(200);
    expect(JSON.stringify(await listed.json())).toContain('demo key (npm start)');

    const stream = await openSse(`http://127.0.0.1:${env.PORT}/agents/demo/api/v1/chat/stream`, key!, { message: 'Hello, agent' });
    await stream.ended;
    expect(stream.status).toBe(200);
    const tokens = stream.events.filter((e) => e.name === 'token');
    expect(tokens.length).toBeGreaterThan(5);
    // One by one: the tokens arrive spread over time, not in one burst.
    expect(tokens.at(-1)!.atMs - tokens[0]!.atMs).toBeGreaterThan(100 * (tokens.length - 2) * 0.5);
    expect(new Set(stream.chunks.map((c) => Math.round(c.atMs))).size).toBeGreaterThan(5);
    expect(stream.events.at(-1)!.name).toBe('done');

    child.kill('SIGTERM');
    const [code] = await once(child, 'exit');
    expect(code).toBe(0);

    // A second start finds the key and prints no new one.
    const second = await startDemo(dir, env);
    child = second.process;
    await new Promise((r) => setTimeout(r, 300));
    expect(second.output()).not.toMatch(/ha_[0-9A-Za-z]{10,}/);
    // ... but the dashboard block again, with the same token, which still signs in.
    expect(dashboardBlock(second.output())).toEqual(dashboard);
    expect(await signsIn(env.ADMIN_PORT, dashboard.token)).toBe(201);
  });
});
