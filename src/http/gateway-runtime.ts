// The parts of the gateway that a config reload (SIGHUP) swaps as one: the config, the route
// table, the upstream pools (targets, their balancing state and health checks) and the A2A
// agents' cards. Requests read `runtime.current` once, at their start.
import type { AgentConfig, GatewayConfig } from '../config/schema.js';
import { loadA2aAdapter, namesA2aAgent, type A2aAdapter } from '../proxy/a2a/a2a-adapter.js';
import type { CardFetcher } from '../proxy/a2a/a2a-cards.js';
import { UpstreamPools, type UpstreamPoolsOptions } from '../proxy/upstream-pools.js';
import { NO_NOTIFIER, type Notifier } from '../notifications/notifier.js';
import { buildRouteTable, type RouteTable } from './routing.js';

export interface RuntimeSnapshot {
  config: GatewayConfig;
  routes: RouteTable;
}

export class GatewayRuntime {
  current: RuntimeSnapshot;
  readonly pools: UpstreamPools;
  /** Loaded the first time a config names an A2A agent; undefined until then (docs/performance.md). */
  a2a: A2aAdapter | undefined;
  /** Publishes webhook events (docs/notifications.md); NO_NOTIFIER when no webhook is configured. */
  readonly notifier: Notifier;
  /** Settles once every A2A agent's card fetched at start was read or refused (bounded by its timeout). */
  cardsRead: Promise<void>;
  private a2aLoading: Promise<A2aAdapter> | undefined;
  private closed = false;

  constructor(
    config: GatewayConfig,
    private readonly upstreamOptions: UpstreamPoolsOptions = {},
    private readonly fetchCard?: CardFetcher,
  ) {
    this.current = { config, routes: buildRouteTable(config.agents) };
    this.notifier = upstreamOptions.notifier ?? NO_NOTIFIER;
    this.pools = new UpstreamPools(config.agents, upstreamOptions);
    this.cardsRead = this.readCards(config.agents);
  }

  /** In-flight requests keep the snapshot they started with; new ones see the new config. */
  reload(config: GatewayConfig): void {
    this.pools.update(config.agents);
    this.current = { config, routes: buildRouteTable(config.agents) };
    this.cardsRead = this.readCards(config.agents);
  }

  close(): Promise<void> {
    this.closed = true;
    this.a2a?.cards.stop();
    return this.pools.close();
  }

  /** Reads the A2A agents' cards, loading the adapter first if this is the first config to name one. */
  private readCards(agents: ReadonlyMap<string, AgentConfig>): Promise<void> {
    if (this.a2a !== undefined) return this.a2a.cards.refresh(agents);
    if (!namesA2aAgent(agents)) return Promise.resolve();
    this.a2aLoading ??= loadA2aAdapter(this.upstreamOptions.logger, this.fetchCard).then((adapter) => (this.a2a = adapter));
    // The newest config's agents: a reload while the adapter loads is not lost.
    return this.a2aLoading.then((adapter) => (this.closed ? undefined : adapter.cards.refresh(this.current.config.agents)));
  }
}
