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

  /** The target as the admin API shows it (its URL as configured: the admin layer redacts it). */
  snapshot(): McpTargetSnapshot {
    const ejected = !this.available;
    return { url: this.url, weight: this.weight, state: ejected ? 'ejected' : 'up', outstanding: this.outstanding, ejected_until: ejected ? new Date(this.ejectedUntil).toISOString() : null };
  }
}

/** One upstream of an MCP server as this process sees it: `ejected` for 10 s after a connection failure. */
export interface McpTargetSnapshot {
  url: string;
  weight: number;
  state: 'up' | 'ejected';
  outstanding: number;
  ejected_until: string | null;
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

  /** Every server's targets and their state, by server name. */
  snapshot(): Map<string, McpTargetSnapshot[]> {
    const out = new Map<string, McpTargetSnapshot[]>();
    for (const [server, list] of this.targets) out.set(server, list.map((target) => target.snapshot()));
    return out;
  }

  async close(): Promise<void> {
    const all = [...this.targets.values()].flat();
    this.targets = new Map();
    await Promise.all(all.map((target) => target.pool.close()));
  }
}

export type UpstreamAnswer = Dispatcher.ResponseData;
