// A second `npm start` beside a running one (or any port already taken): `serve` exits 1 with
// one line that names the listener, the address, and the setting and environment variable
// that choose its port (PORT, ADMIN_PORT, DEMO_AGENT_URL with the shipped config).
import { execFile } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/free-port.js';
import { CLI_PATH } from '../helpers/cli.js';

let dir: string;
let holder: Server;
let taken: number;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'agentgw-in-use-'));
  await mkdir(join(dir, 'config'));
  await copyFile('config/gateway.yaml', join(dir, 'config/gateway.yaml'));
  holder = createServer();
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
  taken = (holder.address() as { port: number }).port;
});

afterAll(async () => {
  await new Promise((resolve) => holder.close(resolve));
  await rm(dir, { recursive: true, force: true });
});

/** `npm start`'s entry in the test's directory; a generous timeout only bounds a hang. */
async function serveDemo(env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [CLI_PATH, 'serve', '--demo'], { cwd: dir, env: { ...process.env, REDIS_URL: '', ...env }, timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

describe('a listener whose port is taken', () => {
  it.each([
    ['gateway', 'PORT', /listen\.port in config\/gateway\.yaml, or the PORT environment variable, which overrides it/],
    ['admin', 'ADMIN_PORT', /admin\.port in config\/gateway\.yaml, which reads the ADMIN_PORT environment variable/],
    ['demo agent', 'DEMO_AGENT_URL', /agents\.demo\.upstream in config\/gateway\.yaml, which reads the DEMO_AGENT_URL environment variable/],
  ])('the %s listener: exit 1, one line naming the address, the setting and %s', async (listener, variable, setting) => {
    const env: Record<string, string> = { PORT: String(await freePort()), ADMIN_PORT: String(await freePort()), DEMO_AGENT_URL: `http://127.0.0.1:${await freePort()}/api/v1` };
    env[variable] = variable === 'DEMO_AGENT_URL' ? `http://127.0.0.1:${taken}/api/v1` : String(taken);
    const { code, stderr } = await serveDemo(env);
    expect(code, stderr).toBe(1);
    const line = stderr.trimEnd().split('\n').at(-1)!;
    expect(line).toContain(`agent-gateway: the ${listener} listener cannot listen on 127.0.0.1:${taken}: the address is already in use`);
    expect(line).toMatch(setting);
    expect(stderr).not.toMatch(/\n\s+at /); // no stack trace
  }, 90_000);
});
