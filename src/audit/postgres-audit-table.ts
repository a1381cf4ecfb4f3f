// The SQL of the PostgreSQL audit table (docs/audit.md "PostgreSQL"): its migration (create it
// partitioned by day on `ts`, add the columns it lacks, the indexes the usual usage questions
// need) and the batch insert. Built from AUDIT_COLUMNS, so a new record field reaches both
// with its one line there. The partitions themselves are postgres-audit-partitions.ts. The
// table name was checked by the config schema (lower-case identifiers); it is quoted anyway.
import { AUDIT_COLUMNS, type AuditColumn } from './audit-columns.js';

export interface AuditTableSql {
  /** The table, quoted (and schema-qualified when configured so). */
  table: string;
  /** The quoted schema and a dot ("\"usage\".") when configured so, else "": partitions live beside the table. */
  schemaPrefix: string;
  /** The table's own name, without its schema. */
  bareTable: string;
  /** Statements run in order, in one transaction, under an advisory lock (several gateways may start at once). */
  migration: string[];
  /** Answers `kind`: 'p' for a partitioned table, 'r' for a plain one (an older gateway's), no row when there is none. */
  tableKind: string;
  /** The key of that advisory lock. */
  lockKey: string;
  /** INSERT … SELECT FROM unnest($1, …) ON CONFLICT (id, ts) DO NOTHING: one parameter per column, any number of rows. */
  insert: string;
}

/** Columns a usage question filters or groups on, after the period: the indexes (docs/observability.md has the queries). */
const INDEXED_BEFORE_TS = ['account', 'key_id', 'agent'] as const;

/** Thrown by the migration when the configured table exists unpartitioned (docs/audit.md "Migrating an unpartitioned table"). */
export class UnpartitionedAuditTableError extends Error {
  constructor(table: string) {
    super(
      `the audit table ${table} exists but is not partitioned by day (an older gateway made it); the gateway does not convert it in place. ` +
        'Records are spooled until the table is partitioned: see docs/audit.md "Migrating an unpartitioned table" (rename it, let the gateway create the new one, copy the rows back)',
    );
    this.name = 'UnpartitionedAuditTableError';
  }
}

export function auditTableSql(configured: string, columns: readonly AuditColumn[] = AUDIT_COLUMNS): AuditTableSql {
  const parts = configured.split('.');
  const table = parts.map(quote).join('.');
  const bare = parts[parts.length - 1]!;
  const schemaPrefix = parts.length > 1 ? `${quote(parts[0]!)}.` : '';
  // The primary key must hold the partition key: (id, ts). ts is never null (a record without one is set aside).
  const definitions = columns.map((column) => `${quote(column.name)} ${column.type}${column.name === 'ts' ? ' NOT NULL' : ''}`);
  const migration = [
    `CREATE TABLE IF NOT EXISTS ${table} (${definitions.join(', ')}, PRIMARY KEY (${quote('id')}, ${quote('ts')})) PARTITION BY RANGE (${quote('ts')})`,
    // A table made by an older gateway gets the fields added since (each nullable: old rows have none); on the parent, so every partition.
    ...columns.filter((column) => column.name !== 'id' && column.name !== 'ts').map((column) => `ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS ${quote(column.name)} ${column.type}`),
    // On the parent: each partition, made now or later, gets its own copy.
    `CREATE INDEX IF NOT EXISTS ${quote(`${bare}_ts_idx`)} ON ${table} (${quote('ts')})`,
    ...INDEXED_BEFORE_TS.map((name) => `CREATE INDEX IF NOT EXISTS ${quote(`${bare}_${name}_ts_idx`)} ON ${table} (${quote(name)}, ${quote('ts')})`),
  ];
  const names = columns.map((column) => quote(column.name)).join(', ');
  // jsonb travels as text (unnest of a text[] yields one JSON text per row) and is cast back.
  const selected = columns.map((column) => (column.type === 'jsonb' ? `${quote(column.name)}::jsonb` : quote(column.name))).join(', ');
  const unnested = columns.map((column, i) => `$${i + 1}::${column.type === 'jsonb' ? 'text' : column.type}[]`).join(', ');
  const insert = `INSERT INTO ${table} (${names}) SELECT ${selected} FROM unnest(${unnested}) AS batch(${names}) ON CONFLICT (${quote('id')}, ${quote('ts')}) DO NOTHING`;
  const tableKind = `SELECT c.relkind AS kind FROM pg_class c WHERE c.oid = to_regclass('${table.replaceAll("'", "''")}')`;
  return { table, schemaPrefix, bareTable: bare, migration, tableKind, lockKey: `agentgw audit table ${configured}`, insert };
}

function quote(identifier: string): string {
  return `"${identifier.replaceAll('"', '""')}"`;
}
