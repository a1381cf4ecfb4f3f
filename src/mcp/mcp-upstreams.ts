// The Streamable HTTP servers behind the MCP front door (docs/mcp.md "Configuration"): one
// undici Pool per upstream URL, the agents' weighted power-of-two-choices picker
// (proxy/target-picker.ts), and a short ejection after a connection failure so a dead upstream
// stops getting new sessions. A session stays on the target it started on (its upstream
// session lives there), so only `initialize` picks.
import type { Dispatcher } from 'undici';
import type { McpServerConfig } from '../config/schema.js';
import { pickTarget, type PickableTarget } from '../proxy/target-picker.js';
import { Pool } from '../proxy/undici-classes.js';

const EJECTION_MS = 10_000;

export class McpTarget implements PickableTarget {
  outstanding = 0;
  private ejectedUntil = 0;
  readonly pool: Pool;
  readonly path: string;

  constructor(
    readonly url: string,
    readonly weight: number,
  ) {
    const parsed = new URL(url);
    this.path = parsed.pathname + parsed.search;
    // Bodies are relayed as they arrive: no body timeout of undici's own (the server's deadline
    // is the front door's); headers must come within the server's timeout (set per request).
    this.pool = new Pool(parsed.origin, { connections: 256, pipelining: 1, bodyTimeout: 0 });
  }

  get available(): boolean {
    return this.ejectedUntil <= Date.now();
  }

  eject(): void {
    this.ejectedUntil = Date.now() + EJECTION_MS;
  }
}

export class McpUpstreams {
  private targets = new Map<string, McpTarget[]>();

  constructor(servers: ReadonlyMap<string, McpServerConfig>) {
    this.update(servers);
  }

  /** A reload: targets whose URL stays keep their pool; the others are closed. */
  update(servers: ReadonlyMap<string, McpServerConfig>): void {
    const old = new Map<string, McpTarget>();
    for (const list of this.targets.values()) for (const target of list) old.set(target.url, target);
    const next = new Map<string, McpTarget[]>();
    for (const server of servers.values()) {
      next.set(
        server.name,
        server.upstreams.map((u) => {
          const kept = old.get(u.url);
          old.delete(u.url);
          return kept ?? new McpTarget(u.url, u.weight);
        }),
      );
    }
    this.targets = next;
    for (const target of old.values()) void target.pool.close();
  }

  /** A target for a new session, or undefined when the server has none. */
  pick(server: string): McpTarget | undefined {
    const list = this.targets.get(server);
    return list === undefined || list.length === 0 ? undefined : pickTarget(list, Math.random, null);
  }

  /** The target a session lives on, or undefined when it is no longer configured (the session is lost). */
  find(server: string, url: string): McpTarget | undefined {
    return this.targets.get(server)?.find((target) => target.url === url);
  }

  async close(): Promise<void> {
    const all = [...this.targets.values()].flat();
    this.targets = new Map();
    await Promise.all(all.map((target) => target.pool.close()));
  }
}

export type UpstreamAnswer = Dispatcher.ResponseData;
