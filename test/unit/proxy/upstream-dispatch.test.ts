// The exchange with a runner and the two relays of its answer, without a socket: undici's
// handler is driven by hand (Runner), the client is an in-memory response, and time is
// V8's fake clock, so deadlines and heartbeats are stepped through, not waited for.
import type { ServerResponse } from 'node:http';
import type { Pool } from 'undici';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { AgentConfig } from '../../../src/config/schema.js';
import type { GatewayError } from '../../../src/errors.js';
import { systemClock } from '../../../src/clock.js';
import { AgentUpstreams, nodeTimers } from '../../../src/proxy/agent-upstreams.js';
import { UpstreamTarget } from '../../../src/proxy/upstream-target.js';
import { ActiveStreams } from '../../../src/proxy/active-streams.js';
import { DeadlineSweeper } from '../../../src/proxy/deadline-sweeper.js';
import { UPSTREAM_TIMED_OUT, type StreamTimings } from '../../../src/proxy/forward-request.js';
import { forwardToUpstream } from '../../../src/proxy/upstream-dispatch.js';
import type { ChatRoute } from '../../../src/request/chat-route.js';
import { RequestState } from '../../../src/request/request-state.js';
import { FakePool, FakeRequest, FakeResponse, Runner } from '../../helpers/pipeline-fakes.js';

const HEADERS_TIMEOUT_MS = 2_000;
const STREAM: StreamTimings = { heartbeatMs: 1_000, idleTimeoutMs: 5_000, maxDurationMs: 60_000 };
const agent: AgentConfig = { id: 'support', protocol: 'agent-chat', upstream: 'http://127.0.0.1:1/api/v1', host: undefined, headersTimeoutMs: HEADERS_TIMEOUT_MS, tools: undefined, maxTokens: 100, upstreams: [{ url: 'http://127.0.0.1:1/api/v1', weight: 1 }], outlier: { consecutiveFailures: 5, baseEjectionMs: 10_000, maxEjectionMs: 300_000, maxEjectedPercent: 50 }, healthCheck: undefined };
const EVENT_STREAM = { 'content-type': 'text/event-stream' };
/** Past a deadline by more than the sweeper's period (100 ms) and its setImmediate. */
const PAST = 250;

interface Setup {
  res: FakeResponse;
  state: RequestState;
  pool: FakePool;
  activeStreams: ActiveStreams;
  failures: GatewayError[];
  runner(): Runner;
}

function forward(route: ChatRoute, stream: StreamTimings = STREAM): Setup {
  const res = new FakeResponse(new FakeRequest('/', {}));
  const state = new RequestState('req-1', '10.0.0.1', 0, performance.now());
  const pool = new FakePool();
  const activeStreams = new ActiveStreams();
  const failures: GatewayError[] = [];
  const target = new UpstreamTarget(agent.id, agent.upstream, 1, pool as unknown as Pool);
  const upstreams = new AgentUpstreams(agent.id, [target], {}, agent.outlier, { clock: systemClock, random: Math.random, timers: nodeTimers, logger: undefined });
  forwardToUpstream(
    { res: res as unknown as ServerResponse, state, agent, upstreams, route, stream, activeStreams, deadlines: new DeadlineSweeper(), a2a: undefined },
    { headers: [], body: Buffer.from('{}') },
    (error) => failures.push(error),
  );
  return { res, state, pool, activeStreams, failures, runner: () => new Runner(pool.dispatched[0]!.handler) };
}

/** The start of the gateway's final error event of this type. */
function errorEvent(type: string): string {
  return `event: error\ndata: {"type":"${type}"`;
}

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'setImmediate', 'performance'] });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('before the runner answers', () => {
  it('asks the agent’s path on the pool, with undici’s own timers off', () => {
    const { pool } = forward('chat/stream');
    expect(pool.dispatched[0]!.options).toMatchObject({ method: 'POST', path: '/api/v1/chat/stream', headersTimeout: 0, bodyTimeout: 0 });
  });

  it('gives up on headers after agents.<id>.timeout: agent_unavailable for the caller, the runner aborted', () => {
    const setup = forward('chat');
    const runner = setup.runner();
    vi.advanceTimersByTime(HEADERS_TIMEOUT_MS - PAST);
    expect(setup.failures).toEqual([]);
    vi.advanceTimersByTime(2 * PAST);
    expect(setup.failures.map((e) => e.type)).toEqual(['agent_unavailable']);
    expect(setup.state.failureKind).toBe('headers_timeout');
    expect(runner.controller.reason).toBe(UPSTREAM_TIMED_OUT);
  });

  it('never starts a request whose client left while it was queued', () => {
    const setup = forward('chat');
    setup.res.clientLeaves();
    vi.advanceTimersByTime(1);
    expect(setup.runner().controller.aborted).toBe(true);
    expect(setup.failures).toEqual([]);
  });

  it('refuses an answer on the stream route that is not an event stream, before anything is sent', () => {
    const setup = forward('chat/stream');
    setup.runner().answer(200, { 'content-type': 'application/json' });
    expect(setup.res.headersSent).toBe(false);
    expect(setup.failures.map((e) => e.type)).toEqual(['agent_unavailable']);
    expect(setup.state.failureKind).toBe('bad_response');
  });
});

describe('JSON relay', () => {
  it('relays the status, headers and body, and records the runner’s status', () => {
    const setup = forward('chat');
    setup.runner().answer(201, { 'content-type': 'application/json', 'x-runner': 'r1' }).send('{"a":').send('1}').end();
    expect(setup.res.statusCode).toBe(201);
    expect(setup.res.header('x-runner')).toBe('r1');
    expect(setup.res.body).toBe('{"a":1}');
    expect(setup.state.upstreamStatus).toBe(201);
    expect(setup.state.bytesOut).toBe(7);
  });

  it('cuts a body that stays silent for stream.idle_timeout', () => {
    const setup = forward('chat');
    const runner = setup.runner().answer(200).send('{"a":');
    vi.advanceTimersByTime(STREAM.idleTimeoutMs + PAST);
    expect(setup.res.destroyed).toBe(true);
    expect(setup.state.failureKind).toBe('idle_timeout');
    expect(runner.controller.reason).toBe(UPSTREAM_TIMED_OUT);
  });
});

describe('SSE relay', () => {
  it('relays events as they come with the stream’s own headers, and ends with done', () => {
    const setup = forward('chat/stream');
    const runner = setup.runner().answer(200, { ...EVENT_STREAM, 'content-length': '99', 'cache-control': 'max-age=60' });
    expect(setup.res.header('Cache-Control')).toBe('no-cache');
    expect(setup.res.header('X-Accel-Buffering')).toBe('no');
    expect(setup.res.header('content-length')).toBeUndefined();
    expect(setup.activeStreams.size).toBe(1);
    runner.send('event: token\ndata: a\n\n');
    expect(setup.res.body).toBe('event: token\ndata: a\n\n');
    runner.send('event: done\ndata: {"tokens_used":7}\n\n').end();
    expect(setup.res.body).toBe('event: token\ndata: a\n\nevent: done\ndata: {"tokens_used":7}\n\n');
    expect(setup.state).toMatchObject({ tokensUsed: 7, streamDone: true, failureKind: undefined });
    expect(setup.res.writableFinished).toBe(true);
    expect(setup.activeStreams.size).toBe(0);
  });

  it('ends a stream that stops without done with an error event that parses on its own', () => {
    const setup = forward('chat/stream');
    setup.runner().answer(200, EVENT_STREAM).send('event: token\ndata: hal').end();
    expect(setup.res.body.startsWith('event: token\ndata: hal\n\nevent: error\ndata: ')).toBe(true);
    expect(setup.res.body).toContain(errorEvent('upstream_error'));
    expect(setup.state).toMatchObject({ failureKind: 'reset', streamDone: false });
    expect(setup.activeStreams.size).toBe(0);
  });

  it('sends a heartbeat only where it cannot split an event', () => {
    const setup = forward('chat/stream', { ...STREAM, idleTimeoutMs: 60_000 });
    const runner = setup.runner().answer(200, EVENT_STREAM);
    const written = (): string => setup.res.body;
    vi.advanceTimersByTime(STREAM.heartbeatMs);
    expect(written()).toBe(': ping\n\n');
    runner.send('event: token\n');
    vi.advanceTimersByTime(STREAM.heartbeatMs);
    expect(written()).toBe(': ping\n\nevent: token\n: ping\n');
    runner.send('data: mid-li');
    vi.advanceTimersByTime(STREAM.heartbeatMs);
    expect(written()).toBe(': ping\n\nevent: token\n: ping\ndata: mid-li');
    runner.send('ne\n\n');
    vi.advanceTimersByTime(STREAM.heartbeatMs);
    expect(written()).toBe(': ping\n\nevent: token\n: ping\ndata: mid-line\n\n: ping\n\n');
  });

  it('ends a stream the runner left silent for stream.idle_timeout with upstream_timeout', () => {
    const setup = forward('chat/stream');
    const runner = setup.runner().answer(200, EVENT_STREAM).send('data: a\n\n');
    vi.advanceTimersByTime(STREAM.idleTimeoutMs + 1);
    expect(setup.res.body).toContain(errorEvent('upstream_timeout'));
    expect(setup.state.failureKind).toBe('idle_timeout');
    expect(runner.controller.aborted).toBe(true);
  });

  it('ends a stream at stream.max_duration with stream_timeout, however busy', () => {
    const setup = forward('chat/stream', { heartbeatMs: 1_000, idleTimeoutMs: 5_000, maxDurationMs: 3_500 });
    const runner = setup.runner().answer(200, EVENT_STREAM);
    for (let i = 0; i < 3; i++) {
      runner.send('data: a\n\n');
      vi.advanceTimersByTime(1_000);
    }
    expect(setup.res.writableFinished).toBe(false);
    vi.advanceTimersByTime(600);
    expect(setup.res.body).toContain(errorEvent('stream_timeout'));
    expect(setup.state.failureKind).toBe('max_duration');
  });

  it('ends an open stream with shutting_down when the gateway shuts down', () => {
    const setup = forward('chat/stream');
    const runner = setup.runner().answer(200, EVENT_STREAM).send('data: a\n\n');
    setup.activeStreams.endAll('shutting_down');
    expect(setup.res.body.startsWith(`data: a\n\n${errorEvent('shutting_down')}`)).toBe(true);
    expect(setup.state.endedInError).toBe(true);
    expect(runner.controller.aborted).toBe(true);
    expect(setup.activeStreams.size).toBe(0);
  });

  it('stops the runner when the client leaves mid-stream, and writes nothing more', () => {
    const setup = forward('chat/stream');
    const runner = setup.runner().answer(200, EVENT_STREAM).send('data: a\n\n');
    setup.res.clientLeaves();
    vi.advanceTimersByTime(1);
    expect(runner.controller.aborted).toBe(true);
    expect(setup.activeStreams.size).toBe(0);
    runner.send('data: b\n\n');
    vi.advanceTimersByTime(STREAM.idleTimeoutMs * 2);
    expect(setup.res.body).toBe('data: a\n\n');
  });
});

describe('a slow reader, on either relay', () => {
  it.each([
    // The JSON relay holds its latest chunk until the next one (its last bytes go with the end,
    // after the audit journal's write): the client's backlog starts with the second.
    ['chat', { 'content-type': 'application/json' }, ['{"a":', '1,']],
    ['chat/stream', EVENT_STREAM, ['data: a\n\n']],
  ] as const)('on %s: the runner is held back and its silence not counted until the client drains', (route, headers, chunks) => {
    const setup = forward(route, { ...STREAM, heartbeatMs: 60_000 });
    setup.res.flushes = false;
    const runner = setup.runner().answer(200, headers);
    for (const chunk of chunks) runner.send(chunk);
    expect(runner.controller.paused).toBe(true);
    vi.advanceTimersByTime(3 * STREAM.idleTimeoutMs);
    expect(setup.state.failureKind).toBeUndefined();
    setup.res.flushes = true;
    setup.res.emit('drain');
    expect(runner.controller.paused).toBe(false);
    // The runner's silence counts again from the drain.
    vi.advanceTimersByTime(STREAM.idleTimeoutMs - PAST);
    expect(setup.state.failureKind).toBeUndefined();
    vi.advanceTimersByTime(2 * PAST);
    expect(setup.state.failureKind).toBe('idle_timeout');
  });
});
