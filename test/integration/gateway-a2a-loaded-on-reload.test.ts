// The A2A adapter is loaded the first time a config names an A2A agent (src/http/gateway-runtime.ts,
// docs/performance.md "A feature that is off loads nothing"): a gateway started with native
// agents only has none, and a reload that adds an A2A agent loads it, reads the card and
// answers the agent, against a real A2A server built with the official SDK.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load-config.js';
import { KeyService } from '../../src/keys/key-service.js';
import { startA2aServer, type TestA2aServer } from '../helpers/a2a-servers.js';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { postChat, startTestGateway, type TestGateway } from '../helpers/gateway.js';

let a2aServer: TestA2aServer;
let native: FakeUpstream;
let gateway: TestGateway;

beforeAll(async () => {
  [a2aServer, native] = await Promise.all([startA2aServer({ kind: 'plain' }), startFakeUpstream()]);
  gateway = await startTestGateway({ agents: { support: native.baseUrl } });
});

afterAll(async () => {
  await gateway?.close();
  await Promise.all([a2aServer?.close(), native?.close()]);
});

describe('the A2A adapter on a reload', () => {
  it('is not loaded while every agent speaks the native protocol', () => {
    expect(gateway.running.runtime.a2a).toBeUndefined();
  });

  it('is loaded by the reload that adds an A2A agent, which then answers', async () => {
    // The running config with one more agent (agents, plans and limits are what a reload applies).
    const agents = parseConfig({ agents: { support: { upstream: native.baseUrl }, travel: { protocol: 'a2a', upstream: a2aServer.url } } }, 'reload', {}).agents;
    const next = { ...gateway.config, agents };
    gateway.running.reload(next);
    await gateway.running.runtime.cardsRead;
    expect(gateway.running.runtime.a2a?.cards.get('travel')).toBeDefined();
    // A key for both agents (a key names its agents, and `travel` exists from this config on).
    const key = (await new KeyService({ store: gateway.running.keyStore, config: next }).createKey({ account: 'acme', plan: 'scale', agents: ['support', 'travel'] })).rawKey;
    const res = await postChat(gateway.url, '/agents/travel/api/v1/chat', key, { message: 'hello after reload' });
    expect(res.status).toBe(200);
    expect(a2aServer.received.length).toBe(1);
    // The native agent is untouched.
    expect((await postChat(gateway.url, '/agents/support/api/v1/chat', key, { message: 'hi' })).status).toBe(200);
  }, 60_000);
});
