// A stdio MCP session lives with its child on the instance that started it (docs/mcp.md
// "Sessions across instances"): two gateway PROCESSES share one Redis; a session opened on A
// is served by A, answered 404 by B (like a lost session, so the client initializes again),
// and B's answer leaves A's session as it was. The key is made through A's admin API.
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultHandler } from '../helpers/fake-upstream.js';
import { startSharedRedisGateways, type SharedRedisGateways } from '../helpers/shared-redis-gateways.js';

const ADMIN_TOKEN = `adm-${randomUUID()}`;
const SERVER = join(process.cwd(), 'test/fixtures/mcp-stdio/sdk-server.mjs');
let fixture: SharedRedisGateways;

beforeAll(async () => {
  fixture = await startSharedRedisGateways({
    prefix: 'mcpstdio:',
    plans: { pro: { windows: [{ requests: 100_000, per: '1m' }] } },
    upstream: defaultHandler,
    connections: 8,
    extraConfig: {
      admin: { tokens: [{ name: 'ops', token: ADMIN_TOKEN, role: 'admin' }] },
      mcp_servers: { local: { command: [process.execPath, SERVER, '--processes'], timeout: '30s' } },
    },
  });
}, 90_000);

afterAll(async () => {
  await fixture?.close();
});

describe('stdio MCP sessions on two gateway processes sharing one Redis', () => {
  it('a session opened on A is served by A and answered 404 by B, which leaves it as it was', async () => {
    const [a, b] = fixture.gateways as [(typeof fixture.gateways)[0], (typeof fixture.gateways)[0]];
    const created = await fetch(`${a.adminUrl}/admin/v1/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ account: 'shop', plan: 'pro', agents: ['support'], mcp: { local: ['*'] } }),
    });
    expect(created.status).toBe(201);
    const key = ((await created.json()) as { key: string }).key;
    const post = (gateway: typeof a, message: unknown, session?: string) =>
      fetch(`${gateway.url}/mcp/local`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/json', 'mcp-protocol-version': '2025-06-18', ...(session === undefined ? {} : { 'mcp-session-id': session }) },
        body: JSON.stringify(message),
      });
    const init = await post(a, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
    expect(init.status).toBe(200);
    await init.text();
    const session = init.headers.get('mcp-session-id')!;
    const echo = (gateway: typeof a, id: number) => post(gateway, { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: { text: `call ${id}` } } }, session);

    const onA = await echo(a, 1);
    expect(onA.status).toBe(200);
    expect(await onA.json()).toMatchObject({ id: 1, result: { content: [{ text: 'call 1' }] } });
    const onB = await echo(b, 2);
    expect(onB.status).toBe(404);
    expect(((await onB.json()) as { error: { type: string } }).error.type).toBe('mcp_session_not_found');
    // B's 404 did not end A's session.
    const againOnA = await echo(a, 3);
    expect(againOnA.status).toBe(200);
    expect(await againOnA.json()).toMatchObject({ id: 3, result: { content: [{ text: 'call 3' }] } });
    const ended = await fetch(`${a.url}/mcp/local`, { method: 'DELETE', headers: { authorization: `Bearer ${key}`, 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' } });
    expect(ended.status).toBe(200);
    expect((await echo(a, 4)).status).toBe(404);
  }, 120_000);
});
