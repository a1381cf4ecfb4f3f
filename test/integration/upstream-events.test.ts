// upstream.down and upstream.up (docs/notifications-events.md, "Upstream events"): a runner
// that goes away and comes back on its port, seen by active health checks, and a runner
// that answers 500s until outlier ejection takes it out and its ejection ends. One event per
// transition, subject agent:<id>, the target's origin and its URL without the password.
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { postChat, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { RecordingNotifier } from '../helpers/recording-notifier.js';
import { waitFor } from '../helpers/wait.js';

const PASSWORD = `pw-${randomUUID()}`;
const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function start(agent: Record<string, unknown>, notifier: RecordingNotifier): Promise<TestGateway> {
  const gw = await startTestGateway({
    agents: { multi: agent },
    config: { plans: { scale: { windows: [] } } },
    notifier,
  });
  cleanups.push(() => gw.close());
  return gw;
}

async function runner(port?: number): Promise<FakeUpstream> {
  const upstream = await startFakeUpstream(undefined, port === undefined ? {} : { port });
  return upstream;
}

const withPassword = (upstream: FakeUpstream) => upstream.baseUrl.replace('http://', `http://runner:${PASSWORD}@`);

describe('upstream events', () => {
  it('a runner that goes away and comes back: upstream.down, then upstream.up (health checks)', async () => {
    const a = await runner();
    let b = await runner();
    cleanups.push(() => a.close(), () => b.close());
    const notifier = new RecordingNotifier();
    await start({ upstreams: [{ url: a.baseUrl }, { url: withPassword(b) }], health_check: { path: '/healthz', interval: '50ms', timeout: '500ms', healthy: 2, unhealthy: 2 } }, notifier);

    const port = b.port;
    await b.close();
    await waitFor('upstream.down', () => notifier.ofType('upstream.down').length === 1, 10_000);
    b = await runner(port);
    await waitFor('upstream.up', () => notifier.ofType('upstream.up').length === 1, 10_000);

    expect(notifier.events.map((event) => [event.type, event.subject, event.data.target, event.data.reason])).toEqual([
      ['upstream.down', 'agent:multi', b.url, 'health_check'],
      ['upstream.up', 'agent:multi', b.url, 'health_check'],
    ]);
    expect(notifier.events[0]!.data.agent).toBe('multi');
    expect(notifier.events[0]!.data.url).toBe(b.baseUrl.replace('http://', 'http://runner:***@'));
    expect(JSON.stringify(notifier.events)).not.toContain(PASSWORD);
    // The dedupe key: (agent, target, transition, time bucket).
    expect(notifier.events[0]!.dedupeKey).toMatch(/^upstream:multi:.+:down:\d+$/);
  });

  it('outlier ejection: upstream.down when a failing runner is ejected, upstream.up when its ejection ends', async () => {
    const a = await runner();
    const b = await runner();
    cleanups.push(() => a.close(), () => b.close());
    b.handle((_req, res) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end('{"error":"down"}');
    });
    const notifier = new RecordingNotifier();
    const gw = await start({ upstreams: [{ url: a.baseUrl }, { url: b.baseUrl }], outlier: { consecutive_failures: 2, base_ejection: '300ms', max_ejected_percent: 50 } }, notifier);
    const { rawKey } = await gw.createKey({ agents: ['multi'] });

    await waitFor(
      'upstream.down',
      async () => {
        await postChat(gw.url, '/agents/multi/api/v1/chat', rawKey, { message: 'hi' });
        return notifier.ofType('upstream.down').length === 1;
      },
      10_000,
    );
    expect(notifier.ofType('upstream.down')[0]!.data).toMatchObject({ agent: 'multi', target: b.url, reason: 'outlier_ejection', ejected_until: expect.any(String) });
    await waitFor('upstream.up', () => notifier.ofType('upstream.up').length === 1, 10_000);
    expect(notifier.ofType('upstream.up')[0]!.data).toMatchObject({ agent: 'multi', target: b.url, reason: 'ejection_ended' });
  });
});
