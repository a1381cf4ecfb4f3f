// An upstream URL's userinfo password never shows on the admin listener (issue 33,
// worth-fixing list): not on /upstreamz, not in the admin API's agents (which viewers read).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

const VIEWER_TOKEN = `view-${randomUUID()}`;
const PASSWORD = `pw-${randomUUID()}`;

let upstream: FakeUpstream;
let gateway: TestGateway;

beforeAll(async () => {
  upstream = await startFakeUpstream();
  const withPassword = upstream.baseUrl.replace('http://', `http://runner:${PASSWORD}@`);
  gateway = await startTestGateway({
    agents: { support: withPassword },
    config: { admin: { host: '127.0.0.1', port: 0, tokens: [{ name: 'watcher', token: VIEWER_TOKEN, role: 'viewer' }] } },
  });
});

afterAll(async () => {
  await gateway?.close();
  await upstream?.close();
});

describe('an upstream URL with a password', () => {
  it('/upstreamz and GET /admin/v1/agents show the user and *** in its place', async () => {
    const upstreamz = await (await fetch(`${gateway.adminUrl}/upstreamz`)).text();
    const agents = await (await fetch(`${gateway.adminUrl}/admin/v1/agents`, { headers: { authorization: `Bearer ${VIEWER_TOKEN}` } })).text();
    for (const text of [upstreamz, agents]) {
      expect(text).not.toContain(PASSWORD);
      expect(text).toContain('runner:***@127.0.0.1');
    }
  });
});
