// The documentation's examples run as written against `npm start`. Every shell block marked
// ```sh runnable in README.md, docs/api.md, docs/admin-api.md, docs/policy.md and docs/mcp.md runs, in order, in one bash
// per file — as a user pastes them into a second terminal — in the directory where a gateway
// runs as `npm start` runs it (serve --demo, config/gateway.yaml, embedded mode, agent
// `demo`). The docs pages start from the README's first block (it exports AGENTGW_ADMIN_TOKEN
// and AGENTGW_KEY, as the README tells the user). Only the ports differ: the gateway runs on
// free ones, and 127.0.0.1:8080 / :9090 in the blocks are rewritten to them. Stricter than a
// user: bash stops at the first failing command, and curl fails on an HTTP error status.
import { spawn } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readFile, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { trackChildProcess } from '../helpers/child-processes.js';
import { freePort } from '../helpers/free-port.js';

const ROOT = process.cwd();
const DOCUMENTS = ['README.md', 'docs/api.md', 'docs/admin-api.md', 'docs/policy.md', 'docs/mcp.md'];

/** The ```sh runnable blocks of a markdown text, in order, with the line each starts on. */
function runnableBlocks(markdown: string): { line: number; code: string }[] {
  const blocks: { line: number; code: string }[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    if (!/^```sh runnable\s*$/.test(lines[i]!)) continue;
    const start = i + 1;
    let end = start;
    while (end < lines.length && !lines[end]!.startsWith('```')) end++;
    blocks.push({ line: start + 1, code: lines.slice(start, end).join('\n') });
    i = end;
  }
  return blocks;
}

let dir: string;
let ports: { gateway: number; admin: number; demo: number };
let gateway: ReturnType<typeof spawn>;
let gatewayOutput = '';
let readmeSetup: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'agentgw-readme-'));
  // The checkout as the user has it: the built dist/ (node_modules resolve from its real
  // path), the bin the docs run (bin/agent-gateway.mjs) and config/gateway.yaml; var/ is made
  // by the gateway, as npm start makes it.
  await symlink(join(ROOT, 'dist'), join(dir, 'dist'));
  await symlink(join(ROOT, 'bin'), join(dir, 'bin'));
  await mkdir(join(dir, 'config'));
  await copyFile(join(ROOT, 'config/gateway.yaml'), join(dir, 'config/gateway.yaml'));
  ports = { gateway: await freePort(), admin: await freePort(), demo: await freePort() };
  // npm start is `node dist/cli/main.js serve --demo` (package.json "start").
  const start = (JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start;
  expect(start).toBe('node dist/cli/main.js serve --demo');
  gateway = trackChildProcess(
    spawn(process.execPath, ['dist/cli/main.js', 'serve', '--demo'], {
      cwd: dir,
      env: { ...process.env, PORT: String(ports.gateway), ADMIN_PORT: String(ports.admin), DEMO_AGENT_URL: `http://127.0.0.1:${ports.demo}/api/v1`, DEMO_MCP_URL: `http://127.0.0.1:${ports.demo}/mcp`, REDIS_URL: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  gateway.stdout!.on('data', (c: Buffer) => (gatewayOutput += c.toString()));
  gateway.stderr!.on('data', (c: Buffer) => (gatewayOutput += c.toString()));
  const deadline = Date.now() + 60_000;
  while (!gatewayOutput.includes('Make another key')) {
    if (gateway.exitCode !== null || Date.now() > deadline) throw new Error(`the gateway did not start:\n${gatewayOutput}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  readmeSetup = runnableBlocks(await readFile(join(ROOT, 'README.md'), 'utf8'))[0]!.code;
}, 90_000);

afterAll(async () => {
  if (gateway && gateway.exitCode === null) {
    gateway.kill('SIGTERM');
    await new Promise((resolve) => gateway.once('exit', resolve));
  }
  await rm(dir, { recursive: true, force: true });
});

/** A block with the documented ports swapped for the test gateway's. */
function onTestPorts(code: string): string {
  return code.replaceAll('127.0.0.1:8080', `127.0.0.1:${ports.gateway}`).replaceAll('127.0.0.1:9090', `127.0.0.1:${ports.admin}`);
}

/** Runs the blocks in one bash; resolves with what it printed and its exit status. */
function runBlocks(document: string, blocks: { line: number; code: string }[]): Promise<{ code: number | null; output: string }> {
  const script = [
    // -E: the ERR trap also fires inside functions and $(…), where a doc's helper runs curl.
    'set -Eeo pipefail',
    // An HTTP error status is a failure here (curl -s alone exits 0 on a 400).
    'curl() { command curl --fail-with-body "$@"; }',
    `trap 'echo "FAILED: ${document} block at line $BLOCK_LINE: $BASH_COMMAND" >&2' ERR`,
    ...blocks.flatMap((block) => [`BLOCK_LINE=${block.line}`, onTestPorts(block.code)]),
    '',
  ].join('\n');
  return new Promise((resolve, reject) => {
    // The user's shell: none of the gateway's port variables, nothing but what the blocks set.
    const env = { ...process.env };
    for (const name of ['PORT', 'ADMIN_PORT', 'DEMO_AGENT_URL', 'REDIS_URL', 'AGENTGW_ADMIN_TOKEN', 'AGENTGW_KEY']) delete env[name];
    const child = trackChildProcess(spawn('bash', ['-c', script], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] }));
    let output = '';
    child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 150_000);
    child.once('error', reject);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

describe('the documentation examples, against npm start', () => {
  it('finds the runnable blocks of each document', async () => {
    const counts = await Promise.all(DOCUMENTS.map(async (document) => runnableBlocks(await readFile(join(ROOT, document), 'utf8')).length));
    for (const [i, count] of counts.entries()) expect(count, DOCUMENTS[i]).toBeGreaterThan(0);
    // A block the extractor would miss (a typo in the marker) is caught here.
    for (const document of DOCUMENTS) expect(await readFile(join(ROOT, document), 'utf8'), document).not.toMatch(/^```(bash|shell|console)\s+runnable|^```sh\s{2,}runnable/m);
  });

  it.each(DOCUMENTS)('%s: every runnable block runs as written', async (document) => {
    const blocks = runnableBlocks(await readFile(join(ROOT, document), 'utf8'));
    const setup = document === 'README.md' ? [] : [{ line: 0, code: readmeSetup }];
    const { code, output } = await runBlocks(document, [...setup, ...blocks]);
    expect(code, `${output}\n--- gateway ---\n${gatewayOutput.slice(-3_000)}`).toBe(0);
    expect(output).not.toContain('FAILED:');
    if (document === 'README.md') {
      // The stream reached its end, and the admin API and the CLI answered.
      expect(output).toContain('event: done');
      expect(output).toMatch(/"key":"ha_[0-9A-Za-z]{38}"/);
      expect(output).toMatch(/"actor":"cli:[^"]+","action":"key\.rotate"/);
    }
    if (document === 'docs/policy.md') {
      // One visitor's 20 admitted, the 21st refused naming the field, another visitor admitted.
      expect(output).toMatch(/^\s*20 200$/m);
      expect(output).toMatch(/^HTTP\/1\.1 429/m);
      expect(output).toMatch(/^ratelimit-policy: .*"user-minute";q=20;w=60/im);
      expect(output).toContain('"param":"context.user_id"');
      expect(output).toMatch(/^200$/m);
      // Tool scope: a tool outside the scope refused naming the field; the scope forwarded in
      // place of no tools (no calculator), the unscoped demo key computing; then the widened scope.
      expect(output).toMatch(/^HTTP\/1\.1 400/m);
      expect(output).toContain('"param":"tools"');
      expect(output).toContain('You said: \\"What is 6 * 7?\\"');
      expect(output).toContain('search,web_search,calculator');
      // Twice in the tool scope's example, once in the cost example's answer.
      expect(output.split('The answer to 6 * 7 is 42.').length - 1).toBe(3);
      // Tool-call quotas: two answers with a calculator call, then the named tool refused and the unnamed request without it.
      expect(output.split('HTTP/1.1 200 "tool":"calculator"\n').length - 1).toBe(2);
      expect(output).toMatch(/^HTTP\/1\.1 429 "type":"tool_budget_exceeded"$/m);
      expect(output).toMatch(/^HTTP\/1\.1 200 tools-withheld: calculator$/im);
      // Cost budgets: one answer admitted, then the tiny budget refuses.
      expect(output).toMatch(/^HTTP\/1\.1 200$/m);
      expect(output).toMatch(/^HTTP\/1\.1 429 "type":"cost_budget_exceeded"$/m);
      // Cost in dollars: the record of one calculator answer, the stream's facts, the report and the metrics.
      expect(output).toContain('{"tokens_used":8,"model":"demo-echo-1","cost_usd":0.004,"tool_calls":["calculator"]}');
      expect(output).toMatch(/^data: \{"tokens_used":\d+,"latency_ms":\d+,"model":"demo-echo-1"\}/m);
      expect(output).toMatch(/^demo \S+: \d+ requests, \$0\.\d+$/m);
      expect(output).toMatch(/^agentgw_tool_calls_total\{agent="demo",tool="calculator",verdict="allowed"\} [1-9]/m);
      expect(output).toMatch(/^agentgw_cost_usd_total\{agent="demo"\} 0\.\d+/m);
    }
    if (document === 'docs/mcp.md') {
      // /mcp/demo-tools, then /mcp: the aggregated list names the tools {server}__{tool}, and both calls of add answered.
      expect(output).toContain('"name":"demo-tools__add"');
      expect(output).not.toContain('"name":"demo-tools__time"');
      expect(output.split('"text":"13"').length - 1).toBe(2);
    }
  }, 180_000);
});
