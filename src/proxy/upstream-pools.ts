// One undici Pool per agent upstream origin (and connection cap), keep-alive, reused across requests and across
// config reloads while the origin is unchanged.
import { Pool } from 'undici';
import type { AgentConfig } from '../config/schema.js';
import { clientWithoutAbortReconnect } from './no-reconnect-after-abort.js';

export interface UpstreamTarget {
  pool: Pool;
  /** Path prefix of the runner's base URL, e.g. "/api/v1". */
  basePath: string;
  chatPath: string;
  streamPath: string;
}

const POOL_OPTIONS = {
  pipelining: 1,
  keepAliveTimeout: 30_000,
  keepAliveMaxTimeout: 600_000,
  connectTimeout: 5_000,
  // A client that leaves mid-stream must not cost a fresh upstream connection (see the file).
  factory: clientWithoutAbortReconnect,
} as const;

export class UpstreamPools {
  private readonly pools = new Map<string, Pool>();
  private targets = new Map<string, UpstreamTarget>();

  constructor(agents: ReadonlyMap<string, AgentConfig>) {
    this.update(agents);
  }

  /** Points agents at (possibly new) origins; pools of origins no longer used are closed gracefully. */
  update(agents: ReadonlyMap<string, AgentConfig>): void {
    const targets = new Map<string, UpstreamTarget>();
    const inUse = new Set<string>();
    for (const agent of agents.values()) {
      const url = new URL(agent.upstream);
      const poolKey = `${url.origin} ${agent.maxConnections ?? 'unlimited'}`;
      inUse.add(poolKey);
      let pool = this.pools.get(poolKey);
      if (!pool) {
        // connections: null is undici's "no cap" (agents.<id>.max_connections sets one).
        pool = new Pool(url.origin, { ...POOL_OPTIONS, connections: agent.maxConnections ?? null });
        this.pools.set(poolKey, pool);
      }
      const basePath = url.pathname.replace(/\/+$/, '');
      targets.set(agent.id, { pool, basePath, chatPath: `${basePath}/chat`, streamPath: `${basePath}/chat/stream` });
    }
    this.targets = targets;
    for (const [poolKey, pool] of this.pools) {
      if (inUse.has(poolKey)) continue;
      this.pools.delete(poolKey);
      void pool.close().catch(() => pool.destroy());
    }
  }

  target(agentId: string): UpstreamTarget | undefined {
    return this.targets.get(agentId);
  }

  /** Lets in-flight requests finish for up to `graceMs`, then cuts whatever is left. */
  async close(graceMs = 1_000): Promise<void> {
    await Promise.all(
      [...this.pools.values()].map(async (pool) => {
        let timer: NodeJS.Timeout | undefined;
        const deadline = new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)));
        await Promise.race([pool.close().catch(() => undefined), deadline]);
        clearTimeout(timer);
        if (!pool.destroyed) await pool.destroy().catch(() => undefined);
      }),
    );
    this.pools.clear();
  }
}
