// audit.postgres (docs/audit.md "PostgreSQL"): the usage audit's PostgreSQL sink. The URL
// carries the credentials and the TLS settings (sslmode, sslrootcert, sslcert, sslkey), as
// libpq's do; the table is created, and its missing columns added, by the gateway; its day
// partitions past `retention` are dropped.
import { z } from 'zod';
import { positiveDuration } from './schema-primitives.js';

/**
 * A table name, optionally schema-qualified: lower-case letters, digits and "_" (no quoting
 * rules to get wrong in hand-written SQL), short enough that the index names the gateway
 * derives from it (`<table>_account_ts_idx`) stay within PostgreSQL's 63 bytes.
 */
export const AUDIT_TABLE_NAME = /^([a-z_][a-z0-9_]{0,62}\.)?[a-z_][a-z0-9_]{0,39}$/;

const postgresUrl = z.string().refine((text) => {
  try {
    const url = new URL(text);
    return url.protocol === 'postgres:' || url.protocol === 'postgresql:';
  } catch {
    return false;
  }
}, { message: 'must be a postgres:// or postgresql:// URL, e.g. postgres://agentgw:${PGPASSWORD}@127.0.0.1:5432/agentgw?sslmode=verify-full&sslrootcert=/etc/ssl/pg-ca.pem' });

export const auditPostgresSchema = z
  .strictObject({
    url: postgresUrl,
    table: z
      .string()
      .regex(AUDIT_TABLE_NAME, 'must be a lower-case table name (letters, digits, "_"; at most 40 characters), optionally schema-qualified, e.g. agentgw_audit or audit.requests')
      .default('agentgw_audit'),
    // Connections this process keeps to PostgreSQL: one batch is written at a time, so two is plenty.
    max_connections: z.number().int().min(1).max(32).default(2),
    // Connecting, and each batch's statement, must finish within this; past it the batch is spooled.
    timeout: positiveDuration.default(10_000),
    // Whole day partitions older than this are dropped (e.g. 90d); absent: every record is kept.
    retention: positiveDuration.refine((ms) => ms >= 86_400_000, { message: 'must be at least 1d: whole day partitions are dropped, e.g. 90d' }).optional(),
  })
  .transform((pg) => ({ url: pg.url, table: pg.table, maxConnections: pg.max_connections, timeoutMs: pg.timeout, retentionMs: pg.retention }));

export type AuditPostgresConfig = z.output<typeof auditPostgresSchema>;
