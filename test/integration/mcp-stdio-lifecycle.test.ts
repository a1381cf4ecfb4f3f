// The lives of stdio MCP servers' children (docs/mcp.md "stdio servers"): an idle session
// (mcp.session_idle without a request) stops its child and answers 404; the gateway's shutdown
// stops every child — SIGTERM, then SIGKILL for one that ignores it — and leaves none behind.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { runningChildren } from '../helpers/process-children.js';
import { waitFor } from '../helpers/wait.js';

const SERVER = join(process.cwd(), 'test/fixtures/mcp-stdio/sdk-server.mjs');
const HOSTILE = join(process.cwd(), 'test/fixtures/mcp-stdio/hostile-server.mjs');
let idleGateway: TestGateway;
let key: string;

function start(config: Record<string, unknown> = {}): Promise<TestGateway> {
  return startTestGateway({
    agents: { support: 'http://127.0.0.1:9/api/v1' },
    config: {
      plans: { scale: { windows: [{ requests: 100_000, per: '1m' }] } },
      mcp_servers: {
        local: { command: [process.execPath, SERVER, '--lifecycle'] },
        stubborn: { command: [process.execPath, HOSTILE, '--ignore-sigterm'] },
      },
      ...config,
    },
  });
}

beforeAll(async () => {
  idleGateway = await start({ mcp: { session_idle: '2s' } });
  key = (await idleGateway.createKey({ mcp: { local: ['*'], stubborn: ['*'] } })).rawKey;
}, 60_000);

afterAll(async () => {
  await idleGateway?.close();
});

function post(server: string, message: unknown, session?: string, gateway = idleGateway, rawKey = key): Promise<Response> {
  return fetch(`${gateway.url}/mcp/${server}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${rawKey}`, 'content-type': 'application/json', accept: 'application/json', 'mcp-protocol-version': '2025-06-18', ...(session === undefined ? {} : { 'mcp-session-id': session }) },
    body: JSON.stringify(message),
  });
}

async function openSession(server: string, gateway = idleGateway, rawKey = key): Promise<{ session: string; pid: number }> {
  const init = await post(server, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }, undefined, gateway, rawKey);
  expect(init.status).toBe(200);
  await init.text();
  const session = init.headers.get('mcp-session-id')!;
  const answer = (await (await post(server, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'pid', arguments: {} } }, session, gateway, rawKey)).json()) as { result: { content: { text: string }[] } };
  return { session, pid: Number(answer.result.content[0]!.text) };
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('stdio MCP children', () => {
  it('an idle session stops its child; the next request is 404', async () => {
    const { session, pid } = await openSession('local');
    expect(isRunning(pid)).toBe(true);
    await waitFor('the idle child is gone', () => !isRunning(pid), 30_000);
    const after = await post('local', { jsonrpc: '2.0', id: 2, method: 'ping' }, session);
    expect(after.status).toBe(404);
  });

  it("the gateway's shutdown stops every child, one that ignores SIGTERM included: none is left", async () => {
    // Its own gateway, with the default idle expiry: no child may end before the shutdown does it.
    const gateway = await start();
    const ownKey = (await gateway.createKey({ mcp: { local: ['*'], stubborn: ['*'] } })).rawKey;
    const before = new Set(runningChildren(process.pid, 'mcp-stdio/'));
    const sessions = [await openSession('local', gateway, ownKey), await openSession('local', gateway, ownKey), await openSession('stubborn', gateway, ownKey)];
    for (const { pid } of sessions) {
      expect(isRunning(pid)).toBe(true);
      expect(before.has(pid)).toBe(false);
    }
    await gateway.close();
    for (const { pid } of sessions) expect(isRunning(pid)).toBe(false);
    expect(runningChildren(process.pid, 'mcp-stdio/').filter((pid) => !before.has(pid))).toEqual([]);
  }, 60_000);
});
