// Audit sink: a PostgreSQL table (docs/audit.md "PostgreSQL"), one row per record, one column
// per field. A batch is ONE statement, INSERT … SELECT FROM unnest(one array per column) …
// ON CONFLICT (id) DO NOTHING: the same prepared statement whatever the batch size, and a
// batch written again (a replay after a spool, a journal read back after a kill) adds no row
// twice. Behind the sink channel like every sink, so an unreachable or slow server sends
// records to the spool, never back to the request path. The pool is bounded (one batch at a
// time per sink; the migration may take a second connection). The driver is loaded with the
// first connection, so a gateway without this sink never loads it.
import type pg from 'pg';
import type { Logger } from '../logger.js';
import { decodeAuditColumns } from './audit-columns.js';
import type { AuditLine } from './audit-record.js';
import type { AuditSink, AuditSinkName } from './audit-sink.js';
import { auditTableSql, type AuditTableSql } from './postgres-audit-table.js';

export interface PostgresAuditSinkOptions {
  /** postgres://… with credentials and TLS settings (sslmode, sslrootcert, sslcert, sslkey). */
  url: string;
  table: string;
  maxConnections: number;
  /** Connecting, and each statement, within this; past it the batch counts as failed (and is spooled). */
  timeoutMs: number;
  logger: Logger;
}

export class PostgresAuditSink implements AuditSink {
  readonly name: AuditSinkName = 'postgres';
  private readonly poolConfig: pg.PoolConfig;
  private pool: Promise<pg.Pool> | undefined;
  private readonly sql: AuditTableSql;
  private readonly insertName: string;
  private readonly logger: Logger;
  /** The migration, once it has succeeded; retried with the next batch after a failure. */
  private migrated: Promise<void> | undefined;
  /** For logs: where, never the URL (it may hold a password). */
  private readonly where: Record<string, unknown>;

  constructor(options: PostgresAuditSinkOptions) {
    this.logger = options.logger;
    this.sql = auditTableSql(options.table);
    // Prepared once per connection of this sink's own pool under this name.
    this.insertName = 'agentgw_audit_insert';
    const url = new URL(options.url);
    this.where = { host: url.hostname, port: url.port || '5432', database: decodeURIComponent(url.pathname.slice(1)), table: options.table };
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
    await (await this.connections()).query({ name: this.insertName, text: this.sql.insert, values: batch.values });
  }

  async close(): Promise<void> {
    await this.migrated?.catch(() => undefined);
    const pool = await this.pool?.catch(() => undefined);
    await pool?.end();
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
