// Audit sink: a PostgreSQL table (docs/audit.md "PostgreSQL"), one row per record, one column
// per field, partitioned by the UTC day of `ts` (postgres-audit-partitions.ts). A batch is ONE
// statement, INSERT … SELECT FROM unnest(one array per column) … ON CONFLICT (id, ts) DO
// NOTHING: the same prepared statement whatever the batch size, and a batch written again (a
// replay after a spool, a journal read back after a kill) adds no row twice. Behind the sink
// channel like every sink, so an unreachable or slow server sends records to the spool, never
// back to the request path. A batch the server refuses for its DATA (postgres-refusal.ts) is
// split until the refused records are alone; those are set aside in the rejected-records file
// and counted, and the rest are written — one bad record never holds the others. The pool is
// bounded (one batch at a time per sink; the migration may take a second connection). The
// driver is loaded with the first connection, so a gateway without this sink never loads it.
import type pg from 'pg';
import type { Clock } from '../clock.js';
import type { Logger } from '../logger.js';
import { metrics } from '../metrics/metrics.js';
import { AUDIT_COLUMNS, decodeAuditColumns, type AuditColumnValues } from './audit-columns.js';
import type { AuditLine } from './audit-record.js';
import type { AuditSink, AuditSinkName } from './audit-sink.js';
import { AuditPartitions, dayOf } from './postgres-audit-partitions.js';
import { auditTableSql, UnpartitionedAuditTableError, type AuditTableSql } from './postgres-audit-table.js';
import { isMissingPartition, refusedForItsData } from './postgres-refusal.js';
import { RejectedAuditRecords, type RejectedAuditRecord } from './rejected-audit-records.js';

export interface PostgresAuditSinkOptions {
  /** postgres://… with credentials and TLS settings (sslmode, sslrootcert, sslcert, sslkey). */
  url: string;
  table: string;
  maxConnections: number;
  /** Connecting, and each statement, within this; past it the batch counts as failed (and is spooled). */
  timeoutMs: number;
  /** Whole day partitions older than this are dropped; undefined keeps every one. */
  retentionMs?: number | undefined;
  /** Where records the server refuses for their data are set aside (JSON Lines). */
  rejectedPath: string;
  /** The day partitions and the retention follow this clock (tests move it across midnight). */
  clock: Clock;
  logger: Logger;
}

const TS_COLUMN = AUDIT_COLUMNS.findIndex((column) => column.name === 'ts');
const SINK_NAME: AuditSinkName = 'postgres';

export class PostgresAuditSink implements AuditSink {
  readonly name: AuditSinkName = SINK_NAME;
  /** Where refused records are set aside (docs/audit.md "Records PostgreSQL refuses"). */
  readonly rejectedPath: string;
  private readonly poolConfig: pg.PoolConfig;
  private pool: Promise<pg.Pool> | undefined;
  private readonly sql: AuditTableSql;
  private readonly insertName: string;
  private readonly logger: Logger;
  private readonly clock: Clock;
  private readonly partitions: AuditPartitions;
  private readonly rejected: RejectedAuditRecords;
  /** The migration, once it has succeeded; retried with the next batch after a failure. */
  private migrated: Promise<void> | undefined;
  /** For logs: where, never the URL (it may hold a password). */
  private readonly where: Record<string, unknown>;

  constructor(options: PostgresAuditSinkOptions) {
    this.logger = options.logger;
    this.clock = options.clock;
    this.sql = auditTableSql(options.table);
    // Prepared once per connection of this sink's own pool under this name.
    this.insertName = 'agentgw_audit_insert';
    const url = new URL(options.url);
    this.where = { host: url.hostname, port: url.port || '5432', database: decodeURIComponent(url.pathname.slice(1)), table: options.table };
    this.partitions = new AuditPartitions({ ...this.sql, retentionMs: options.retentionMs, logger: options.logger, where: this.where });
    this.rejectedPath = options.rejectedPath;
    this.rejected = new RejectedAuditRecords(options.rejectedPath, SINK_NAME, options.table, () => this.clock.now());
    this.poolConfig = {
      connectionString: options.url,
      max: options.maxConnections,
      connectionTimeoutMillis: options.timeoutMs,
      // Both ends keep the deadline: the client stops waiting, the server stops working.
      query_timeout: options.timeoutMs,
      statement_timeout: options.timeoutMs,
      idleTimeoutMillis: 30_000,
      keepAlive: true,
      application_name: 'agent-gateway audit',
    };
    // The table is made at start (in the background: an unreachable server must not hold it).
    this.ensureTable().catch((err: unknown) => this.logger.warn({ err: { message: (err as Error).message }, ...this.where }, 'audit postgres: cannot prepare the table yet; records are spooled until it can'));
  }

  async write(lines: readonly AuditLine[]): Promise<void> {
    if (lines.length === 0) return;
    await this.ensureTable();
    const batch = decodeAuditColumns(lines);
    if (batch.skipped > 0) this.logger.error({ ...this.where, skipped: batch.skipped }, 'audit postgres: lines that are not audit records were left out of a batch');
    if (batch.rows === 0) return;
    const nowMs = this.clock.now();
    const { first, last } = this.partitions.writableDays(nowMs);
    const writable: number[] = [];
    const days = new Set<number>();
    const rejected: RejectedAuditRecord[] = [];
    const tsValues = batch.values[TS_COLUMN]!;
    for (let row = 0; row < batch.rows; row++) {
      const ts = tsValues[row];
      const day = typeof ts === 'string' ? dayOf(Date.parse(ts)) : Number.NaN;
      // No partition may take it (no time, past the retention, beyond the days created ahead): set aside without asking the server.
      if (!(day >= first && day <= last)) {
        rejected.push({ line: batch.lines[row]!, code: 'outside_partitions', reason: typeof ts === 'string' ? `ts ${ts} is outside the days the table keeps` : 'the record has no usable ts' });
        continue;
      }
      writable.push(row);
      days.add(day);
    }
    if (writable.length > 0) {
      const pool = await this.connections();
      await this.partitions.prepare(pool, nowMs, days);
      await this.insertRows(pool, batch, writable, rejected);
    }
    await this.setAside(rejected);
  }

  async close(): Promise<void> {
    await this.migrated?.catch(() => undefined);
    const pool = await this.pool?.catch(() => undefined);
    await pool?.end();
    await this.rejected.close();
  }

  /**
   * Inserts the rows; when the server refuses them for their data, inserts each half on its
   * own until the refused rows are alone, and adds those to `rejected`. Any other failure
   * (the server away, a timeout) is thrown: the batch is then spooled whole and written again.
   */
  private async insertRows(pool: pg.Pool, batch: AuditColumnValues, rows: readonly number[], rejected: RejectedAuditRecord[]): Promise<void> {
    const values = rows.length === batch.rows ? batch.values : batch.values.map((column) => rows.map((row) => column[row]));
    try {
      await pool.query({ name: this.insertName, text: this.sql.insert, values });
      return;
    } catch (err) {
      if (isMissingPartition(err)) this.partitions.forget();
      const refusal = refusedForItsData(err);
      if (refusal === undefined) throw err;
      if (rows.length === 1) {
        rejected.push({ line: batch.lines[rows[0]!]!, ...refusal });
        return;
      }
    }
    const half = Math.ceil(rows.length / 2);
    await this.insertRows(pool, batch, rows.slice(0, half), rejected);
    await this.insertRows(pool, batch, rows.slice(half), rejected);
  }

  /** Writes the refused records to the rejected file (throws if it cannot: the batch is retried), counts them, says so at warn. */
  private async setAside(rejected: readonly RejectedAuditRecord[]): Promise<void> {
    if (rejected.length === 0) return;
    await this.rejected.append(rejected);
    const codes = new Map<string, number>();
    for (const { code } of rejected) codes.set(code, (codes.get(code) ?? 0) + 1);
    for (const [code, count] of codes) metrics.auditSetAside.inc({ sink: SINK_NAME, code }, count);
    // Ids and codes only: the records, and PostgreSQL's reasons (which may quote a value), are in the file, not in the log.
    const ids = rejected.slice(0, 10).map(({ line }) => (JSON.parse(line) as { id: string }).id);
    this.logger.warn(
      { ...this.where, records: rejected.length, codes: Object.fromEntries(codes), ids, file: this.rejected.path },
      'audit postgres: records the server refused for their data were set aside; the rest of the batch was written',
    );
  }

  /** The bounded pool, made (and the driver loaded) on first use. */
  private connections(): Promise<pg.Pool> {
    this.pool ??= import('pg').then(({ default: driver }) => {
      const pool = new driver.Pool(this.poolConfig);
      // An idle connection the server drops (a restart, a failover) is reported here; without a
      // listener it would end the process. The next batch opens a new one.
      pool.on('error', (err) => this.logger.warn({ err: { message: err.message }, ...this.where }, 'audit postgres: an idle connection was lost; the next batch reconnects'));
      return pool;
    });
    return this.pool;
  }

  /** Runs the migration once per process; a failure is forgotten so the next batch tries again. */
  private ensureTable(): Promise<void> {
    this.migrated ??= this.migrate().catch((err: unknown) => {
      this.migrated = undefined;
      throw err;
    });
    return this.migrated;
  }

  private async migrate(): Promise<void> {
    const client = await (await this.connections()).connect();
    let failed = false;
    try {
      await client.query('BEGIN');
      // Gateways starting together take turns: CREATE … IF NOT EXISTS alone can race.
      await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [this.sql.lockKey]);
      const { rows } = await client.query<{ kind: string }>(this.sql.tableKind);
      if (rows[0]?.kind === 'r') throw new UnpartitionedAuditTableError(String(this.where.table));
      for (const statement of this.sql.migration) await client.query(statement);
      await client.query('COMMIT');
    } catch (err) {
      failed = true;
      throw err;
    } finally {
      // A failed transaction's connection is closed rather than reused (it may be broken, or mid-transaction).
      client.release(failed);
    }
    this.logger.info(this.where, 'audit postgres: table ready');
  }
}
