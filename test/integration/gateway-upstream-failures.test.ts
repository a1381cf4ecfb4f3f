// Bad upstreams: refused, silent, garbage, early close, reset mid-body. Each gets the
// documented answer, and the gateway keeps serving.
import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refusingPort } from '../helpers/free-port.js';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { postChat, startTestGateway, type TestGateway } from '../helpers/gateway.js';

let healthy: FakeUpstream;
let silent: FakeUpstream;
let resetting: FakeUpstream;
let failing: FakeUpstream;
let garbage: Server;
let closing: Server;
let gateway: TestGateway;
let key: string;
const sockets = new Set<Socket>();

function rawServer(onConnection: (socket: Socket) => void): Promise<{ server: Server; port: number }> {
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
    socket.once('data', () => onConnection(socket));
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, port: (server.address() as { port: number }).port })));
}

beforeAll(async () => {
  healthy = await startFakeUpstream();
  silent = await startFakeUpstream(() => {
    /* accepts the request and never answers */
  });
  resetting = await startFakeUpstream((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
    res.write('{"response":"partial');
    setTimeout(() => res.socket?.destroy(), 20);
  });
  failing = await startFakeUpstream((_req, res) => {
    res.writeHead(500, { 'content-type': 'application/json' });
    res.end('{"error":"runner bug"}');
  });
  const garbageServer = await rawServer((socket) => socket.end('this is not HTTP at all\r\n\r\n'));
  garbage = garbageServer.server;
  const closingServer = await rawServer((socket) => socket.destroy());
  closing = closingServer.server;
  const refusedPort = await refusingPort();
  gateway = await startTestGateway({
    agents: {
      healthy: healthy.baseUrl,
      refused: `http://127.0.0.1:${refusedPort}/api/v1`,
      silent: { upstream: silent.baseUrl, timeout: '300ms' },
      garbage: `http://127.0.0.1:${garbageServer.port}/api/v1`,
      closing: `http://127.0.0.1:${closingServer.port}/api/v1`,
      resetting: resetting.baseUrl,
      failing: failing.baseUrl,
    },
  });
  ({ rawKey: key } = await gateway.createKey());
});

afterAll(async () => {
  await gateway?.close();
  for (const socket of sockets) socket.destroy();
  await Promise.all([healthy?.close(), silent?.close(), failing?.close(), resetting?.close(), new Promise((r) => garbage?.close(r)), new Promise((r) => closing?.close(r))]);
});

async function expectAgentUnavailable(agent: string, route: 'chat' | 'chat/stream'): Promise<void> {
  const response = await postChat(gateway.url, `/agents/${agent}/api/v1/${route}`, key, { message: 'hi' });
  expect(response.status).toBe(503);
  expect(response.headers.get('retry-after')).toBe('2');
  const body = (await response.json()) as { error: { type: string; message: string } };
  expect(body.error.type).toBe('agent_unavailable');
  // No internal addresses or stack traces in what the client sees.
  expect(body.error.message).not.toMatch(/127\.0\.0\.1|ECONN|at .*\.js/);
}

async function expectStillServing(): Promise<void> {
  const response = await postChat(gateway.url, '/agents/healthy/api/v1/chat', key, { message: 'still there?' });
  expect(response.status).toBe(200);
  await response.arrayBuffer();
}

describe('upstream failures', () => {
  it.each(['chat', 'chat/stream'] as const)('connect refused → 503 agent_unavailable with Retry-After (%s)', async (route) => {
    await expectAgentUnavailable('refused', route);
    await expectStillServing();
  });

  it('no response headers within the agent timeout → 503', async () => {
    const started = performance.now();
    await expectAgentUnavailable('silent', 'chat');
    expect(performance.now() - started).toBeGreaterThanOrEqual(250);
    await expectStillServing();
  });

  it.each(['chat', 'chat/stream'] as const)('garbage instead of HTTP → 503 (%s)', async (route) => {
    await expectAgentUnavailable('garbage', route);
    await expectStillServing();
  });

  it.each(['chat', 'chat/stream'] as const)('connection closed before any answer → 503 (%s)', async (route) => {
    await expectAgentUnavailable('closing', route);
    await expectStillServing();
  });

  it('reset in the middle of a JSON body → the client connection is cut, not a fake success', async () => {
    const outcome = await postChat(gateway.url, '/agents/resetting/api/v1/chat', key, { message: 'hi' })
      .then(async (response) => ({ status: response.status, body: await response.text() }))
      .catch((error: Error) => ({ error: error.message }));
    if ('error' in outcome) {
      expect(outcome.error).toBeTruthy();
    } else {
      // Headers were already relayed; the body must be visibly short of its Content-Length.
      expect(outcome.body.length).toBeLessThan(1000);
    }
    await expectStillServing();
  });

  it('records the upstream failure kinds in the audit file', async () => {
    const passedThrough = await postChat(gateway.url, '/agents/failing/api/v1/chat', key, { message: 'hi' });
    expect(passedThrough.status).toBe(500);
    expect(await passedThrough.text()).toBe('{"error":"runner bug"}');
    await new Promise((resolve) => setTimeout(resolve, 300));
    const { readFile } = await import('node:fs/promises');
    const lines = (await readFile(`${gateway.dir}/audit.jsonl`, 'utf8')).trim().split('\n').map((line) => JSON.parse(line) as { agent: string; outcome: string; status: number });
    expect(lines.filter((r) => r.agent === 'silent').map((r) => [r.status, r.outcome])).toEqual([[503, 'timeout']]);
    expect(lines.filter((r) => r.agent === 'failing').map((r) => [r.status, r.outcome])).toEqual([[500, 'upstream_error']]);
    expect(lines.filter((r) => r.agent === 'refused').every((r) => r.status === 503 && r.outcome === 'upstream_error')).toBe(true);
  });
});
