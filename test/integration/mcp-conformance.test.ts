// The official MCP conformance suite (@modelcontextprotocol/conformance, server mode) against a
// test server implementing its scenarios (test/helpers/mcp-conformance-server.ts): each
// scenario is run directly against the server and through the gateway's /mcp/{server}, and
// must pass both ways. The suite's client sends no API key: a small proxy adds the key.
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startHeaderProxy, type HeaderProxy } from '../helpers/header-proxy.js';
import { CONFORMANCE_SCENARIOS, startConformanceServer, type ConformanceServer } from '../helpers/mcp-conformance-server.js';
import { trackChildProcess } from '../helpers/child-processes.js';

const require = createRequire(import.meta.url);
const CLI = join(dirname(require.resolve('@modelcontextprotocol/conformance/package.json')), 'dist/index.js');

let server: ConformanceServer;
let gateway: TestGateway;
let proxy: HeaderProxy;
let resultsDir: string;

beforeAll(async () => {
  server = await startConformanceServer();
  resultsDir = await mkdtemp(join(tmpdir(), 'agentgw-conformance-'));
  gateway = await startTestGateway({ agents: { support: 'http://127.0.0.1:9/api/v1' }, config: { mcp_servers: { everything: { upstream: server.url, timeout: '30s' } } } });
  const key = (await gateway.createKey({ mcp: { everything: ['*'] } })).rawKey;
  proxy = await startHeaderProxy(gateway.url, { authorization: `Bearer ${key}` });
}, 60_000);

afterAll(async () => {
  await proxy?.close();
  await gateway?.close();
  await server?.close();
  if (resultsDir) await rm(resultsDir, { recursive: true, force: true });
});

/** One scenario's run of the suite's CLI: its exit code (0: passed) and what it printed. */
function runScenario(url: string, scenario: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = trackChildProcess(spawn(process.execPath, [CLI, 'server', '--url', url, '--scenario', scenario], { cwd: resultsDir, stdio: ['ignore', 'pipe', 'pipe'] }));
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
    child.once('error', reject);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

/** Runs `scenarios` four at a time against `url`; the failed ones with their output. */
async function failures(url: string): Promise<Record<string, string>> {
  const failed: Record<string, string> = {};
  const queue = [...CONFORMANCE_SCENARIOS];
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      for (let scenario = queue.shift(); scenario !== undefined; scenario = queue.shift()) {
        const { code, output } = await runScenario(url, scenario);
        if (code !== 0) failed[scenario] = output.slice(-2000);
      }
    }),
  );
  return failed;
}

describe('the official MCP conformance suite', () => {
  it('passes every implemented scenario against the test server directly', async () => {
    expect(await failures(server.url)).toEqual({});
  }, 600_000);

  it('passes the same scenarios through the gateway /mcp/{server}', async () => {
    expect(await failures(`${proxy.url}/mcp/everything`)).toEqual({});
  }, 600_000);
});
