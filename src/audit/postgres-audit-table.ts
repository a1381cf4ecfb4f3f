// The SQL of the PostgreSQL audit table (docs/audit.md "PostgreSQL"): its migration (create it,
// add the columns it lacks, the indexes the usual usage questions need) and the batch insert.
// Built from AUDIT_COLUMNS, so a new record field reaches both with its one line there. The
// table name was checked by the config schema (lower-case identifiers); it is quoted anyway.
import { AUDIT_COLUMNS, type AuditColumn } from './audit-columns.js';

export interface AuditTableSql {
  /** The table, quoted (and schema-qualified when configured so). */
  table: string;
  /** Statements run in order, in one transaction, under an advisory lock (several gateways may start at once). */
  migration: string[];
  /** The key of that advisory lock. */
  lockKey: string;
  /** INSERT … SELECT FROM unnest($1, …) ON CONFLICT (id) DO NOTHING: one parameter per column, any number of rows. */
  insert: string;
}

/** Columns a usage question filters or groups on, after the period: the indexes (docs/observability.md has the queries). */
const INDEXED_BEFORE_TS = ['account', 'key_id', 'agent'] as const;

export function auditTableSql(configured: string, columns: readonly AuditColumn[] = AUDIT_COLUMNS): AuditTableSql {
  const parts = configured.split('.');
  const table = parts.map(quote).join('.');
  const bare = parts[parts.length - 1]!;
  const definitions = columns.map((column) => `${quote(column.name)} ${column.type}${column.name === 'id' ? ' PRIMARY KEY' : ''}`);
  const migration = [
    `CREATE TABLE IF NOT EXISTS ${table} (${definitions.join(', ')})`,
    // A table made by an older gateway gets the fields added since (each nullable: old rows have none).
    ...columns.filter((column) => column.name !== 'id').map((column) => `ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS ${quote(column.name)} ${column.type}`),
    `CREATE INDEX IF NOT EXISTS ${quote(`${bare}_ts_idx`)} ON ${table} (${quote('ts')})`,
    ...INDEXED_BEFORE_TS.map((name) => `CREATE INDEX IF NOT EXISTS ${quote(`${bare}_${name}_ts_idx`)} ON ${table} (${quote(name)}, ${quote('ts')})`),
  ];
  const names = columns.map((column) => quote(column.name)).join(', ');
  // jsonb travels as text (unnest of a text[] yields one JSON text per row) and is cast back.
  const selected = columns.map((column) => (column.type === 'jsonb' ? `${quote(column.name)}::jsonb` : quote(column.name))).join(', ');
  const unnested = columns.map((column, i) => `$${i + 1}::${column.type === 'jsonb' ? 'text' : column.type}[]`).join(', ');
  const insert = `INSERT INTO ${table} (${names}) SELECT ${selected} FROM unnest(${unnested}) AS batch(${names}) ON CONFLICT (${quote('id')}) DO NOTHING`;
  return { table, migration, lockKey: `agentgw audit table ${configured}`, insert };
}

function quote(identifier: string): string {
  return `"${identifier.replaceAll('"', '""')}"`;
}
