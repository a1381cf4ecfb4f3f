// The parts of the gateway that a config reload (SIGHUP) swaps as one: the config, the route
// table, the upstream pools (targets, their balancing state and health checks) and the A2A
// agents' cards. Requests read `runtime.current` once, at their start.
import type { GatewayConfig } from '../config/schema.js';
import { A2aCards, type CardFetcher } from '../proxy/a2a/a2a-cards.js';
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
  readonly cards: A2aCards;
  /** Publishes webhook events (docs/notifications.md); NO_NOTIFIER when no webhook is configured. */
  readonly notifier: Notifier;
  /** Settles once every A2A agent's card fetched at start was read or refused (bounded by its timeout). */
  cardsRead: Promise<void>;

  constructor(config: GatewayConfig, upstreamOptions: UpstreamPoolsOptions = {}, fetchCard?: CardFetcher) {
    this.current = { config, routes: buildRouteTable(config.agents) };
    this.notifier = upstreamOptions.notifier ?? NO_NOTIFIER;
    this.pools = new UpstreamPools(config.agents, upstreamOptions);
    this.cards = new A2aCards(upstreamOptions.logger, fetchCard);
    this.cardsRead = this.cards.refresh(config.agents);
  }

  /** In-flight requests keep the snapshot they started with; new ones see the new config. */
  reload(config: GatewayConfig): void {
    this.pools.update(config.agents);
    this.current = { config, routes: buildRouteTable(config.agents) };
    this.cardsRead = this.cards.refresh(config.agents);
  }

  close(): Promise<void> {
    this.cards.stop();
    return this.pools.close();
  }
}
