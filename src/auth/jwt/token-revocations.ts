// Revoked JWT access tokens (docs/identity.md "Revocation"): by `jti`, or every token of a
// `sub`, each until a time. The request path asks `refuses` on every token request, cached
// or not: two Map reads (none while nothing is revoked). What it reads is this process's
// copy; the admin API writes through `revoke`, and every instance's copy follows within the
// poll interval:
// - with Redis, one hash (field "jti:<id>" or "sub:<id>" → until, epoch ms) and a version
//   counter beside it in the same hash slot, written together in one MULTI; each instance
//   reads the counter every POLL_INTERVAL_MS and the hash only when it moved. A poll needs no
//   subscription to survive reconnects or failovers, and one GET per interval per instance
//   costs the request path nothing;
// - without Redis (one process), the copy is the store.
import type { Clock } from '../../clock.js';
import type { Logger } from '../../logger.js';
import type { RedisClient } from '../../redis/redis-client.js';
import { RevocationLimitError, type Revocation, type TokenRevocations } from '../token-revocation-types.js';

export { RevocationLimitError, type Revocation, type TokenRevocations };

/** How often each instance reads the revocation version (well inside the 1 s promise). */
export const POLL_INTERVAL_MS = 200;
/** Past this many live revocations a new one is refused (the copy every instance holds is bounded). */
export const MAX_REVOCATIONS = 100_000;

/** This process's copy: jti → until, sub → until. */
class RevocationTable {
  jti = new Map<string, number>();
  sub = new Map<string, number>();

  refuses(sub: string, jti: string | null, nowMs: number): boolean {
    if (this.sub.size !== 0) {
      const until = this.sub.get(sub);
      if (until !== undefined && nowMs < until) return true;
    }
    if (jti !== null && this.jti.size !== 0) {
      const until = this.jti.get(jti);
      if (until !== undefined && nowMs < until) return true;
    }
    return false;
  }

  set(revocation: Revocation): void {
    const map = revocation.kind === 'jti' ? this.jti : this.sub;
    // A later revocation of the same token never shortens an earlier one.
    map.set(revocation.value, Math.max(map.get(revocation.value) ?? 0, revocation.untilMs));
  }

  get size(): number {
    return this.jti.size + this.sub.size;
  }

  prune(nowMs: number): void {
    for (const map of [this.jti, this.sub]) for (const [value, until] of map) if (until <= nowMs) map.delete(value);
  }
}

/** Without Redis: the process's own table. */
export class MemoryTokenRevocations implements TokenRevocations {
  private readonly table = new RevocationTable();

  constructor(private readonly clock: Clock) {}

  refuses(sub: string, jti: string | null, nowMs: number): boolean {
    return this.table.refuses(sub, jti, nowMs);
  }

  revoke(revocation: Revocation): Promise<void> {
    this.table.prune(this.clock.now());
    if (this.table.size >= MAX_REVOCATIONS) return Promise.reject(new RevocationLimitError('too many live revocations'));
    this.table.set(revocation);
    return Promise.resolve();
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

// The Redis layout, encoded and decoded here only. Field: "<kind>:<value>"; value: until (epoch ms, decimal).
function fieldOf(revocation: Pick<Revocation, 'kind' | 'value'>): string {
  return `${revocation.kind}:${revocation.value}`;
}

/** A stored field and value as a revocation, or undefined for anything else (never trusted blindly). */
export function decodeRevocationField(field: string, value: string): Revocation | undefined {
  const colon = field.indexOf(':');
  const kind = field.slice(0, colon);
  if (colon < 0 || (kind !== 'jti' && kind !== 'sub')) return undefined;
  const untilMs = Number(value);
  if (!Number.isSafeInteger(untilMs)) return undefined;
  return { kind, value: field.slice(colon + 1), untilMs };
}

export interface RedisRevocationsOptions {
  client: RedisClient;
  prefix: string;
  clock: Clock;
  logger: Logger;
  pollIntervalMs?: number;
}

export class RedisTokenRevocations implements TokenRevocations {
  private table = new RevocationTable();
  private readonly hashKey: string;
  private readonly versionKey: string;
  private version: string | null | undefined = undefined;
  private readonly timer: NodeJS.Timeout;
  private polling = false;
  private warned = false;

  constructor(private readonly options: RedisRevocationsOptions) {
    // One hash tag: the MULTI that writes both keys runs in one slot on a cluster.
    const tag = `{${options.prefix}token-revocations:v1}`;
    this.hashKey = tag;
    this.versionKey = `${tag}:version`;
    this.timer = setInterval(() => void this.poll(), options.pollIntervalMs ?? POLL_INTERVAL_MS);
    this.timer.unref();
    void this.poll();
  }

  refuses(sub: string, jti: string | null, nowMs: number): boolean {
    return this.table.refuses(sub, jti, nowMs);
  }

  async revoke(revocation: Revocation): Promise<void> {
    const { client, clock } = this.options;
    const stored = await client.hgetall(this.hashKey);
    const nowMs = clock.now();
    const expired: string[] = [];
    let live = 0;
    for (const [field, value] of Object.entries(stored)) {
      const known = decodeRevocationField(field, value);
      if (known === undefined || known.untilMs <= nowMs) expired.push(field);
      else live += 1;
    }
    if (live >= MAX_REVOCATIONS) throw new RevocationLimitError('too many live revocations');
    const field = fieldOf(revocation);
    const earlier = stored[field] === undefined ? undefined : decodeRevocationField(field, stored[field]);
    const untilMs = Math.max(earlier?.untilMs ?? 0, revocation.untilMs);
    const multi = client.multi().hset(this.hashKey, field, String(untilMs));
    if (expired.length > 0) multi.hdel(this.hashKey, ...expired);
    const results = await multi.incr(this.versionKey).exec();
    const failed = results?.find(([error]) => error !== null);
    if (results === null || failed !== undefined) throw failed?.[0] ?? new Error('the revocation was not written');
    // This instance refuses at once; the others at their next poll.
    this.table.set({ ...revocation, untilMs });
  }

  /** Reads the version, and the whole hash when it moved. Never throws: a failed poll keeps the copy and is tried again. */
  private async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      const { client } = this.options;
      const version = await client.get(this.versionKey);
      if (version === this.version) return;
      const stored = await client.hgetall(this.hashKey);
      const table = new RevocationTable();
      const nowMs = this.options.clock.now();
      for (const [field, value] of Object.entries(stored)) {
        const revocation = decodeRevocationField(field, value);
        if (revocation !== undefined && revocation.untilMs > nowMs) table.set(revocation);
      }
      this.table = table;
      this.version = version;
      this.warned = false;
    } catch (error) {
      if (!this.warned) this.options.logger.warn({ err: (error as Error).message }, 'token revocations could not be read from redis; keeping the last copy');
      this.warned = true;
    } finally {
      this.polling = false;
    }
  }

  /** Resolves after a poll that read the store (for tests and start-up). */
  async refresh(): Promise<void> {
    while (this.polling) await new Promise((resolve) => setTimeout(resolve, 5));
    this.version = undefined;
    await this.poll();
  }

  close(): Promise<void> {
    clearInterval(this.timer);
    return Promise.resolve();
  }
}
