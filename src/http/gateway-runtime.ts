// The parts of the gateway that a config reload (SIGHUP) swaps as one: the config, the route
// table and the upstream pools (targets, their balancing state and health checks). Requests read `runtime.current` once, at their start.
import type { GatewayConfig } from '../config/schema.js';
import { UpstreamPools, type UpstreamPoolsOptions } from '../proxy/upstream-pools.js';
import { buildRouteTable, type RouteTable } from './routing.js';

export interface RuntimeSnapshot {
  config: GatewayConfig;
  routes: RouteTable;
}

export class GatewayRuntime {
  current: RuntimeSnapshot;
  readonly pools: UpstreamPools;

  constructor(config: GatewayConfig, upstreamOptions: UpstreamPoolsOptions = {}) {
    this.current = { config, routes: buildRouteTable(config.agents) };
    this.pools = new UpstreamPools(config.agents, upstreamOptions);
  }

  /** In-flight requests keep the snapshot they started with; new ones see the new config. */
  reload(config: GatewayConfig): void {
    this.pools.update(config.agents);
    this.current = { config, routes: buildRouteTable(config.agents) };
  }

  close(): Promise<void> {
    return this.pools.close();
  }
}
