// Active health checks (docs/upstreams.md, "Active health checks"): every `interval`, a GET
// of `path` on each target's origin. `unhealthy` consecutive failures (no answer within
// `timeout`, a refused connection, a status other than 2xx) take a target out of rotation;
// `healthy` consecutive successes bring it back. Probes use a connection of their own per
// target, so a runner whose pool is saturated by long streams is not marked down for it.
import { Client } from './undici-classes.js';
import type { AgentUpstreams, EjectionTimers } from './agent-upstreams.js';
import type { UpstreamTarget } from './upstream-target.js';

export interface HealthCheckSettings {
  path: string;
  intervalMs: number;
  timeoutMs: number;
  healthy: number;
  unhealthy: number;
}

export class HealthChecker {
  private timer: ReturnType<typeof setTimeout> | null = null;
  private stopped = false;
  private readonly clients = new Map<UpstreamTarget, Client>();
  private readonly probing = new Set<UpstreamTarget>();

  constructor(
    private readonly upstreams: AgentUpstreams,
    private readonly settings: HealthCheckSettings,
    private readonly timers: EjectionTimers,
  ) {}

  start(): void {
    this.schedule();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== null) this.timers.clearTimeout(this.timer);
    this.timer = null;
    for (const client of this.clients.values()) void client.destroy().catch(() => undefined);
    this.clients.clear();
  }

  /** One round: a probe per target (a target whose last probe is still out is skipped). */
  probeAll(): void {
    for (const target of this.upstreams.targets) {
      if (this.probing.has(target)) continue;
      this.probing.add(target);
      void this.probe(target).then((ok) => {
        this.probing.delete(target);
        if (!this.stopped) this.record(target, ok);
      });
    }
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = this.timers.setTimeout(() => {
      this.timer = null;
      this.probeAll();
      this.schedule();
    }, this.settings.intervalMs);
  }

  private async probe(target: UpstreamTarget): Promise<boolean> {
    const { path, timeoutMs } = this.settings;
    let client = this.clients.get(target);
    if (!client) {
      client = new Client(target.origin, { connectTimeout: timeoutMs, headersTimeout: timeoutMs, bodyTimeout: timeoutMs, pipelining: 1 });
      this.clients.set(target, client);
    }
    try {
      const response = await client.request({ method: 'GET', path, headers: { 'user-agent': 'agent-gateway-health-check' }, signal: AbortSignal.timeout(timeoutMs) });
      await response.body.dump();
      return response.statusCode >= 200 && response.statusCode < 300;
    } catch {
      return false;
    }
  }

  private record(target: UpstreamTarget, ok: boolean): void {
    if (ok) {
      target.healthFailures = 0;
      target.healthSuccesses++;
      if (target.healthDown && target.healthSuccesses >= this.settings.healthy) this.upstreams.setHealth(target, true);
      return;
    }
    target.healthSuccesses = 0;
    target.healthFailures++;
    this.upstreams.failed(target, 'health_check');
    if (!target.healthDown && target.healthFailures >= this.settings.unhealthy) this.upstreams.setHealth(target, false);
  }
}
