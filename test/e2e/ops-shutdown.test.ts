// SIGTERM / SIGINT against the built CLI: stop accepting, /readyz 503, in-flight requests
// finish, streams still open at shutdown_grace end with `event: error` (shutting_down),
// audit records are flushed, and the process exits 0.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FileKeyStore } from '../../src/keys/file-key-store.js';
import { KeyService } from '../../src/keys/key-service.js';
import { parseConfig } from '../../src/config/load-config.js';
import { silentLogger } from '../../src/logger.js';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { startGatewayProcess, type GatewayProcess } from '../helpers/gateway-process.js';
import { openSse } from '../helpers/sse-client.js';
import { sleep } from '../helpers/wait.js';

const GRACE_MS = 1_500;

let dir: string;
let upstream: FakeUpstream;
let key: string;
const started: GatewayProcess[] = [];

function configDocument(name: string): Record<string, unknown> {
  return {
    keys: { file: join(dir, 'keys.json') },
    audit: { file: join(dir, `${name}-audit.jsonl`), spool: join(dir, `${name}-spool.jsonl`) },
    stream: { heartbeat: '10s', idle_timeout: '30s' },
    shutdown_grace: `${GRACE_MS}ms`,
    agents: { support: { upstream: upstream.baseUrl } },
  };
}

async function readyz(gateway: GatewayProcess): Promise<number | 'down'> {
  try {
    return (await fetch(`${gateway.adminUrl}/readyz`)).status;
  } catch {
    return 'down';
  }
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'agentgw-ops-shutdown-'));
  upstream = await startFakeUpstream(async (req, res) => {
    if (req.url?.endsWith('/chat/stream')) {
      // Never finishes on its own: still open when the grace period runs out.
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('event: token\ndata: {"content":"partial"}\n\n');
      return;
    }
    await sleep(700);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ response: 'finished during the drain', tool_calls: [], metadata: { tokens_used: 2 } }));
  });
  const store = await FileKeyStore.open({ path: join(dir, 'keys.json'), logger: silentLogger, watch: false });
  ({ rawKey: key } = await new KeyService({ store, config: parseConfig(configDocument('x'), 'test', {}) }).createKey({ account: 'acme', plan: 'scale', agents: ['support'] }));
  await store.close();
});

afterAll(async () => {
  for (const gateway of started) await gateway.stop('SIGKILL');
  await upstream?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('graceful shutdown', () => {
  it('on SIGTERM drains: readiness 503, no new connections, in-flight work finishes, open streams end with shutting_down, audit flushed, exit 0', async () => {
    const gateway = await startGatewayProcess(dir, 'term', configDocument('term'));
    started.push(gateway);
    const stream = await openSse(`${gateway.url}/agents/support/api/v1/chat/stream`, key, { message: 'long' }, { 'x-request-id': 'shutdown-stream' });
    expect(stream.status).toBe(200);
    const slow = fetch(`${gateway.url}/agents/support/api/v1/chat`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-request-id': 'shutdown-json' },
      body: JSON.stringify({ message: 'slow' }),
    });
    await sleep(150);
    expect(await readyz(gateway)).toBe(200);

    const signalledAt = performance.now();
    gateway.child.kill('SIGTERM');
    let status = await readyz(gateway);
    while (status === 200 && performance.now() - signalledAt < 5_000) status = await readyz(gateway);
    expect(status).toBe(503);
    await expect(fetch(`${gateway.url}/agents/support/api/v1/chat`, { method: 'POST' })).rejects.toThrow();

    const slowAnswer = await slow;
    expect(slowAnswer.status).toBe(200);
    expect(await slowAnswer.json()).toMatchObject({ response: 'finished during the drain' });

    await stream.ended;
    expect(performance.now() - signalledAt).toBeGreaterThanOrEqual(GRACE_MS - 200);
    expect(stream.events.map((e) => e.name)).toEqual(['token', 'error']);
    expect(JSON.parse(stream.events[1]!.data)).toMatchObject({ type: 'shutting_down', request_id: 'shutdown-stream' });

    expect(await gateway.stop()).toEqual({ code: 0, signal: null });
    const records = (await readFile(join(dir, 'term-audit.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { request_id: string; status: number; outcome: string });
    expect(records.find((r) => r.request_id === 'shutdown-json')).toMatchObject({ status: 200, outcome: 'ok' });
    expect(records.find((r) => r.request_id === 'shutdown-stream')).toMatchObject({ status: 200 });
    const output = gateway.output();
    expect(output).toMatch(/"signal":"SIGTERM".*"msg":"shutting down"/);
    expect(output).toMatch(/"exit_code":0.*"msg":"stopped"/);
  });

  it('on SIGINT with nothing in flight exits 0 without waiting for the grace period', async () => {
    // A grace far beyond the test's timeout: an exit at all shows it did not wait for it.
    const gateway = await startGatewayProcess(dir, 'int', { ...configDocument('int'), shutdown_grace: '1h' });
    started.push(gateway);
    // A keep-alive connection left idle must not hold the exit.
    const res = await fetch(`${gateway.url}/agents/support/api/v1/chat/stream`, { method: 'GET' });
    expect(res.status).toBe(405);
    await res.arrayBuffer();
    expect(await gateway.stop('SIGINT')).toEqual({ code: 0, signal: null });
    expect(gateway.output()).toMatch(/"signal":"SIGINT"/);
  });
});
