// The usage audit record as table columns (docs/audit.md "PostgreSQL"): one column per record
// field, by the field's name, and the typed decoder that turns the record's JSON line (the
// one encoding every sink and spool shares, audit-record.ts) back into column values. A new
// record field is one line in AUDIT_COLUMNS; the gateway adds the column to an existing table
// at its next start (postgres-audit-table.ts). The compiler refuses a field without a column.
import type { AuditLine, AuditRecord } from './audit-record.js';

/** The SQL types a column may have, and so the shapes a field's value may take. */
export type AuditColumnType = 'text' | 'timestamptz' | 'integer' | 'bigint' | 'numeric' | 'jsonb';

export interface AuditColumn {
  readonly name: keyof AuditRecord;
  readonly type: AuditColumnType;
}

/** In the record's order; `id` first, the primary key. */
export const AUDIT_COLUMNS = [
  { name: 'id', type: 'text' },
  { name: 'request_id', type: 'text' },
  { name: 'ts', type: 'timestamptz' },
  { name: 'key_id', type: 'text' },
  { name: 'account', type: 'text' },
  { name: 'plan', type: 'text' },
  { name: 'agent', type: 'text' },
  { name: 'route', type: 'text' },
  { name: 'status', type: 'integer' },
  { name: 'outcome', type: 'text' },
  { name: 'tokens_used', type: 'bigint' },
  { name: 'latency_ms', type: 'bigint' },
  { name: 'upstream_latency_ms', type: 'bigint' },
  { name: 'bytes_in', type: 'bigint' },
  { name: 'bytes_out', type: 'bigint' },
  { name: 'client_ip', type: 'text' },
  { name: 'user_id', type: 'text' },
  { name: 'session_id', type: 'text' },
  { name: 'model', type: 'text' },
  { name: 'cost_usd', type: 'numeric' },
  { name: 'tool_calls', type: 'jsonb' },
  { name: 'tools_withheld', type: 'jsonb' },
  // JWT callers only (null for a key's rows; docs/identity.md).
  { name: 'auth', type: 'text' },
  { name: 'token_issuer', type: 'text' },
  { name: 'token_sub', type: 'text' },
  { name: 'token_jti', type: 'text' },
  // MCP records only (null on the chat routes' rows); is_error as JSON true/false/null.
  { name: 'mcp_server', type: 'text' },
  { name: 'tool', type: 'text' },
  { name: 'is_error', type: 'jsonb' },
] as const satisfies readonly AuditColumn[];

/** Compiles only while every AuditRecord field has a column above. */
type FieldsWithoutColumn = Exclude<keyof AuditRecord, (typeof AUDIT_COLUMNS)[number]['name']>;
export const EVERY_FIELD_HAS_A_COLUMN: [FieldsWithoutColumn] extends [never] ? true : FieldsWithoutColumn = true;

/** A batch as columns: values[c][r] is column c of row r (the form `unnest` takes, one array per column). */
export interface AuditColumnValues {
  values: unknown[][];
  rows: number;
  /** lines[r] is the record line row r was decoded from (a refused row is set aside as its line). */
  lines: AuditLine[];
  /** Lines that were not a record with a string `id` (never written; see the sink's log). */
  skipped: number;
}

const INT4_MIN = -2_147_483_648;
const INT4_MAX = 2_147_483_647;
/** ISO 8601 with a time zone, as the gateway writes `ts`; anything else is stored as null, never refused. */
const ISO_TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;

/**
 * Decodes a batch of record lines into column values. Each value is checked against its
 * column's type and stored as null when it does not fit, so that a value a runner or client
 * chose cannot make PostgreSQL refuse a batch: text is made well-formed (NUL, which
 * PostgreSQL text cannot hold, and lone UTF-16 surrogates, which jsonb refuses as escapes
 * and UTF-8 cannot carry, each become U+FFFD — in jsonb keys too), integers must be safe
 * integers in range, a timestamp must be ISO 8601. A line without a string `id` is skipped.
 * What PostgreSQL still refuses is set aside by the sink (postgres-audit-sink.ts).
 */
export function decodeAuditColumns(lines: readonly AuditLine[], columns: readonly AuditColumn[] = AUDIT_COLUMNS): AuditColumnValues {
  const values: unknown[][] = columns.map(() => []);
  const decoded: AuditLine[] = [];
  let rows = 0;
  let skipped = 0;
  for (const line of lines) {
    const record = parseRecord(line);
    if (record === undefined || typeof record.id !== 'string' || record.id.length === 0) {
      skipped += 1;
      continue;
    }
    for (let c = 0; c < columns.length; c++) values[c]!.push(columnValue(columns[c]!.type, record[columns[c]!.name]));
    decoded.push(line);
    rows += 1;
  }
  return { values, rows, lines: decoded, skipped };
}

function parseRecord(line: AuditLine): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(line);
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** The value as its column stores it, or null. jsonb values travel as JSON text. */
export function columnValue(type: AuditColumnType, value: unknown): unknown {
  switch (type) {
    case 'text':
      return typeof value === 'string' ? wellFormedText(value) : null;
    case 'timestamptz':
      return typeof value === 'string' && ISO_TIMESTAMP.test(value) && Number.isFinite(Date.parse(value)) ? value : null;
    case 'integer':
      return Number.isSafeInteger(value) && (value as number) >= INT4_MIN && (value as number) <= INT4_MAX ? value : null;
    case 'bigint':
      return Number.isSafeInteger(value) ? value : null;
    case 'numeric':
      return typeof value === 'number' && Number.isFinite(value) ? value : null;
    case 'jsonb':
      // jsonb refuses the escapes \u0000 and a lone \ud800 (JSON.stringify writes both): strings and keys are made well-formed first.
      return value === undefined || value === null ? null : JSON.stringify(value, wellFormedJsonValue);
  }
}

/** NUL, or a UTF-16 surrogate without its pair (a high one not followed by a low one, a low one not preceded by a high one). */
const NOT_STORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
const NOT_STORABLE_TEST = new RegExp(NOT_STORABLE.source);

/** The text with every character PostgreSQL cannot store as text (NUL, a lone surrogate) replaced by U+FFFD. */
export function wellFormedText(text: string): string {
  return NOT_STORABLE_TEST.test(text) ? text.replace(NOT_STORABLE, '\ufffd') : text;
}

/** JSON.stringify's replacer: strings made well-formed, and an object's keys too (rebuilt only when one needs it). */
function wellFormedJsonValue(_key: string, value: unknown): unknown {
  if (typeof value === 'string') return wellFormedText(value);
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  const keys = Object.keys(value);
  if (!keys.some((key) => NOT_STORABLE_TEST.test(key))) return value;
  return Object.fromEntries(keys.map((key) => [wellFormedText(key), (value as Record<string, unknown>)[key]]));
}
