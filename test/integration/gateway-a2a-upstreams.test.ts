// An A2A agent with two upstreams (docs/a2a.md, docs/upstreams.md), both real A2A servers built
// with the official SDK: when one goes down mid-test its requests go to the other (no client
// sees an error), it is ejected after its consecutive failures, and it rejoins once it is back;
// an active health check on the agent card takes a failing one out and brings it back. The
// per-upstream metrics are the ones an Agent Chat runner has.
import { afterEach, describe, expect, it } from 'vitest';
import { startA2aServer, type A2aServerOptions, type TestA2aServer } from '../helpers/a2a-servers.js';
import { postChat, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { metricsText, parseMetrics, sumSamples } from '../helpers/metrics-text.js';
import { waitFor } from '../helpers/wait.js';

const AGENT = 'travel';

let gateway: TestGateway | undefined;
const servers: TestA2aServer[] = [];

afterEach(async () => {
  await gateway?.close();
  gateway = undefined;
  // A server stopped mid-test and started again is in the list twice: closing one closed is harmless.
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function a2aServer(options: Partial<A2aServerOptions> = {}): Promise<TestA2aServer> {
  const server = await startA2aServer({ kind: 'plain', metadata: { tokens_used: 3 }, ...options });
  servers.push(server);
  return server;
}

/** Two A2A servers as the agent's upstreams (`a` first: the card is read from it), with `agent`'s other settings. */
async function startPair(agent: Record<string, unknown>): Promise<{ a: TestA2aServer; b: TestA2aServer; aPort: number; gw: TestGateway; key: string }> {
  const a = await a2aServer();
  const b = await a2aServer();
  gateway = await startTestGateway({ agents: { [AGENT]: { protocol: 'a2a', upstreams: [{ url: a.url }, { url: b.url }], ...agent } } });
  return { a, b, aPort: Number(new URL(a.url).port), gw: gateway, key: (await gateway.createKey()).rawKey };
}

/** A target's metrics label and `/upstreamz` name: its origin. */
const origin = (server: TestA2aServer): string => new URL(server.url).origin;

async function stateOf(gw: TestGateway, server: TestA2aServer): Promise<string | undefined> {
  const body = (await (await fetch(`${gw.adminUrl}/upstreamz`)).json()) as { agents: Record<string, { targets: { origin: string; state: string }[] }> };
  return body.agents[AGENT]!.targets.find((t) => t.origin === origin(server))?.state;
}

/** `count` requests, alternating /chat and /chat/stream, two at a time; their statuses, and each answer whole. */
async function chats(gw: TestGateway, key: string, count: number): Promise<number[]> {
  const statuses: number[] = [];
  let next = 0;
  await Promise.all(
    [0, 1].map(async () => {
      while (next < count) {
        const i = next++;
        const route = i % 2 === 0 ? 'chat' : 'chat/stream';
        const res = await postChat(gw.url, `/agents/${AGENT}/api/v1/${route}`, key, { message: `m-${i}` });
        const text = await res.text();
        // A stream that ended in an error event would still be a 200: its done event says it did not.
        statuses.push(res.status === 200 && route === 'chat/stream' && !text.includes('event: done') ? -1 : res.status);
      }
    }),
  );
  return statuses;
}

/** Starts the stopped upstream again on its port; resolves once it is up, logged (`logLine`), and serving requests again. */
async function restartedInRotation(gw: TestGateway, key: string, port: number, logLine: string): Promise<TestA2aServer> {
  const server = await a2aServer({ port });
  await waitFor('the restarted upstream up', async () => (await stateOf(gw, server)) === 'up', 20_000);
  expect(gw.logs.join('')).toContain(logLine);
  await waitFor(
    'traffic on the restarted upstream',
    async () => {
      expect(await chats(gw, key, 10)).toEqual(Array(10).fill(200));
      return server.received.length > 0;
    },
    20_000,
  );
  return server;
}

describe('an A2A agent with two upstreams', { timeout: 120_000 }, () => {
  it('one goes down: no client error, it is ejected, requests go to the other; back up, it rejoins', async () => {
    // The first upstream is the one the card was read from: after start it is an upstream like the other.
    const pair = await startPair({ outlier: { consecutive_failures: 2, base_ejection: '500ms', max_ejection: '2s' } });
    const { b, aPort, gw, key } = pair;
    let a = pair.a;
    expect(await chats(gw, key, 20)).toEqual(Array(20).fill(200));
    expect(a.received.length).toBeGreaterThan(0);
    expect(b.received.length).toBeGreaterThan(0);
    let samples = parseMetrics(await metricsText(gw.adminUrl));
    expect(sumSamples(samples, 'agentgw_upstream_requests_total', { agent: AGENT, target: origin(a) })).toBe(a.received.length);
    expect(sumSamples(samples, 'agentgw_upstream_requests_total', { agent: AGENT, target: origin(b) })).toBe(b.received.length);
    const errorsBefore = sumSamples(samples, 'agentgw_upstream_errors_total', { agent: AGENT });

    await a.close();
    const bBefore = b.received.length;
    expect(await chats(gw, key, 40)).toEqual(Array(40).fill(200));
    expect(b.received.length - bBefore).toBe(40);
    // The admin view shows it ejected while it is down. An ejection lasts 0.5–2 s and a loaded
    // machine may spend longer on the 40 requests, so it may have come back (to be found still
    // down by the next request): a few more requests, still all 200, until the view says so.
    const probeStatuses: number[] = [];
    await waitFor('the admin view to show the stopped upstream ejected', async () => {
      probeStatuses.push(...(await chats(gw, key, 4)));
      const up = sumSamples(parseMetrics(await metricsText(gw.adminUrl)), 'agentgw_upstream_target_up', { agent: AGENT, target: origin(a) });
      return (await stateOf(gw, a)) === 'ejected' && up === 0;
    }, 20_000);
    expect(probeStatuses.filter((status) => status !== 200)).toEqual([]);
    samples = parseMetrics(await metricsText(gw.adminUrl));
    expect(sumSamples(samples, 'agentgw_upstream_ejections_total', { agent: AGENT, target: origin(a) })).toBeGreaterThanOrEqual(1);
    expect(sumSamples(samples, 'agentgw_upstream_target_errors_total', { agent: AGENT, target: origin(a), kind: 'connect' })).toBeGreaterThanOrEqual(2);
    expect(sumSamples(samples, 'agentgw_upstream_target_up', { agent: AGENT, target: origin(b) })).toBe(1);
    expect(sumSamples(samples, 'agentgw_upstream_retries_total', { agent: AGENT })).toBeGreaterThanOrEqual(2);
    // Every failed attempt was retried on the other: none reached a client.
    expect(sumSamples(samples, 'agentgw_upstream_errors_total', { agent: AGENT })).toBe(errorsBefore);
    expect(gw.logs.join('')).toContain('upstream target ejected after consecutive failures');

    a = await restartedInRotation(gw, key, aPort, 'upstream target returned from ejection');
    samples = parseMetrics(await metricsText(gw.adminUrl));
    expect(sumSamples(samples, 'agentgw_upstream_target_up', { agent: AGENT, target: origin(a) })).toBe(1);
  });

  it('a health check on the agent card takes a stopped upstream out and brings it back when it answers again', async () => {
    const { a, b, aPort, gw, key } = await startPair({
      health_check: { path: '/.well-known/agent-card.json', interval: '50ms', timeout: '500ms', healthy: 2, unhealthy: 2 },
    });
    await waitFor('both upstreams up', async () => (await stateOf(gw, a)) === 'up' && (await stateOf(gw, b)) === 'up', 5_000);
    await a.close();
    await waitFor('the stopped upstream marked down', async () => (await stateOf(gw, a)) === 'down', 5_000);
    const bBefore = b.received.length;
    expect(await chats(gw, key, 20)).toEqual(Array(20).fill(200));
    expect(b.received.length - bBefore).toBe(20);
    const samples = parseMetrics(await metricsText(gw.adminUrl));
    expect(sumSamples(samples, 'agentgw_upstream_target_errors_total', { agent: AGENT, target: origin(a), kind: 'health_check' })).toBeGreaterThanOrEqual(2);
    expect(sumSamples(samples, 'agentgw_upstream_target_up', { agent: AGENT, target: origin(a) })).toBe(0);
    expect(gw.logs.join('')).toContain('failed its health check');

    await restartedInRotation(gw, key, aPort, 'passed its health check');
  });
});
