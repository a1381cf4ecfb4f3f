// `agentgw_mcp_sessions` (docs/mcp.md "Metrics"): the sessions this instance opened that have
// not ended here (DELETE, a lost upstream session) and were used here within `mcp.session_idle`.
// A session continued only on other instances drops out once it has been idle here that long,
// as it would expire if it were idle everywhere. Ids are kept oldest-use first (a Map re-set on
// use), swept from the front; bounded (100,000), so memory stays flat.
import { metrics } from '../metrics/metrics.js';

const MAX_TRACKED = 100_000;

export class SessionGauge {
  private readonly sessions = new Map<string, { server: string; usedAt: number }>();

  constructor(
    private readonly idleMs: () => number,
    private readonly now: () => number = Date.now,
  ) {}

  open(id: string, server: string): void {
    this.sweep();
    if (this.sessions.size >= MAX_TRACKED) return;
    this.sessions.set(id, { server, usedAt: this.now() });
    metrics.mcpSessions.inc({ server });
  }

  /** A request of the session reached this instance. */
  used(id: string): void {
    const entry = this.sessions.get(id);
    if (entry === undefined) return;
    this.sessions.delete(id);
    entry.usedAt = this.now();
    this.sessions.set(id, entry);
  }

  ended(id: string): void {
    const entry = this.sessions.get(id);
    if (entry === undefined) return;
    this.sessions.delete(id);
    metrics.mcpSessions.dec({ server: entry.server });
  }

  private sweep(): void {
    const oldest = this.now() - this.idleMs();
    for (const [id, entry] of this.sessions) {
      if (entry.usedAt > oldest) return;
      this.sessions.delete(id);
      metrics.mcpSessions.dec({ server: entry.server });
    }
  }
}
