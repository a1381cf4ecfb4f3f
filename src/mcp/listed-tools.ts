// The tools each MCP server last listed, as this process saw them pass through a `tools/list`
// answer (docs/mcp.md "Dashboard"): the admin API shows them on the MCP page and the key form
// offers them as choices. Unfiltered (the server's whole list, before the key's scope and the
// allow-list), bounded: at most MAX_LISTED names per server, names longer than a scope could
// hold are left out, and only configured servers are ever keys of the map.
import { MCP_TOOL_NAME } from '../config/schema.js';

export const MAX_LISTED = 256;

export interface ListedToolsView {
  names: string[];
  /** The server listed more names than are kept (or names no key scope could hold). */
  truncated: boolean;
  listed_at: string;
}

interface Listing {
  names: Set<string>;
  truncated: boolean;
  listedAtMs: number;
}

export class ListedTools {
  private readonly byServer = new Map<string, Listing>();

  /**
   * A `tools/list` answer's names. The first page (a request without a cursor) starts the
   * server's list again; a later page adds to it, so a paged list is whole once read through.
   */
  record(server: string, names: readonly string[], firstPage: boolean, nowMs: number): void {
    let listing = this.byServer.get(server);
    if (listing === undefined || firstPage) this.byServer.set(server, (listing = { names: new Set(), truncated: false, listedAtMs: nowMs }));
    listing.listedAtMs = nowMs;
    for (const name of names) {
      // "*" means "every tool" in a scope: a server's tool of that name is not one a key can name alone.
      if (name === '*' || !MCP_TOOL_NAME.test(name) || listing.names.size >= MAX_LISTED) {
        if (!listing.names.has(name)) listing.truncated = true;
        continue;
      }
      listing.names.add(name);
    }
  }

  /** What `server` last listed, or null when this process has seen no `tools/list` of it. */
  view(server: string): ListedToolsView | null {
    const listing = this.byServer.get(server);
    if (listing === undefined) return null;
    return { names: [...listing.names], truncated: listing.truncated, listed_at: new Date(listing.listedAtMs).toISOString() };
  }

  /** Servers a reload removed are forgotten. */
  keepOnly(servers: ReadonlySet<string> | ReadonlyMap<string, unknown>): void {
    for (const server of this.byServer.keys()) if (!servers.has(server)) this.byServer.delete(server);
  }
}
