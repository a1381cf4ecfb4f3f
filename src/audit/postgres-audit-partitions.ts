// The day partitions of the PostgreSQL audit table (docs/audit.md "Partitions and
// retention"): one partition per UTC day of the record's `ts`, named <table>_pYYYYMMDD,
// created ahead of need (today and PARTITION_DAYS_AHEAD days after it) and for any day a
// batch holds, and — with `audit.postgres.retention` — whole partitions dropped once their
// last instant is older than the retention. Maintenance runs in the sink's own transactions
// under the table's advisory lock (gateways sharing a table take turns), once per UTC day of
// the injected clock and when a batch names a day not known yet, never per record.
import type pg from 'pg';
import type { Logger } from '../logger.js';

export const DAY_MS = 86_400_000;
/** Days after today whose partitions exist before their first record: a clock a little ahead, or midnight, never waits on DDL. */
export const PARTITION_DAYS_AHEAD = 2;

/** The UTC day number (days since 1970-01-01) of an instant. */
export function dayOf(ms: number): number {
  return Math.floor(ms / DAY_MS);
}

/** "agentgw_audit" + day → "agentgw_audit_p20261207". */
export function partitionName(bareTable: string, day: number): string {
  return `${bareTable}_p${new Date(day * DAY_MS).toISOString().slice(0, 10).replaceAll('-', '')}`;
}

/** The day a partition of this table covers, from its name; undefined for a table the gateway did not name. */
export function partitionDay(bareTable: string, name: string): number | undefined {
  if (!name.startsWith(`${bareTable}_p`)) return undefined;
  const digits = /^(\d{4})(\d{2})(\d{2})$/.exec(name.slice(bareTable.length + 2));
  if (!digits) return undefined;
  const ms = Date.UTC(Number(digits[1]), Number(digits[2]) - 1, Number(digits[3]));
  return partitionName(bareTable, dayOf(ms)) === name ? dayOf(ms) : undefined;
}

export interface AuditPartitionsOptions {
  /** The parent table, quoted and schema-qualified as configured. */
  table: string;
  /** The quoted schema prefix ("\"usage\"." or ""), for the partitions' names. */
  schemaPrefix: string;
  bareTable: string;
  lockKey: string;
  /** Drop partitions whose last instant is older than this; undefined keeps every one. */
  retentionMs: number | undefined;
  logger: Logger;
  where: Record<string, unknown>;
}

/** The days a record may be written to now: from the retention's horizon (or any day) to the last day created ahead. */
export interface WritableDays {
  first: number;
  last: number;
}

export class AuditPartitions {
  /** Days whose partition is known to exist. */
  private readonly known = new Set<number>();
  /** The UTC day maintenance last ran for (creation ahead, retention). */
  private maintainedDay: number | undefined;

  constructor(private readonly options: AuditPartitionsOptions) {}

  writableDays(nowMs: number): WritableDays {
    const { retentionMs } = this.options;
    return { first: retentionMs === undefined ? Number.NEGATIVE_INFINITY : dayOf(nowMs - retentionMs), last: dayOf(nowMs) + PARTITION_DAYS_AHEAD };
  }

  /** Makes sure a partition exists for each of `days` (all writable), runs the day's maintenance when the day changed. */
  async prepare(pool: pg.Pool, nowMs: number, days: ReadonlySet<number>): Promise<void> {
    const today = dayOf(nowMs);
    const maintenanceDue = this.maintainedDay !== today;
    const wanted = new Set(days);
    if (maintenanceDue) for (let day = today; day <= today + PARTITION_DAYS_AHEAD; day++) wanted.add(day);
    const missing = [...wanted].filter((day) => !this.known.has(day));
    if (missing.length === 0 && !maintenanceDue) return;
    await this.inLockedTransaction(pool, async (client) => {
      await this.readExisting(client);
      for (const day of missing) {
        if (this.known.has(day)) continue;
        await client.query(this.createStatement(day));
        this.known.add(day);
      }
      if (maintenanceDue) await this.dropPastRetention(client, nowMs);
    });
    this.maintainedDay = today;
  }

  /** Forgets what it knew (a partition dropped by hand): the next batch reads the catalog again. */
  forget(): void {
    this.known.clear();
    this.maintainedDay = undefined;
  }

  private async readExisting(client: pg.PoolClient): Promise<void> {
    const { rows } = await client.query<{ name: string }>('SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = $1::regclass', [this.options.table]);
    this.known.clear();
    for (const { name } of rows) {
      const day = partitionDay(this.options.bareTable, name);
      if (day !== undefined) this.known.add(day);
    }
  }

  private createStatement(day: number): string {
    const from = new Date(day * DAY_MS).toISOString();
    const to = new Date((day + 1) * DAY_MS).toISOString();
    return `CREATE TABLE IF NOT EXISTS ${this.quotedPartition(day)} PARTITION OF ${this.options.table} FOR VALUES FROM ('${from}') TO ('${to}')`;
  }

  private async dropPastRetention(client: pg.PoolClient, nowMs: number): Promise<void> {
    const { retentionMs } = this.options;
    if (retentionMs === undefined) return;
    // A partition goes when its last instant (the next midnight) is at or before the horizon: whole days only, never a row.
    const horizonMs = nowMs - retentionMs;
    const expired = [...this.known].filter((day) => (day + 1) * DAY_MS <= horizonMs).sort((a, b) => a - b);
    for (const day of expired) {
      await client.query(`DROP TABLE IF EXISTS ${this.quotedPartition(day)}`);
      this.known.delete(day);
    }
    if (expired.length > 0) {
      const names = expired.map((day) => partitionName(this.options.bareTable, day));
      this.options.logger.info({ ...this.options.where, dropped: names }, 'audit postgres: dropped the day partitions past audit.postgres.retention');
    }
  }

  private quotedPartition(day: number): string {
    return `${this.options.schemaPrefix}"${partitionName(this.options.bareTable, day)}"`;
  }

  private async inLockedTransaction(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<void>): Promise<void> {
    const client = await pool.connect();
    let failed = false;
    try {
      await client.query('BEGIN');
      await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [this.options.lockKey]);
      await work(client);
      await client.query('COMMIT');
    } catch (err) {
      failed = true;
      // What this transaction created or dropped did not happen: read the catalog again next time.
      this.forget();
      throw err;
    } finally {
      client.release(failed);
    }
  }
}
