// docs/identity.md's walk-through runs as written: `node examples/identity/demo.mjs` (npm
// start's demo beside a local oidc-provider) in a copy of the checkout, then every ```sh
// runnable block of the page in one bash, as a user pastes them into a second terminal. Only
// the ports differ: the gateway, its admin listener and the provider run on free ones, and
// 127.0.0.1:8080 / :9090 / :9400 in the blocks are rewritten to them. As in
// readme-examples.test.ts, bash stops at the first failing command and curl fails on an HTTP
// error status (the block that shows a 401 asks curl for the status without failing).
import { spawn } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readFile, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signalTracked, trackChildProcess } from '../helpers/child-processes.js';
import { freePort } from '../helpers/free-port.js';

const ROOT = process.cwd();

function runnableBlocks(markdown: string): string[] {
  const blocks: string[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    if (!/^```sh runnable\s*$/.test(lines[i]!)) continue;
    let end = i + 1;
    while (end < lines.length && !lines[end]!.startsWith('```')) end++;
    blocks.push(lines.slice(i + 1, end).join('\n'));
    i = end;
  }
  return blocks;
}

let dir: string;
let ports: { gateway: number; admin: number; idp: number; demo: number };
let demo: ReturnType<typeof spawn>;
let output = '';

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'agentgw-identity-example-'));
  await symlink(join(ROOT, 'dist'), join(dir, 'dist'));
  // The example imports oidc-provider, jose and yaml from the checkout's node_modules.
  await symlink(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  await mkdir(join(dir, 'config'));
  await mkdir(join(dir, 'examples/identity'), { recursive: true });
  await copyFile(join(ROOT, 'config/gateway.yaml'), join(dir, 'config/gateway.yaml'));
  await copyFile(join(ROOT, 'examples/identity/demo.mjs'), join(dir, 'examples/identity/demo.mjs'));
  ports = { gateway: await freePort(), admin: await freePort(), idp: await freePort(), demo: await freePort() };
  demo = trackChildProcess(
    spawn(process.execPath, ['examples/identity/demo.mjs'], {
      cwd: dir,
      env: { ...process.env, PORT: String(ports.gateway), ADMIN_PORT: String(ports.admin), IDP_PORT: String(ports.idp), DEMO_AGENT_URL: `http://127.0.0.1:${ports.demo}/api/v1`, DEMO_MCP_URL: `http://127.0.0.1:${ports.demo}/mcp`, REDIS_URL: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  demo.stdout!.on('data', (c: Buffer) => (output += c.toString()));
  demo.stderr!.on('data', (c: Buffer) => (output += c.toString()));
  const deadline = Date.now() + 60_000;
  while (!output.includes('Make another key')) {
    if (demo.exitCode !== null || Date.now() > deadline) throw new Error(`the example did not start:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}, 90_000);

afterAll(async () => {
  if (demo && demo.exitCode === null) {
    signalTracked(demo, 'SIGTERM');
    await new Promise((resolve) => demo.once('exit', resolve));
  }
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('docs/identity.md against examples/identity/demo.mjs', () => {
  it('every runnable block runs as written: a token from the provider is admitted, an unsigned one refused, the MCP challenge and metadata name the provider, an MCP token opens a session', async () => {
    const blocks = runnableBlocks(await readFile(join(ROOT, 'docs/identity.md'), 'utf8'));
    expect(blocks.length).toBe(4);
    const script = ['set -Eeo pipefail', 'curl() { command curl --fail-with-body "$@"; }', ...blocks]
      .join('\n')
      .replaceAll('127.0.0.1:8080', `127.0.0.1:${ports.gateway}`)
      .replaceAll('127.0.0.1:9090', `127.0.0.1:${ports.admin}`)
      .replaceAll('127.0.0.1:9400', `127.0.0.1:${ports.idp}`);
    // The 401 blocks ask for the status themselves: curl's --fail-with-body would stop the script.
    const result = await new Promise<{ code: number | null; text: string }>((resolve, reject) => {
      const child = trackChildProcess(spawn('bash', ['-c', script.replace(/curl -s -o \/dev\/null/g, 'command curl -s -o /dev/null')], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] }));
      let text = '';
      child.stdout!.on('data', (c: Buffer) => (text += c.toString()));
      child.stderr!.on('data', (c: Buffer) => (text += c.toString()));
      child.once('error', reject);
      child.once('exit', (code) => resolve({ code, text }));
    });
    expect(result.code, `${result.text}\n--- example ---\n${output.slice(-3_000)}`).toBe(0);
    expect(result.text).toContain(String.raw`"response":"You said: \"hello from a token\"`);
    expect(result.text).toContain('401 Bearer error="invalid_token"');
    const metadataUrl = `http://127.0.0.1:${ports.gateway}/.well-known/oauth-protected-resource/mcp/demo-tools`;
    expect(result.text).toContain(`401 Bearer resource_metadata="${metadataUrl}"\n`);
    const metadataLine = result.text.split('\n').find((line) => line.startsWith('{"resource"'))!;
    expect(JSON.parse(metadataLine)).toEqual({
      resource: `http://127.0.0.1:${ports.gateway}/mcp/demo-tools`,
      authorization_servers: [`http://127.0.0.1:${ports.idp}`],
      bearer_methods_supported: ['header'],
      resource_signing_alg_values_supported: ['RS256', 'ES256', 'EdDSA'],
    });
    // The MCP token's initialize: the demo MCP server's answer, through the gateway.
    expect(result.text).toMatch(/"serverInfo":\{"name":"[^"]+"/);
  }, 120_000);
});
