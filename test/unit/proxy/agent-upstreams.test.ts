// The agent's targets as the request path uses them: ejection after consecutive failures,
// its growing interval, the return, the cap on ejected targets, and the queue bound. Time
// is an injected clock and hand-run timers; the pools are never used.
import type { Pool } from 'undici';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/clock.js';
import { AgentUpstreams, type EjectionTimers } from '../../../src/proxy/agent-upstreams.js';
import type { OutlierSettings } from '../../../src/proxy/outlier-ejection.js';
import { UpstreamTarget } from '../../../src/proxy/upstream-target.js';
import { lcg } from '../../helpers/lcg.js';

const OUTLIER: OutlierSettings = { consecutiveFailures: 3, baseEjectionMs: 10_000, maxEjectionMs: 25_000, maxEjectedPercent: 50 };

class ManualTimers implements EjectionTimers {
  pending: { callback: () => void; ms: number; cleared: boolean }[] = [];
  setTimeout(callback: () => void, ms: number): ReturnType<typeof setTimeout> {
    const entry = { callback, ms, cleared: false };
    this.pending.push(entry);
    return entry as unknown as ReturnType<typeof setTimeout>;
  }
  clearTimeout(handle: ReturnType<typeof setTimeout>): void {
    (handle as unknown as { cleared: boolean }).cleared = true;
  }
  /** Runs the timers due, as the clock has moved `ms`. */
  fireLast(): number {
    const entry = this.pending.pop()!;
    if (!entry.cleared) entry.callback();
    return entry.ms;
  }
}

function setUp(count: number, limits: { maxConnections?: number; queue?: number } = {}) {
  const clock = new ManualClock(1_000_000);
  const timers = new ManualTimers();
  const logs: string[] = [];
  const logger = { warn: (_o: unknown, msg: string) => logs.push(`warn ${msg}`), info: (_o: unknown, msg: string) => logs.push(`info ${msg}`) };
  const targets = Array.from({ length: count }, (_, i) => new UpstreamTarget('support', `http://10.0.0.${i + 1}:8081/api/v1`, 1, {} as Pool));
  const upstreams = new AgentUpstreams('support', targets, limits, OUTLIER, { clock, random: lcg(1), timers, logger: logger as never });
  return { clock, timers, logs, targets, upstreams };
}

describe('AgentUpstreams outlier ejection', () => {
  it('ejects after consecutive failures, for a growing interval, and takes the target back by itself', () => {
    const { clock, timers, logs, targets, upstreams } = setUp(3);
    const [a] = targets;
    upstreams.failed(a!, 'connect');
    upstreams.failed(a!, 'reset');
    expect(a!.available).toBe(true);
    upstreams.responded(a!, 503);
    expect(a!.state).toBe('ejected');
    expect(a!.ejectedUntilMs).toBe(clock.now() + 10_000);
    expect(logs).toEqual(['warn upstream target ejected after consecutive failures']);
    // While ejected, no pick lands on it.
    for (let i = 0; i < 50; i++) expect(upstreams.pick(null)).not.toBe(a);

    clock.advance(10_000);
    expect(timers.fireLast()).toBe(10_000);
    expect(a!.state).toBe('up');
    expect(logs.at(-1)).toBe('info upstream target returned from ejection');

    // Failing again soon after: twice the base; then three times would be 30 s, capped at 25 s.
    for (let i = 0; i < 3; i++) upstreams.failed(a!, 'connect');
    expect(timers.fireLast()).toBe(20_000);
    for (let i = 0; i < 3; i++) upstreams.failed(a!, 'connect');
    expect(timers.fireLast()).toBe(25_000);
  });

  it('a good answer ends the failure run; timeouts are counted but do not eject', () => {
    const { targets, upstreams } = setUp(2);
    const [a] = targets;
    upstreams.failed(a!, 'connect');
    upstreams.failed(a!, 'connect');
    upstreams.responded(a!, 200);
    expect(a!.consecutiveFailures).toBe(0);
    upstreams.failed(a!, 'connect');
    upstreams.failed(a!, 'connect');
    upstreams.responded(a!, 404);
    upstreams.failed(a!, 'connect');
    expect(a!.state).toBe('up');
    for (let i = 0; i < 10; i++) upstreams.failed(a!, 'headers_timeout');
    expect(a!.state).toBe('up');
  });

  it('never ejects more than max_ejected_percent, nor the only target', () => {
    const { targets, upstreams } = setUp(2);
    for (const target of targets) for (let i = 0; i < 3; i++) upstreams.failed(target, 'connect');
    expect(targets.map((t) => t.state).sort()).toEqual(['ejected', 'up']);

    const single = setUp(1);
    for (let i = 0; i < 10; i++) single.upstreams.failed(single.targets[0]!, 'connect');
    expect(single.targets[0]!.state).toBe('up');
    expect(single.upstreams.pick(null)).toBe(single.targets[0]);
    expect(single.upstreams.pick([single.targets[0]!])).toBeUndefined();
  });

  it('health checks mark a target down and up, and a down target gets no traffic', () => {
    const { logs, targets, upstreams } = setUp(2);
    upstreams.setHealth(targets[0]!, false);
    for (let i = 0; i < 20; i++) expect(upstreams.pick(null)).toBe(targets[1]);
    upstreams.setHealth(targets[0]!, true);
    expect(targets[0]!.state).toBe('up');
    expect(logs).toEqual([
      'warn upstream target failed its health check: out of rotation',
      'info upstream target passed its health check: back in rotation',
    ]);
  });
});

describe('AgentUpstreams queue bound', () => {
  it('admits max_connections per target plus `queue` waiting, agent-wide, and frees places on release', () => {
    const { targets, upstreams } = setUp(2, { maxConnections: 1, queue: 1 });
    const [a, b] = targets;
    expect(upstreams.admit(a!)).toBe(true);
    expect(upstreams.admit(b!)).toBe(true);
    expect(upstreams.waiting).toBe(0);
    expect(upstreams.admit(a!)).toBe(true);
    expect(upstreams.waiting).toBe(1);
    expect(upstreams.admit(b!)).toBe(false);
    expect(upstreams.admit(a!)).toBe(false);
    expect(b!.outstanding).toBe(1);
    upstreams.release(a!);
    expect(upstreams.waiting).toBe(0);
    expect(upstreams.admit(b!)).toBe(true);
    upstreams.release(b!);
    upstreams.release(b!);
    upstreams.release(a!);
    expect([a!.outstanding, b!.outstanding, upstreams.waiting]).toEqual([0, 0, 0]);
  });

  it('has no bound without max_connections', () => {
    const { targets, upstreams } = setUp(1);
    for (let i = 0; i < 1000; i++) expect(upstreams.admit(targets[0]!)).toBe(true);
    expect(upstreams.waiting).toBe(0);
  });
});

describe('AgentUpstreams availability transitions (upstream.down / upstream.up)', () => {
  it('tells of each change of availability once: ejected and health-down together are one down, back is one up', () => {
    const clock = new ManualClock(1_000_000);
    const timers = new ManualTimers();
    const seen: string[] = [];
    const targets = Array.from({ length: 3 }, (_, i) => new UpstreamTarget('support', `http://10.0.0.${i + 1}:8081/api/v1`, 1, {} as Pool));
    const upstreams = new AgentUpstreams('support', targets, {}, OUTLIER, {
      clock,
      random: lcg(1),
      timers,
      logger: undefined,
      onTransition: ({ agentId, target, state, reason }) => seen.push(`${agentId} ${target.url} ${state} ${reason}`),
    });
    const a = targets[0]!;
    for (let i = 0; i < 3; i++) upstreams.failed(a, 'connect');
    expect(seen).toEqual(['support http://10.0.0.1:8081/api/v1 down outlier_ejection']);
    // Failing its health checks too, while ejected: still one down.
    upstreams.setHealth(a, false);
    expect(seen).toHaveLength(1);
    // The ejection ends while health checks still fail: not back.
    clock.advance(10_000);
    timers.fireLast();
    expect(seen).toHaveLength(1);
    upstreams.setHealth(a, true);
    expect(seen.slice(1)).toEqual(['support http://10.0.0.1:8081/api/v1 up health_check']);
    // Ejected again and back when the ejection ends.
    for (let i = 0; i < 3; i++) upstreams.failed(a, 'status_5xx');
    clock.advance(20_000);
    timers.fireLast();
    expect(seen.slice(2)).toEqual(['support http://10.0.0.1:8081/api/v1 down outlier_ejection', 'support http://10.0.0.1:8081/api/v1 up ejection_ended']);
  });
});
