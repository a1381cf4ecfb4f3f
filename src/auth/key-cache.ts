// In-process cache in front of the key store: positive entries (any record the store knows,
// including revoked and expired ones, so they too cost no round trip) and negative entries
// (hashes the store does not know). Freshness is judged by the caller against the injected
// clock; an entry past its TTL is kept so it can be served stale while the store is down.
import type { AuthenticatedKey, KeyRecord } from '../keys/key-record.js';
import { MCP_AGGREGATE_TARGET, mcpTarget } from '../keys/mcp-scope.js';

export interface CachedKey {
  readonly record: KeyRecord;
  /** Shared, frozen result: a hit allocates nothing. */
  readonly authenticated: AuthenticatedKey;
  /** One already-resolved promise per entry, returned on every hit. */
  readonly resolved: Promise<AuthenticatedKey>;
  readonly agents: readonly string[];
  readonly revoked: boolean;
  /** Key expiry in epoch ms; Infinity when the key never expires. */
  readonly expiresAtMs: number;
  /** Cache freshness: after this the store is asked again. */
  freshUntilMs: number;
  /** Second-chance bit for CLOCK eviction: set on every hit, cleared by the sweeper. */
  referenced: boolean;
  /** Being served while the store is unreachable (counted as stale_hit). */
  stale: boolean;
}

export interface KeyCacheOptions {
  ttlMs: number;
  negativeTtlMs: number;
  /** Bound on positive entries. */
  maxEntries?: number;
  /** Separate bound for negative entries, so a flood of made-up keys cannot evict real ones. */
  maxNegativeEntries?: number;
}

export function toCachedKey(record: KeyRecord, freshUntilMs: number): CachedKey {
  const authenticated: AuthenticatedKey = Object.freeze({ keyId: record.keyId, account: record.account, plan: record.plan, limits: record.limits, tools: record.tools === null ? null : Object.freeze([...record.tools]), mcp: record.mcp ?? null });
  return {
    record,
    authenticated,
    resolved: Promise.resolve(authenticated),
    agents: Object.freeze(routeTargets(record)),
    revoked: record.revokedAt !== null,
    expiresAtMs: record.expiresAt === null ? Number.POSITIVE_INFINITY : Date.parse(record.expiresAt),
    freshUntilMs,
    referenced: false,
    stale: false,
  };
}

/**
 * What the key may call, as the authenticator's one list: its agents, then `mcp:{server}` for
 * each MCP server of its scope (mcp-scope.ts), so the MCP front door's servers pass through the
 * same check as agents (agent ids hold no ':'), and `mcp:*` (the aggregated `/mcp`) when the
 * scope names any server.
 */
function routeTargets(record: KeyRecord): string[] {
  const targets = [...record.agents];
  if (record.mcp == null) return targets;
  const servers = Object.keys(record.mcp);
  for (const server of servers) targets.push(mcpTarget(server));
  if (servers.length > 0) targets.push(MCP_AGGREGATE_TARGET);
  return targets;
}

export class KeyCache {
  private readonly positive = new Map<string, CachedKey>();
  private readonly negative = new Map<string, number>();
  private readonly maxEntries: number;
  private readonly maxNegativeEntries: number;
  /**
   * Bumped by every invalidation. A lookup that started under an older generation may carry
   * a record from before a revocation, so its result is not cached.
   */
  generation = 0;

  constructor(private readonly options: KeyCacheOptions) {
    this.maxEntries = options.maxEntries ?? 10_000;
    this.maxNegativeEntries = options.maxNegativeEntries ?? 10_000;
  }

  get size(): number {
    return this.positive.size;
  }

  get negativeSize(): number {
    return this.negative.size;
  }

  /** The positive entry, fresh or not. */
  get(hash: string): CachedKey | undefined {
    const entry = this.positive.get(hash);
    if (entry !== undefined) entry.referenced = true;
    return entry;
  }

  /** The positive entry without marking it used. */
  peek(hash: string): CachedKey | undefined {
    return this.positive.get(hash);
  }

  /** Until when `hash` is known not to exist (epoch ms), or undefined. */
  getNegative(hash: string): number | undefined {
    return this.negative.get(hash);
  }

  setPositive(record: KeyRecord, nowMs: number): CachedKey {
    const entry = toCachedKey(record, nowMs + this.options.ttlMs);
    this.negative.delete(record.hash);
    if (!this.positive.has(record.hash) && this.positive.size >= this.maxEntries) this.evictOne();
    this.positive.set(record.hash, entry);
    return entry;
  }

  setNegative(hash: string, nowMs: number): void {
    this.positive.delete(hash);
    if (!this.negative.has(hash) && this.negative.size >= this.maxNegativeEntries) {
      // Oldest insertion first: negative entries are short-lived and all alike.
      const oldest = this.negative.keys().next();
      if (!oldest.done) this.negative.delete(oldest.value);
    }
    this.negative.set(hash, nowMs + this.options.negativeTtlMs);
  }

  invalidate(hash: string): void {
    this.generation++;
    this.positive.delete(hash);
    this.negative.delete(hash);
  }

  clear(): void {
    this.generation++;
    this.positive.clear();
    this.negative.clear();
  }

  /**
   * Every known key is asked for again at its next use, and no unknown one is assumed:
   * what an invalidation subscriber that may have missed messages (it reconnected) calls
   * for. Unlike clear(), an entry whose lookup then fails (the store not back yet on the
   * data connection) is served stale, as in any outage, instead of failing the request.
   */
  expireAll(): void {
    this.generation++;
    for (const entry of this.positive.values()) entry.freshUntilMs = 0;
    this.negative.clear();
  }

  /** CLOCK: entries hit since the last sweep get a second chance at the back of the queue. */
  private evictOne(): void {
    for (let scanned = 0; scanned <= this.positive.size; scanned++) {
      const next = this.positive.entries().next();
      if (next.done) return;
      const [hash, entry] = next.value;
      this.positive.delete(hash);
      if (!entry.referenced) return;
      entry.referenced = false;
      this.positive.set(hash, entry);
    }
  }
}
