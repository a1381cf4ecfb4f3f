// The PostgreSQL table's columns follow the audit record (docs/audit.md "PostgreSQL"): one per
// field, and a decoder that stores a value that does not fit its column as null rather than
// letting it fail a batch.
import { describe, expect, it } from 'vitest';
import { AUDIT_COLUMNS, columnValue, decodeAuditColumns } from '../../../src/audit/audit-columns.js';
import { toAuditLine, type AuditRecord } from '../../../src/audit/audit-record.js';
import { auditTableSql } from '../../../src/audit/postgres-audit-table.js';

const RECORD: AuditRecord = {
  id: 'a1', request_id: 'r1', ts: '2026-03-01T10:00:00.000Z', key_id: 'key_x', account: 'acme', plan: 'pro', agent: 'support', route: 'chat', status: 200, outcome: 'ok',
  tokens_used: 3, latency_ms: 4, upstream_latency_ms: 2, bytes_in: 10, bytes_out: 20, client_ip: '127.0.0.1', user_id: 'u', session_id: null,
  model: 'm-1', cost_usd: 0.0125, tool_calls: ['search'], tools_withheld: null,
};
/** A JWT caller's record (docs/identity.md): the token fields come last. */
const TOKEN_RECORD: AuditRecord = { ...RECORD, auth: 'jwt', token_issuer: 'https://login.example.com/', token_sub: 'person-1', token_jti: null };

describe('audit columns', () => {
  it('has one column per field of the record the gateway writes, in its order', () => {
    // A JWT caller's MCP call has every column: the token's fields, then the MCP ones, last.
    const everything: AuditRecord = { ...TOKEN_RECORD, route: 'mcp', mcp_server: 'files', tool: 'read_file', is_error: false };
    expect(AUDIT_COLUMNS.map((c) => c.name)).toEqual(Object.keys(JSON.parse(toAuditLine(everything)) as object));
    // A key's chat record has every column but those, which it leaves null.
    const optional = ['auth', 'token_issuer', 'token_sub', 'token_jti', 'mcp_server', 'tool', 'is_error'];
    expect(AUDIT_COLUMNS.map((c) => c.name).filter((name) => !optional.includes(name))).toEqual(Object.keys(JSON.parse(toAuditLine(RECORD)) as object));
  });

  it("stores a token record's fields in their columns, and null for a key's", () => {
    const batch = decodeAuditColumns([toAuditLine(TOKEN_RECORD), toAuditLine(RECORD)]);
    const column = (name: string) => batch.values[AUDIT_COLUMNS.findIndex((c) => c.name === name)];
    expect(column('auth')).toEqual(['jwt', null]);
    expect(column('token_sub')).toEqual(['person-1', null]);
    expect(column('token_jti')).toEqual([null, null]);
    expect(toAuditLine(TOKEN_RECORD)).toBe(JSON.stringify(TOKEN_RECORD));
  });

  it('decodes lines into one array per column, skipping what is not a record with an id', () => {
    const batch = decodeAuditColumns([toAuditLine(RECORD), 'not json', '{"id":7}', '[]', toAuditLine({ ...RECORD, id: 'a2', tokens_used: null })]);
    expect(batch.rows).toBe(2);
    expect(batch.skipped).toBe(3);
    expect(batch.values[0]).toEqual(['a1', 'a2']);
    expect(batch.values[AUDIT_COLUMNS.findIndex((c) => c.name === 'tokens_used')]).toEqual([3, null]);
  });

  it('stores a value that does not fit its column as null, and text without NUL', () => {
    expect(columnValue('text', 'a\u0000b')).toBe('a\ufffdb');
    expect(columnValue('text', 5)).toBeNull();
    expect(columnValue('integer', 2 ** 31)).toBeNull();
    expect(columnValue('integer', -5)).toBe(-5);
    expect(columnValue('bigint', 2 ** 53)).toBeNull();
    expect(columnValue('bigint', 1.5)).toBeNull();
    expect(columnValue('timestamptz', '2026-03-01T10:00:00.000Z')).toBe('2026-03-01T10:00:00.000Z');
    expect(columnValue('timestamptz', '2026-13-45T99:00:00Z')).toBeNull();
    expect(columnValue('timestamptz', 'March 1st')).toBeNull();
    expect(columnValue('numeric', 0.0123)).toBe(0.0123);
    expect(columnValue('numeric', Number.NaN)).toBeNull();
    expect(columnValue('jsonb', ['search', 'x\u0000y'])).toBe('["search","x\ufffdy"]');
    expect(columnValue('jsonb', null)).toBeNull();
  });

  it('makes text well-formed: a lone surrogate (high or low) becomes U+FFFD in text, in jsonb values and in jsonb keys; pairs are kept', () => {
    expect(columnValue('text', '\ud800')).toBe('\ufffd');
    expect(columnValue('text', 'a\udc00b\ud800')).toBe('a\ufffdb\ufffd');
    expect(columnValue('text', 'emoji \ud83d\ude00')).toBe('emoji \ud83d\ude00');
    // JSON.stringify would write "\ud800" as an escape jsonb refuses (22P02); the column gets well-formed JSON instead.
    expect(columnValue('jsonb', ['\ud800', 'calculator'])).toBe('["\ufffd","calculator"]');
    expect(columnValue('jsonb', { '\udfff\u0000': { inner: '\ud800' } })).toBe('{"\ufffd\ufffd":{"inner":"\ufffd"}}');
    expect(columnValue('jsonb', ['\ud83d\ude00'])).toBe('["\ud83d\ude00"]');
  });

  it('builds the migration and the insert from the columns, quoting the table and casting jsonb back from text', () => {
    const sql = auditTableSql('usage.requests', [...AUDIT_COLUMNS.slice(0, 3), { name: 'tool_calls' as keyof AuditRecord, type: 'jsonb' }]);
    expect(sql.table).toBe('"usage"."requests"');
    expect(sql.migration[0]).toBe('CREATE TABLE IF NOT EXISTS "usage"."requests" ("id" text, "request_id" text, "ts" timestamptz NOT NULL, "tool_calls" jsonb, PRIMARY KEY ("id", "ts")) PARTITION BY RANGE ("ts")');
    expect(sql.migration).toContain('ALTER TABLE "usage"."requests" ADD COLUMN IF NOT EXISTS "tool_calls" jsonb');
    expect(sql.schemaPrefix).toBe('"usage".');
    expect(sql.bareTable).toBe('requests');
    expect(sql.migration).toContain('CREATE INDEX IF NOT EXISTS "requests_account_ts_idx" ON "usage"."requests" ("account", "ts")');
    expect(sql.insert).toBe(
      'INSERT INTO "usage"."requests" ("id", "request_id", "ts", "tool_calls") SELECT "id", "request_id", "ts", "tool_calls"::jsonb FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::text[]) AS batch("id", "request_id", "ts", "tool_calls") ON CONFLICT ("id", "ts") DO NOTHING',
    );
  });
});
