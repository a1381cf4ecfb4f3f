// Every agent's targets, and what a config reload (SIGHUP) does to them: a target that stays
// keeps its pool, its counters and its ejection; a new one is added; a removed one takes no
// new requests. Pools are keep-alive undici Pools, one per runner origin and connection cap,
// shared by the agents that name the same runner (so `max_connections` caps that runner's
// connections whichever agent uses them); a pool no target uses any more is closed once the
// requests already on it have ended (undici's close() waits for them), so a stream in flight
// is not cut. docs/upstreams.md has the whole picture.
import { NO_NOTIFIER, type Notifier } from '../notifications/notifier.js';
import { upstreamEventListener } from './upstream-events.js';
import { redactedUrl } from '../config/redacted-url.js';
import { systemClock, type Clock } from '../clock.js';
import type { AgentConfig } from '../config/schema.js';
import type { Logger } from '../logger.js';
import { setUpstreamStateSource, type UpstreamTargetGaugeValues } from '../metrics/metrics.js';
import { AgentUpstreams, nodeTimers, type EjectionTimers, type UpstreamsEnvironment } from './agent-upstreams.js';
import { HealthChecker } from './health-checks.js';
import type { Pool } from 'undici';
import type { ConnectionOptions } from 'node:tls';
import { createTargetPool, UpstreamTarget, type TargetState } from './upstream-target.js';
import { readUpstreamTls, type UpstreamTls } from './upstream-tls.js';

export type { UpstreamTarget } from './upstream-target.js';
export type { AgentUpstreams } from './agent-upstreams.js';

export interface UpstreamPoolsOptions {
  logger?: Logger | undefined;
  clock?: Clock;
  random?: () => number;
  timers?: EjectionTimers;
  /** Where runner health events go (docs/notifications.md); default NO_NOTIFIER. */
  notifier?: Notifier;
  /** How a target's pool is made (tests hand in a stand-in). */
  createPool?: (origin: string, maxConnections: number | undefined, tls?: ConnectionOptions) => Pool;
}

/** One target as GET /upstreamz (and the admin API) shows it. */
export interface TargetSnapshot {
  url: string;
  origin: string;
  weight: number;
  state: TargetState;
  outstanding: number;
  consecutive_failures: number;
  ejections: number;
  /** ISO time the current ejection ends, or null. */
  ejected_until: string | null;
}

export interface AgentUpstreamsSnapshot {
  targets: TargetSnapshot[];
  waiting: number;
}

// TLS material is part of both keys: a runner reached with another CA or client certificate
// (or a renewed one) is another pool.
function poolKey(url: string, maxConnections: number | undefined, tls: UpstreamTls | undefined): string {
  return `${new URL(url).origin} ${maxConnections ?? 'unlimited'} ${tls?.digest ?? ''}`;
}

function targetKey(agent: AgentConfig, url: string, tls: UpstreamTls | undefined): string {
  return `${agent.id} ${agent.protocol} ${url} ${agent.maxConnections ?? 'unlimited'} ${tls?.digest ?? ''}`;
}

export class UpstreamPools {
  private agents = new Map<string, AgentUpstreams>();
  private targets = new Map<string, UpstreamTarget>();
  private pools = new Map<string, Pool>();
  private checkers: HealthChecker[] = [];
  private readonly env: UpstreamsEnvironment;
  private readonly createPool: (origin: string, maxConnections: number | undefined, tls?: ConnectionOptions) => Pool;

  constructor(agents: ReadonlyMap<string, AgentConfig>, options: UpstreamPoolsOptions = {}) {
    const clock = options.clock ?? systemClock;
    // upstream.down / upstream.up only when something listens: no webhook, no listener.
    const onTransition = options.notifier === undefined || options.notifier === NO_NOTIFIER ? undefined : upstreamEventListener(options.notifier, clock);
    this.env = { clock, random: options.random ?? Math.random, timers: options.timers ?? nodeTimers, logger: options.logger, onTransition };
    this.createPool = options.createPool ?? createTargetPool;
    this.update(agents);
    setUpstreamStateSource(() => this.gaugeValues());
  }

  /**
   * Points agents at their (possibly new) targets; removed targets drain, then their pools
   * close. Throws, changing nothing, when an agent's TLS files cannot be read.
   */
  update(agents: ReadonlyMap<string, AgentConfig>): void {
    // Read first, so a missing file refuses the whole update before any pool moves.
    const tlsByAgent = new Map<string, UpstreamTls | undefined>();
    for (const agent of agents.values()) tlsByAgent.set(agent.id, readUpstreamTls(agent));
    const nextTargets = new Map<string, UpstreamTarget>();
    const nextPools = new Map<string, Pool>();
    const nextAgents = new Map<string, AgentUpstreams>();
    for (const agent of agents.values()) {
      const targets: UpstreamTarget[] = [];
      const tls = tlsByAgent.get(agent.id);
      for (const { url, weight } of agent.upstreams) {
        // An http:// target of an agent with tls (a mixed list) takes no TLS options.
        const targetTls = url.startsWith('https:') ? tls : undefined;
        const key = targetKey(agent, url, targetTls);
        const sharedKey = poolKey(url, agent.maxConnections, targetTls);
        let target = this.targets.get(key);
        // Same runner and cap: same pool and state; a new weight applies at once.
        if (target) {
          target.weight = weight;
        } else {
          const pool = nextPools.get(sharedKey) ?? this.pools.get(sharedKey) ?? this.createPool(new URL(url).origin, agent.maxConnections, targetTls?.connect);
          target = new UpstreamTarget(agent.id, url, weight, pool, agent.protocol);
        }
        nextPools.set(sharedKey, target.pool);
        nextTargets.set(key, target);
        targets.push(target);
      }
      nextAgents.set(agent.id, new AgentUpstreams(agent.id, targets, { maxConnections: agent.maxConnections, queue: agent.queue }, agent.outlier, this.env));
    }
    for (const checker of this.checkers) checker.stop();
    this.checkers = [];
    for (const agent of agents.values()) {
      if (!agent.healthCheck) continue;
      const checker = new HealthChecker(nextAgents.get(agent.id)!, agent.healthCheck, this.env.timers);
      checker.start();
      this.checkers.push(checker);
    }
    for (const [key, target] of this.targets) {
      if (nextTargets.has(key)) continue;
      if (target.ejectionTimer !== null) this.env.timers.clearTimeout(target.ejectionTimer);
      target.ejectionTimer = null;
    }
    for (const [key, pool] of this.pools) {
      if (nextPools.has(key)) continue;
      // close() lets the requests already on the pool (streams included) finish first.
      void pool.close().catch(() => pool.destroy());
    }
    this.targets = nextTargets;
    this.pools = nextPools;
    this.agents = nextAgents;
  }

  /** The agent's targets, for the forward stage. */
  upstreams(agentId: string): AgentUpstreams | undefined {
    return this.agents.get(agentId);
  }

  /** Every agent's targets and their state, for the admin listener. */
  snapshot(): Record<string, AgentUpstreamsSnapshot> {
    const out: Record<string, AgentUpstreamsSnapshot> = {};
    for (const [agentId, upstreams] of this.agents) {
      out[agentId] = {
        waiting: upstreams.waiting,
        targets: upstreams.targets.map((t) => ({
          url: redactedUrl(t.url),
          origin: t.origin,
          weight: t.weight,
          state: t.state,
          outstanding: t.outstanding,
          consecutive_failures: t.consecutiveFailures,
          ejections: t.ejections,
          ejected_until: t.ejected ? new Date(t.ejectedUntilMs).toISOString() : null,
        })),
      };
    }
    return out;
  }

  /** Lets in-flight requests finish for up to `graceMs`, then cuts whatever is left. */
  async close(graceMs = 1_000): Promise<void> {
    for (const checker of this.checkers) checker.stop();
    this.checkers = [];
    for (const upstreams of this.agents.values()) upstreams.stop();
    await Promise.all(
      [...this.pools.values()].map(async (pool) => {
        let timer: NodeJS.Timeout | undefined;
        const deadline = new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)));
        await Promise.race([pool.close().catch(() => undefined), deadline]);
        clearTimeout(timer);
        if (!pool.destroyed) await pool.destroy().catch(() => undefined);
      }),
    );
    this.targets.clear();
    this.pools.clear();
  }

  private *gaugeValues(): Iterable<UpstreamTargetGaugeValues> {
    for (const [agentId, upstreams] of this.agents) {
      for (const t of upstreams.targets) yield { agent: agentId, target: t.origin, up: t.available, outstanding: t.outstanding };
    }
  }
}
