// The admin listener's Host check (issue 33, worth-fixing list; docs/security.md): with
// admin.hosts set, a request naming any other host — a DNS-rebound name in a browser — is
// answered 421 on every path, /metrics and /upstreamz included.
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

let upstream: FakeUpstream;
let gateway: TestGateway;

beforeAll(async () => {
  upstream = await startFakeUpstream();
  gateway = await startTestGateway({ agents: { support: upstream.baseUrl }, config: { admin: { host: '127.0.0.1', port: 0, hosts: ['admin.internal', '127.0.0.1'] } } });
});

afterAll(async () => {
  await gateway?.close();
  await upstream?.close();
});

function get(path: string, host: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: gateway.running.adminPort, path, headers: { host } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('admin.hosts', () => {
  it('answers 421 to any other Host on /metrics, /upstreamz and /healthz; the listed names (with a port, any case) are served', async () => {
    for (const path of ['/metrics', '/upstreamz', '/healthz']) {
      expect((await get(path, 'rebound.attacker.example')).status).toBe(421);
      expect((await get(path, 'rebound.attacker.example:9090')).status).toBe(421);
    }
    const metrics = await get('/metrics', `ADMIN.internal:${gateway.running.adminPort}`);
    expect(metrics.status).toBe(200);
    expect(metrics.body).toContain('agentgw_');
    expect((await get('/upstreamz', '127.0.0.1')).status).toBe(200);
  });
});
