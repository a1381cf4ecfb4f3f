// Several runners behind one agent, on real sockets (docs/upstreams.md): weighted spread,
// a stopped runner that clients never notice, its ejection and return, the retry boundary
// (a request whose body reached a runner is never sent to another), the queue bound, SSE
// through a multi-target agent, and active health checks. The stopped-runner case runs twice:
// with runners in this process (a closed server), and with runner processes, one SIGKILLed.
import { createServer, type Server, type Socket } from 'node:net';
import type { ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { postChat, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { metricsText, parseMetrics, sumSamples } from '../helpers/metrics-text.js';
import { startRunnerProcess, type RunnerProcess } from '../helpers/runner-process.js';
import { openSse } from '../helpers/sse-client.js';
import { sleep, waitFor } from '../helpers/wait.js';

const CHAT = '/agents/multi/api/v1/chat';
const STREAM = '/agents/multi/api/v1/chat/stream';

let gateway: TestGateway | undefined;
const cleanups: (() => Promise<unknown>)[] = [];

afterEach(async () => {
  await gateway?.close();
  gateway = undefined;
  await Promise.all(cleanups.splice(0).map((c) => c()));
});

async function runner(handler?: Parameters<typeof startFakeUpstream>[0], port?: number): Promise<FakeUpstream> {
  const upstream = await startFakeUpstream(handler, { port });
  cleanups.push(() => upstream.close());
  return upstream;
}

async function start(agent: Record<string, unknown>): Promise<{ gw: TestGateway; key: string }> {
  gateway = await startTestGateway({ agents: { multi: agent } });
  const { rawKey } = await gateway.createKey();
  return { gw: gateway, key: rawKey };
}

interface TargetView {
  origin: string;
  state: string;
  outstanding: number;
  consecutive_failures: number;
  ejected_until: string | null;
}

async function targets(gw: TestGateway): Promise<TargetView[]> {
  const body = (await (await fetch(`${gw.adminUrl}/upstreamz`)).json()) as { agents: Record<string, { targets: TargetView[] }> };
  return body.agents.multi!.targets;
}

async function stateOf(gw: TestGateway, upstream: FakeUpstream): Promise<string | undefined> {
  return (await targets(gw)).find((t) => t.origin === upstream.url)?.state;
}

/** `count` chat requests, `concurrency` at a time; resolves with their statuses. */
async function chats(gw: TestGateway, key: string, count: number, concurrency: number, idPrefix = 'r'): Promise<number[]> {
  const statuses: number[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const i = next++;
        const response = await postChat(gw.url, CHAT, key, { message: 'hi' }, { 'x-request-id': `${idPrefix}-${i}` });
        await response.arrayBuffer();
        statuses.push(response.status);
      }
    }),
  );
  return statuses;
}

function closeServer(server: Server, sockets: Set<Socket>): Promise<void> {
  for (const socket of sockets) socket.destroy();
  return new Promise((resolve) => server.close(() => resolve()));
}

describe('balancing', () => {
  it('spreads 2,000 requests over targets weighted 1:1:2, each share within ±5 points of its weight', async () => {
    const [a, b, c] = await Promise.all([runner(), runner(), runner()]);
    const { gw, key } = await start({ upstreams: [{ url: a.baseUrl, weight: 1 }, { url: b.baseUrl, weight: 1 }, { url: c.baseUrl, weight: 2 }] });
    const statuses = await chats(gw, key, 2_000, 16);
    expect(statuses.every((s) => s === 200)).toBe(true);
    const shares = [a, b, c].map((u) => u.requests.length / 2_000);
    expect(Math.abs(shares[0]! - 0.25)).toBeLessThan(0.05);
    expect(Math.abs(shares[1]! - 0.25)).toBeLessThan(0.05);
    expect(Math.abs(shares[2]! - 0.5)).toBeLessThan(0.05);
    const samples = parseMetrics(await metricsText(gw.adminUrl));
    expect(sumSamples(samples, 'agentgw_upstream_requests_total', { agent: 'multi', target: c.url })).toBe(c.requests.length);
    // 2,000 requests take a few seconds on an idle machine, far longer on a loaded shared one.
  }, 120_000);
});

describe('a stopped target', () => {
  it('costs clients nothing (connect refused is retried), is ejected, and returns after it comes back', async () => {
    const a = await runner();
    let b = await runner();
    const bPort = b.port;
    const { gw, key } = await start({
      upstreams: [{ url: a.baseUrl }, { url: b.baseUrl }],
      outlier: { consecutive_failures: 2, base_ejection: '500ms', max_ejection: '2s' },
    });
    expect(await chats(gw, key, 20, 2, 'warm')).toEqual(Array(20).fill(200));
    expect(b.requests.length).toBeGreaterThan(0);

    const errorsBefore = sumSamples(parseMetrics(await metricsText(gw.adminUrl)), 'agentgw_upstream_errors_total', { agent: 'multi' });
    await b.close();
    const statuses = await chats(gw, key, 60, 4, 'down');
    expect(statuses).toEqual(Array(60).fill(200));
    expect(a.requests.filter((r) => String(r.headers['x-request-id']).startsWith('down-'))).toHaveLength(60);
    // The admin view shows it ejected while it is down. An ejection lasts 0.5–2 s and a loaded
    // machine may spend longer on the 60 requests, so it may have come back (to be found still
    // down by the next request): a few more requests, still all 200, until the view says so.
    const probeStatuses: number[] = [];
    await waitFor('the admin view to show the stopped target ejected', async () => {
      probeStatuses.push(...(await chats(gw, key, 4, 2, `probe${probeStatuses.length}`)));
      const up = sumSamples(parseMetrics(await metricsText(gw.adminUrl)), 'agentgw_upstream_target_up', { agent: 'multi', target: b.url });
      return (await stateOf(gw, b)) === 'ejected' && up === 0;
    }, 20_000);
    expect(probeStatuses.filter((status) => status !== 200)).toEqual([]);
    const samples = parseMetrics(await metricsText(gw.adminUrl));
    expect(sumSamples(samples, 'agentgw_upstream_ejections_total', { agent: 'multi', target: b.url })).toBeGreaterThanOrEqual(1);
    expect(sumSamples(samples, 'agentgw_upstream_target_errors_total', { agent: 'multi', target: b.url, kind: 'connect' })).toBeGreaterThanOrEqual(2);
    // No failure reached a client, so none is counted against the agent.
    expect(sumSamples(samples, 'agentgw_upstream_errors_total', { agent: 'multi' })).toBe(errorsBefore);
    expect(gw.logs.join('')).toContain('upstream target ejected after consecutive failures');

    b = await runner(undefined, bPort);
    // Back after its ejection interval (and ejected again meanwhile if traffic found it still down: at most 2 s).
    await waitFor('the target to return', async () => (await stateOf(gw, b)) === 'up', 20_000);
    expect(gw.logs.join('')).toContain('upstream target returned from ejection');
    await waitFor(
      'traffic on the returned target',
      async () => {
        expect(await chats(gw, key, 10, 2, 'back')).toEqual(Array(10).fill(200));
        return b.requests.length > 0;
      },
      20_000,
    );
  });

  it('three runner processes, one SIGKILLed between requests: no client error, it is ejected, and it returns once restarted on its port', async () => {
    const processes: RunnerProcess[] = await Promise.all([startRunnerProcess(), startRunnerProcess(), startRunnerProcess()]);
    cleanups.push(() => Promise.all(processes.map((p) => p.stop())));
    const [, , killed] = processes as [RunnerProcess, RunnerProcess, RunnerProcess];
    const { gw, key } = await start({
      upstreams: processes.map((p) => ({ url: p.baseUrl })),
      outlier: { consecutive_failures: 2, base_ejection: '500ms', max_ejection: '2s' },
    });
    const served = async (runner: RunnerProcess) => sumSamples(parseMetrics(await metricsText(gw.adminUrl)), 'agentgw_upstream_requests_total', { agent: 'multi', target: runner.url });
    expect(await chats(gw, key, 30, 3, 'warm')).toEqual(Array(30).fill(200));
    for (const p of processes) expect(await served(p)).toBeGreaterThan(0);

    const errorsBefore = sumSamples(parseMetrics(await metricsText(gw.adminUrl)), 'agentgw_upstream_errors_total', { agent: 'multi' });
    await killed.stop('SIGKILL');
    expect(await chats(gw, key, 60, 3, 'down')).toEqual(Array(60).fill(200));
    // Ejected while it is down, as the admin view shows it: waited for with a few more requests
    // (every one 200), since 60 requests may outlast a 0.5–2 s ejection on a loaded machine.
    const probeStatuses: number[] = [];
    await waitFor('the admin view to show the killed runner ejected', async () => {
      probeStatuses.push(...(await chats(gw, key, 3, 3, `probe${probeStatuses.length}`)));
      return (await targets(gw)).find((t) => t.origin === killed.url)?.state === 'ejected';
    }, 20_000);
    expect(probeStatuses.filter((status) => status !== 200)).toEqual([]);
    const samples = parseMetrics(await metricsText(gw.adminUrl));
    expect(sumSamples(samples, 'agentgw_upstream_ejections_total', { agent: 'multi', target: killed.url })).toBeGreaterThanOrEqual(1);
    expect(sumSamples(samples, 'agentgw_upstream_retries_total', { agent: 'multi' })).toBeGreaterThanOrEqual(1);
    expect(sumSamples(samples, 'agentgw_upstream_errors_total', { agent: 'multi' })).toBe(errorsBefore);

    const restarted = await startRunnerProcess(killed.port);
    processes[2] = restarted;
    await waitFor('the restarted runner back in rotation', async () => (await targets(gw)).find((t) => t.origin === restarted.url)?.state === 'up', 20_000);
    const servedBefore = await served(restarted);
    await waitFor(
      'traffic on the restarted runner',
      async () => {
        expect(await chats(gw, key, 15, 3, 'back')).toEqual(Array(15).fill(200));
        return (await served(restarted)) > servedBefore;
      },
      20_000,
    );
  }, 60_000);

  it('answers 503 agent_unavailable only when every target refuses', async () => {
    const a = await runner();
    const b = await runner();
    const { gw, key } = await start({ upstreams: [{ url: a.baseUrl }, { url: b.baseUrl }] });
    await Promise.all([a.close(), b.close()]);
    const response = await postChat(gw.url, CHAT, key, { message: 'hi' });
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toBe('2');
    expect(((await response.json()) as { error: { type: string } }).error.type).toBe('agent_unavailable');
  });
});

describe('the retry boundary', () => {
  it('never retries a request whose body reached a runner that then reset: the other target never sees it', async () => {
    // A runner that reads the whole request (headers and body) and then resets the connection.
    const seenIds: string[] = [];
    const sockets = new Set<Socket>();
    const resetter = createServer((socket) => {
      sockets.add(socket);
      socket.on('error', () => {});
      let text = '';
      socket.on('data', (chunk: Buffer) => {
        text += chunk.toString('latin1');
        const headerEnd = text.indexOf('\r\n\r\n');
        if (headerEnd === -1) return;
        const length = Number(/content-length: *(\d+)/i.exec(text.slice(0, headerEnd))?.[1] ?? 0);
        if (text.length < headerEnd + 4 + length) return;
        seenIds.push(/x-request-id: *(\S+)/i.exec(text)?.[1] ?? '');
        socket.resetAndDestroy();
      });
    });
    await new Promise<void>((resolve) => resetter.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => closeServer(resetter, sockets));
    const resetterUrl = `http://127.0.0.1:${(resetter.address() as { port: number }).port}/api/v1`;
    const other = await runner();
    const { gw, key } = await start({
      // Nearly every request is drawn to the resetter first; it is never ejected here.
      upstreams: [{ url: resetterUrl, weight: 1000 }, { url: other.baseUrl, weight: 1 }],
      outlier: { consecutive_failures: 1000 },
    });
    // Metrics are process-wide: compare with the count before.
    const retriesBefore = sumSamples(parseMetrics(await metricsText(gw.adminUrl)), 'agentgw_upstream_retries_total', { agent: 'multi' });
    const results: { id: string; status: number; type?: string }[] = [];
    for (let i = 0; i < 10; i++) {
      const id = `boundary-${i}`;
      const response = await postChat(gw.url, CHAT, key, { message: 'hi' }, { 'x-request-id': id });
      const body = (await response.json()) as { error?: { type: string } };
      results.push({ id, status: response.status, type: body.error?.type });
    }
    const failed = results.filter((r) => r.status === 503);
    expect(failed.length).toBeGreaterThan(0);
    for (const r of failed) {
      expect(r.type).toBe('agent_unavailable');
      // The resetter read it in full; the other runner never got it.
      expect(seenIds).toContain(r.id);
      expect(other.requests.some((seen) => seen.headers['x-request-id'] === r.id)).toBe(false);
    }
    // Whatever went to the other runner was answered by it, and the resetter never saw it.
    for (const r of results.filter((x) => x.status === 200)) expect(seenIds).not.toContain(r.id);
    const samples = parseMetrics(await metricsText(gw.adminUrl));
    expect(sumSamples(samples, 'agentgw_upstream_retries_total', { agent: 'multi' })).toBe(retriesBefore);
  });
});

describe('the queue bound', () => {
  it('fails fast with 503 agent_unavailable and Retry-After once max_connections are busy and `queue` wait', async () => {
    const held: ServerResponse[] = [];
    const slow = await runner((_req, res) => {
      held.push(res);
    });
    const { gw, key } = await start({ upstream: slow.baseUrl, max_connections: 1, queue: 1, timeout: '10s' });
    const first = postChat(gw.url, CHAT, key, { message: 'one' });
    const second = postChat(gw.url, CHAT, key, { message: 'two' });
    await waitFor('the first request at the runner', () => held.length === 1, 5_000);
    await waitFor('the second request queued', async () => (await targets(gw))[0]!.outstanding === 2, 5_000);

    const queueFullBefore = sumSamples(parseMetrics(await metricsText(gw.adminUrl)), 'agentgw_upstream_queue_full_total', { agent: 'multi' });
    const refused = await postChat(gw.url, CHAT, key, { message: 'three' });
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('2');
    expect(((await refused.json()) as { error: { type: string } }).error.type).toBe('agent_unavailable');
    expect(slow.requests).toHaveLength(1);

    const answer = JSON.stringify({ response: 'ok', tool_calls: [], metadata: { tokens_used: 1 } });
    held.shift()!.writeHead(200, { 'content-type': 'application/json' }).end(answer);
    expect((await first).status).toBe(200);
    await waitFor('the queued request at the runner', () => held.length === 1, 5_000);
    held.shift()!.writeHead(200, { 'content-type': 'application/json' }).end(answer);
    expect((await second).status).toBe(200);
    const samples = parseMetrics(await metricsText(gw.adminUrl));
    expect(sumSamples(samples, 'agentgw_upstream_queue_full_total', { agent: 'multi' })).toBe(queueFullBefore + 1);
    expect((await targets(gw))[0]!.outstanding).toBe(0);
  });
});

describe('streaming through a multi-target agent', () => {
  /**
   * A runner in lockstep with the client: it writes token i only once the client has token
   * i − 1 (waiting at most 5 s), and notes every token it had to write without that. A relay
   * that held events back would leave the client short and the runner would note it; proven
   * by order, not by a stopwatch.
   */
  function lockstepRunner(clientTokens: () => number, writtenUnseen: number[]): Parameters<typeof startFakeUpstream>[0] {
    return async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.flushHeaders();
      for (let i = 0; i < 5; i++) {
        const deadline = performance.now() + 5_000;
        while (clientTokens() < i && performance.now() < deadline) await sleep(2);
        if (clientTokens() < i) writtenUnseen.push(i);
        res.write(`event: token\ndata: {"content":"t${i}"}\n\n`);
      }
      res.end('event: done\ndata: {"tokens_used":5,"latency_ms":500}\n\n');
    };
  }

  it('relays every event as it is written (not batched), whichever target serves it', async () => {
    const writtenUnseen: number[] = [];
    let clientTokens = (): number => 0;
    const counted = (): number => clientTokens();
    const a = await runner(lockstepRunner(counted, writtenUnseen));
    const b = await runner(lockstepRunner(counted, writtenUnseen));
    const { gw, key } = await start({ upstreams: [{ url: a.baseUrl }, { url: b.baseUrl }] });
    const stream = await openSse(`${gw.url}${STREAM}`, key, { message: 'hi' });
    clientTokens = () => stream.events.filter((e) => e.name === 'token').length;
    await stream.ended;
    expect(stream.status).toBe(200);
    expect(stream.headers['x-accel-buffering']).toBe('no');
    expect(stream.events.filter((e) => e.name === 'token').map((e) => JSON.parse(e.data).content)).toEqual(['t0', 't1', 't2', 't3', 't4']);
    expect(writtenUnseen).toEqual([]);
    expect(stream.events.at(-1)!.name).toBe('done');
  });

  it('aborts the upstream request when the client disconnects', async () => {
    const handler: Parameters<typeof startFakeUpstream>[0] = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const timer = setInterval(() => res.write('event: token\ndata: {"content":"."}\n\n'), 50);
      res.on('close', () => clearInterval(timer));
    };
    const a = await runner(handler);
    const b = await runner(handler);
    const { gw, key } = await start({ upstreams: [{ url: a.baseUrl }, { url: b.baseUrl }] });
    const stream = await openSse(`${gw.url}${STREAM}`, key, { message: 'hi' });
    await sleep(200);
    const seen = [...a.requests, ...b.requests];
    expect(seen).toHaveLength(1);
    stream.abort();
    await Promise.race([seen[0]!.closed, sleep(2_000).then(() => Promise.reject(new Error('the runner request was not aborted')))]);
    expect(a.openRequests() + b.openRequests()).toBe(0);
    await waitFor('outstanding back to 0', async () => (await targets(gw)).every((t) => t.outstanding === 0), 2_000);
  });
});

describe('active health checks', () => {
  it('mark a failing target down (no traffic) and up again when it passes', async () => {
    let bHealthy = false;
    const a = await runner();
    const b = await runner((req, res) => {
      if (req.url === '/healthz') {
        res.writeHead(bHealthy ? 200 : 500).end();
        return;
      }
      void (async () => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ response: 'b', tool_calls: [], metadata: { tokens_used: 1 } }));
      })();
    });
    const { gw, key } = await start({
      upstreams: [{ url: a.baseUrl }, { url: b.baseUrl }],
      health_check: { path: '/healthz', interval: '50ms', timeout: '500ms', healthy: 2, unhealthy: 2 },
    });
    await waitFor('b marked down', async () => (await stateOf(gw, b)) === 'down', 5_000);
    expect(await stateOf(gw, a)).toBe('up');
    const before = b.requests.filter((r) => r.path !== '/healthz').length;
    expect(await chats(gw, key, 20, 2, 'hc')).toEqual(Array(20).fill(200));
    expect(b.requests.filter((r) => r.path !== '/healthz').length).toBe(before);
    expect(gw.logs.join('')).toContain('failed its health check');

    bHealthy = true;
    await waitFor('b marked up', async () => (await stateOf(gw, b)) === 'up', 5_000);
    expect(gw.logs.join('')).toContain('passed its health check');
  });
});

describe('reload (SIGHUP)', () => {
  it('adds targets and drains a removed one without cutting its stream in flight', async () => {
    let finishStream!: () => void;
    const streamDone = new Promise<void>((resolve) => (finishStream = resolve));
    const a = await runner(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('event: token\ndata: {"content":"before"}\n\n');
      await streamDone;
      res.write('event: token\ndata: {"content":"after"}\n\n');
      res.end('event: done\ndata: {"tokens_used":2,"latency_ms":1}\n\n');
    });
    const [b, c] = await Promise.all([runner(), runner()]);
    const { gw, key } = await start({ upstream: a.baseUrl });
    const stream = await openSse(`${gw.url}${STREAM}`, key, { message: 'hi' });
    await waitFor('the first event', () => stream.events.length === 1, 5_000);

    const agents = new Map(gw.config.agents);
    const old = agents.get('multi')!;
    const upstreams = [{ url: b.baseUrl, weight: 1 }, { url: c.baseUrl, weight: 1 }];
    agents.set('multi', { ...old, upstream: b.baseUrl, upstreams });
    gw.running.reload({ ...gw.config, agents });

    expect((await targets(gw)).map((t) => t.origin)).toEqual([b.url, c.url]);
    expect(await chats(gw, key, 40, 4, 'reloaded')).toEqual(Array(40).fill(200));
    expect(a.requests).toHaveLength(1);
    expect(b.requests.length).toBeGreaterThan(0);
    expect(c.requests.length).toBeGreaterThan(0);

    finishStream();
    await stream.ended;
    expect(stream.events.map((e) => e.name)).toEqual(['token', 'token', 'done']);
  });
});
