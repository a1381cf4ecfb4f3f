// Hostile stdio MCP servers behind the front door (docs/mcp.md "stdio servers", "Bad input"):
// a child that prints garbage, a 10 MB line, exits at once, never answers, floods
// notifications, or calls back forever, and a command that does not exist. Each is bounded and
// answered with a clear JSON-RPC error; the gateway keeps serving other sessions.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait.js';

const HOSTILE = join(process.cwd(), 'test/fixtures/mcp-stdio/hostile-server.mjs');
let gateway: TestGateway;
let key: string;

beforeAll(async () => {
  gateway = await startTestGateway({
    agents: { support: 'http://127.0.0.1:9/api/v1' },
    config: {
      plans: { scale: { windows: [{ requests: 100_000, per: '1m' }] } },
      mcp_servers: {
        // Deadlines a loaded machine cannot miss; `sleepy` (the same child) has a short one for the test of silence.
        hostile: { command: [process.execPath, HOSTILE], timeout: '60s' },
        sleepy: { command: [process.execPath, HOSTILE], timeout: '2s' },
        // A flood is not an answer: it does not hold the call open, so the floods get a long deadline of their own.
        flooder: { command: [process.execPath, HOSTILE], timeout: '120s' },
        quitter: { command: [process.execPath, HOSTILE, '--exit-at-once'] },
        missing: { command: ['/nonexistent/agentgw-no-such-mcp-server'] },
      },
      mcp: { max_response: 1024 * 1024 },
    },
  });
  key = (await gateway.createKey({ mcp: { hostile: ['*'], sleepy: ['*'], flooder: ['*'], quitter: ['*'], missing: ['*'] } })).rawKey;
}, 60_000);

afterAll(async () => {
  await gateway?.close();
});

function post(server: string, message: unknown, headers: Record<string, string> = {}, signal?: AbortSignal): Promise<Response> {
  return fetch(`${gateway.url}/mcp/${server}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18', ...headers },
    body: JSON.stringify(message),
    signal,
  });
}

async function initialize(server = 'hostile'): Promise<string> {
  const response = await post(server, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: { roots: {} }, clientInfo: { name: 'raw', version: '1' } } });
  expect(response.status).toBe(200);
  await response.text();
  return response.headers.get('mcp-session-id')!;
}

function call(session: string, id: number, name: string, accept = 'application/json', signal?: AbortSignal, server = 'hostile'): Promise<Response> {
  return post(server, { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {} } }, { 'mcp-session-id': session, accept }, signal);
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The gateway still serves: a fresh session answers a call. */
async function stillServing(): Promise<void> {
  const session = await initialize();
  const answer = await call(session, 1, 'pid');
  expect(answer.status).toBe(200);
  expect(await answer.json()).toMatchObject({ id: 1, result: { content: [{ type: 'text' }] } });
  await fetch(`${gateway.url}/mcp/hostile`, { method: 'DELETE', headers: { authorization: `Bearer ${key}`, 'mcp-session-id': session } });
}

describe('hostile stdio MCP servers', () => {
  it('lines that are not JSON-RPC messages are dropped; the call is still answered', async () => {
    const session = await initialize();
    const answer = await call(session, 7, 'garbage');
    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual({ jsonrpc: '2.0', id: 7, result: { content: [{ type: 'text', text: 'survived garbage' }] } });
  });

  it('a 10 MB line (over mcp.max_response) kills the child and answers 502 -32603; its session is then 404', async () => {
    const session = await initialize();
    const pid = Number(((await (await call(session, 1, 'pid')).json()) as { result: { content: { text: string }[] } }).result.content[0]!.text);
    const answer = await call(session, 2, 'huge-line');
    expect(answer.status).toBe(502);
    expect(await answer.json()).toMatchObject({ id: 2, error: { code: -32603, message: expect.stringContaining('mcp.max_response') } });
    await waitFor('the child is gone', () => !isRunning(pid), 15_000);
    expect((await call(session, 3, 'pid')).status).toBe(404);
    await stillServing();
  });

  it('a child that exits at once: initialize is 502 -32603 and no session is opened', async () => {
    const answer = await post('quitter', { jsonrpc: '2.0', id: 'i', method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
    expect(answer.status).toBe(502);
    expect(answer.headers.get('mcp-session-id')).toBeNull();
    expect(await answer.json()).toMatchObject({ id: 'i', error: { code: -32603, message: "The MCP server's process exited." } });
  });

  it('a command that cannot be started: initialize is 502 -32603', async () => {
    const answer = await post('missing', { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
    expect(answer.status).toBe(502);
    expect(await answer.json()).toMatchObject({ id: 1, error: { code: -32603, message: "The MCP server's command could not be started." } });
  });

  it('a child that never answers: 504 -32603 after the server timeout, as JSON and as SSE; the session still serves', async () => {
    const session = await initialize('sleepy');
    const json = await call(session, 11, 'silent', 'application/json', undefined, 'sleepy');
    expect(json.status).toBe(504);
    expect(await json.json()).toMatchObject({ id: 11, error: { code: -32603, message: 'The MCP server did not answer in time.' } });
    const sse = await call(session, 12, 'silent', 'application/json, text/event-stream', undefined, 'sleepy');
    expect(sse.status).toBe(504);
    await sse.text();
    expect((await call(session, 13, 'pid', 'application/json', undefined, 'sleepy')).status).toBe(200);
  });

  it('a flood of 200,000 notifications: the call is answered (as JSON the flood waits, bounded, for a GET stream; as SSE it is relayed, bounded)', async () => {
    const session = await initialize('flooder');
    const json = await call(session, 21, 'flood', 'application/json', undefined, 'flooder');
    expect(json.status).toBe(200);
    expect(await json.json()).toMatchObject({ id: 21, result: { content: [{ text: 'flooded' }] } });
    const sse = await call(session, 22, 'flood', 'application/json, text/event-stream', undefined, 'flooder');
    expect(sse.headers.get('content-type')).toContain('text/event-stream');
    const text = await sse.text();
    expect(text.trimEnd().endsWith('"text":"flooded"}]}}')).toBe(true);
    expect(text.split('\n\n').length).toBeLessThanOrEqual(200_002);
    await stillServing();
  });

  it('a child that floods its stderr: the call is answered, and the log gets a few lines, each cut short', async () => {
    const session = await initialize();
    const started = Date.now();
    const answer = await call(session, 41, 'stderr-flood');
    expect(answer.status).toBe(200);
    expect(await answer.json()).toMatchObject({ id: 41, result: { content: [{ text: 'stderr flooded' }] } });
    const windows = Math.ceil((Date.now() - started) / 10_000) + 1;
    const logged = gateway.logs.map((line) => JSON.parse(line) as { msg: string; stderr?: string }).filter((line) => line.msg === 'stdio MCP server stderr');
    expect(logged.length).toBeGreaterThan(0);
    expect(logged.length).toBeLessThanOrEqual(20 * windows);
    for (const line of logged) expect(line.stderr!.length).toBeLessThanOrEqual(1024);
  });

  it('a child that calls back forever: the stream is bounded, and DELETE ends it and the child', async () => {
    const session = await initialize();
    const pid = Number(((await (await call(session, 1, 'pid')).json()) as { result: { content: { text: string }[] } }).result.content[0]!.text);
    const stream = await call(session, 31, 'callback', 'application/json, text/event-stream');
    expect(stream.headers.get('content-type')).toContain('text/event-stream');
    const reader = stream.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toContain('"method":"roots/list"');
    // The client stops reading; the child keeps writing: what the gateway holds stays bounded.
    const ended = await fetch(`${gateway.url}/mcp/hostile`, { method: 'DELETE', headers: { authorization: `Bearer ${key}`, 'mcp-session-id': session } });
    expect(ended.status).toBe(200);
    await waitFor('the child is gone', () => !isRunning(pid), 15_000);
    await reader.cancel().catch(() => undefined);
    await stillServing();
  });
});
