// An agent's targets as the request path sees them (docs/upstreams.md): which one a request
// goes to, whether it may wait for a connection there, and what its answer says about the
// target's health. An agent with one target short-circuits all of it: the same target every
// time, two integer updates per request, and no ejection (there is nowhere else to go).
import type { Clock } from '../clock.js';
import type { Logger } from '../logger.js';
import { metrics } from '../metrics/metrics.js';
import { decayedEjections, ejectionDurationMs, mayEjectAnother, type OutlierSettings } from './outlier-ejection.js';
import { pickTarget } from './target-picker.js';
import type { UpstreamTarget } from './upstream-target.js';

/** Timers the ejections use; injected so tests can run them without waiting. */
export interface EjectionTimers {
  setTimeout(callback: () => void, ms: number): ReturnType<typeof setTimeout>;
  clearTimeout(handle: ReturnType<typeof setTimeout>): void;
}

export const nodeTimers: EjectionTimers = {
  setTimeout: (callback, ms) => setTimeout(callback, ms).unref(),
  clearTimeout: (handle) => clearTimeout(handle),
};

/** A target leaving rotation (`down`) or coming back (`up`), and what did it (upstream-events.ts). */
export interface TargetTransition {
  agentId: string;
  target: UpstreamTarget;
  state: 'down' | 'up';
  reason: 'outlier_ejection' | 'ejection_ended' | 'health_check';
}

export interface UpstreamsEnvironment {
  clock: Clock;
  random: () => number;
  timers: EjectionTimers;
  logger: Logger | undefined;
  /** Told of every change of a target's availability (webhook events); absent: nobody listens. */
  onTransition?: ((transition: TargetTransition) => void) | undefined;
}

/** Failures that count toward ejection; other kinds (timeouts, bad answers) are only counted. */
export type TargetFailureKind = 'connect' | 'reset' | 'status_5xx' | 'headers_timeout' | 'idle_timeout' | 'max_duration' | 'bad_response' | 'health_check';

function countsTowardEjection(kind: TargetFailureKind): boolean {
  return kind === 'connect' || kind === 'reset' || kind === 'status_5xx';
}

export class AgentUpstreams {
  /** The only target, when there is one: the request path then skips balancing. */
  private readonly single: UpstreamTarget | null;
  private readonly maxConnections: number;
  private readonly queueLimit: number;
  /** Requests waiting for a connection, summed over targets: Σ max(0, outstanding − max_connections). */
  waiting = 0;

  constructor(
    readonly agentId: string,
    readonly targets: readonly UpstreamTarget[],
    limits: { maxConnections?: number | undefined; queue?: number | undefined },
    private readonly outlier: OutlierSettings,
    private readonly env: UpstreamsEnvironment,
  ) {
    this.single = targets.length === 1 ? targets[0]! : null;
    this.maxConnections = limits.maxConnections ?? Infinity;
    this.queueLimit = limits.queue ?? Infinity;
  }

  /** The target for a request's next attempt; undefined when every target was tried. */
  pick(tried: readonly UpstreamTarget[] | null): UpstreamTarget | undefined {
    if (this.single !== null) return tried === null ? this.single : undefined;
    return pickTarget(this.targets, this.env.random, tried);
  }

  /**
   * Counts a request onto `target`; false (and nothing counted) when it would have to wait
   * for a connection while `queue` requests already do.
   */
  admit(target: UpstreamTarget): boolean {
    if (target.outstanding >= this.maxConnections) {
      if (this.waiting >= this.queueLimit) {
        metrics.upstreamQueueFull.inc({ agent: this.agentId });
        return false;
      }
      this.waiting++;
    }
    target.outstanding++;
    target.requests.inc();
    return true;
  }

  /** The request on `target` settled: its connection (or its place in the queue) is free. */
  release(target: UpstreamTarget): void {
    if (--target.outstanding >= this.maxConnections) this.waiting--;
  }

  /** The target answered: a 5xx counts as a failure, anything else clears its failure run. */
  responded(target: UpstreamTarget, statusCode: number): void {
    if (statusCode >= 500) this.failed(target, 'status_5xx');
    else if (target.consecutiveFailures !== 0) target.consecutiveFailures = 0;
  }

  failed(target: UpstreamTarget, kind: TargetFailureKind): void {
    metrics.upstreamTargetErrors.inc({ agent: this.agentId, target: target.origin, kind });
    if (!countsTowardEjection(kind)) return;
    target.consecutiveFailures++;
    if (this.single !== null || target.ejected || target.consecutiveFailures < this.outlier.consecutiveFailures) return;
    if (!mayEjectAnother(this.ejectedCount(), this.targets.length, this.outlier)) return;
    this.eject(target);
  }

  /** Health checks: a target marked down or up again (docs/upstreams.md, "Active health checks"). */
  setHealth(target: UpstreamTarget, healthy: boolean): void {
    if (target.healthDown === !healthy) return;
    const wasAvailable = target.available;
    target.healthDown = !healthy;
    if (wasAvailable !== target.available) this.transition(target, 'health_check');
    if (healthy) target.consecutiveFailures = 0;
    this.env.logger?.[healthy ? 'info' : 'warn'](
      { agent: this.agentId, target: target.origin },
      healthy ? 'upstream target passed its health check: back in rotation' : 'upstream target failed its health check: out of rotation',
    );
  }

  /** Stops the ejection timers (reload, shutdown); the targets' pools are closed by their owner. */
  stop(): void {
    for (const target of this.targets) this.clearEjectionTimer(target);
  }

  private ejectedCount(): number {
    let count = 0;
    for (const target of this.targets) if (target.ejected) count++;
    return count;
  }

  private eject(target: UpstreamTarget): void {
    const now = this.env.clock.now();
    target.ejections = decayedEjections(target.ejections, now - target.returnedAtMs, this.outlier) + 1;
    const durationMs = ejectionDurationMs(target.ejections, this.outlier);
    const wasAvailable = target.available;
    target.ejected = true;
    target.ejectedUntilMs = now + durationMs;
    if (wasAvailable) this.transition(target, 'outlier_ejection');
    target.consecutiveFailures = 0;
    metrics.upstreamEjections.inc({ agent: this.agentId, target: target.origin });
    this.env.logger?.warn(
      { agent: this.agentId, target: target.origin, ejection_ms: durationMs, ejections: target.ejections },
      'upstream target ejected after consecutive failures',
    );
    this.clearEjectionTimer(target);
    target.ejectionTimer = this.env.timers.setTimeout(() => this.restore(target), durationMs);
  }

  /** The ejection interval ended: the target takes traffic again (and is ejected again if it still fails). */
  restore(target: UpstreamTarget): void {
    target.ejectionTimer = null;
    if (!target.ejected) return;
    target.ejected = false;
    target.ejectedUntilMs = 0;
    target.returnedAtMs = this.env.clock.now();
    target.consecutiveFailures = 0;
    this.env.logger?.info({ agent: this.agentId, target: target.origin }, 'upstream target returned from ejection');
    if (target.available) this.transition(target, 'ejection_ended');
  }

  private transition(target: UpstreamTarget, reason: TargetTransition['reason']): void {
    this.env.onTransition?.({ agentId: this.agentId, target, state: target.available ? 'up' : 'down', reason });
  }

  private clearEjectionTimer(target: UpstreamTarget): void {
    if (target.ejectionTimer === null) return;
    this.env.timers.clearTimeout(target.ejectionTimer);
    target.ejectionTimer = null;
  }
}
