// The PostgreSQL audit sink (docs/audit.md "PostgreSQL") against the machine's real server:
// N requests give N rows with distinct ids and every field of the record; an outage of the
// server (a relay in front of it taken down and brought back, or a wrong port and a restart
// with the right one) loses nothing and duplicates nothing; the migration adds the columns
// an older table lacks. Each test makes its own table and drops it.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { resolve } from 'node:path';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AUDIT_COLUMNS, decodeAuditColumns } from '../../src/audit/audit-columns.js';
import { auditTableSql } from '../../src/audit/postgres-audit-table.js';
import { PostgresAuditSink } from '../../src/audit/postgres-audit-sink.js';
import { toAuditLine, type AuditRecord } from '../../src/audit/audit-record.js';
import { silentLogger } from '../../src/logger.js';
import { systemClock } from '../../src/clock.js';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { refusingPort } from '../helpers/free-port.js';
import { postChat, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { auditCount } from '../helpers/metric-counts.js';
import { dropTable, POSTGRES_URL, sql, uniqueTable } from '../helpers/postgres.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { waitFor } from '../helpers/wait.js';

const POSTGRES = new URL(POSTGRES_URL);

/** The rows as the audit record's JSON would hold them: numbers as numbers, ts as the ISO text. */
async function rowsOf(table: string): Promise<Record<string, unknown>[]> {
  const columns = AUDIT_COLUMNS.map((c) => (c.type === 'bigint' ? `"${c.name}"::float8 AS "${c.name}"` : c.type === 'timestamptz' ? `to_char("${c.name}" AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "${c.name}"` : `"${c.name}"`));
  return sql(`SELECT ${columns.join(', ')} FROM "${table}" ORDER BY ts, id`);
}

async function countOf(table: string): Promise<{ rows: number; ids: number }> {
  const [row] = await sql<{ rows: string; ids: string }>(`SELECT count(*) AS rows, count(DISTINCT id) AS ids FROM "${table}"`);
  return { rows: Number(row!.rows), ids: Number(row!.ids) };
}

async function auditFileRecords(path: string): Promise<AuditRecord[]> {
  const text = await readFile(path, 'utf8').catch(() => '');
  return text.split('\n').filter((line) => line.length > 0).map((line) => JSON.parse(line) as AuditRecord);
}

// Waits below allow for a loaded machine; the test's own deadline is longer than any of them.
describe('PostgreSQL audit sink', { timeout: 180_000 }, () => {
  let runner: FakeUpstream;
  const tables: string[] = [];
  const cleanups: (() => Promise<void>)[] = [];

  beforeAll(async () => {
    runner = await startFakeUpstream();
  });

  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    for (const table of tables.splice(0)) await dropTable(table);
  });

  afterAll(async () => {
    await runner.close();
  });

  async function gatewayFor(postgresUrl: string, table: string, audit: Record<string, unknown> = {}): Promise<{ gateway: TestGateway; key: string }> {
    const gateway = await startTestGateway({
      agents: { support: runner.baseUrl },
      // Short spool probes, so a test sees the recovery within seconds.
      config: { audit: { postgres: { url: postgresUrl, table, timeout: '5s' }, ...audit } },
    });
    cleanups.push(() => gateway.close());
    return { gateway, key: (await gateway.createKey({ account: 'acme', plan: 'pro' })).rawKey };
  }

  /** A sink of its own on the machine's PostgreSQL, its rejected-records file in a directory removed after the test. */
  async function sinkFor(table: string): Promise<PostgresAuditSink> {
    const dir = await mkdtemp(join(tmpdir(), 'agentgw-pg-sink-'));
    const sink = new PostgresAuditSink({ url: POSTGRES_URL, table, maxConnections: 2, timeoutMs: 5_000, rejectedPath: join(dir, 'rejected.jsonl'), clock: systemClock, logger: silentLogger });
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    cleanups.push(() => sink.close());
    return sink;
  }

  async function rejectedIn(sink: PostgresAuditSink): Promise<{ code: string; record: unknown }[]> {
    return (await readFile(sink.rejectedPath, 'utf8').catch(() => '')).split('\n').filter(Boolean).map((line) => JSON.parse(line) as { code: string; record: unknown });
  }

  async function send(gateway: TestGateway, key: string, count: number, offset = 0): Promise<void> {
    for (let i = 0; i < count; i++) {
      const n = offset + i;
      const path = n % 3 === 0 ? '/agents/support/api/v1/chat/stream' : '/agents/support/api/v1/chat';
      const res = await postChat(gateway.url, path, key, { message: `hello ${n}`, context: n % 2 === 0 ? { user_id: `user-${n % 5}`, session_id: `s-${n}` } : undefined });
      expect(res.status).toBe(200);
      await res.text();
    }
  }

  it('writes one row per request with distinct ids and every field of the record, into a table it creates with its indexes', async () => {
    const table = uniqueTable('rows');
    tables.push(table);
    const { gateway, key } = await gatewayFor(POSTGRES_URL, table);
    const N = 40;
    await send(gateway, key, N);
    const fileRecords = await waitFor('every record in the audit file', async () => {
      const records = await auditFileRecords(join(gateway.dir, 'audit.jsonl'));
      return records.length === N ? records : undefined;
    }, 30_000);
    await waitFor('every row in PostgreSQL', async () => (await countOf(table)).rows === N, 30_000);
    expect(await countOf(table)).toEqual({ rows: N, ids: N });
    // The same records as the file sink wrote, field for field: one column per field.
    const rows = await rowsOf(table);
    const byId = new Map(rows.map((row) => [row.id, row]));
    // A key's chat record has no token fields (docs/identity.md) and no MCP ones (docs/mcp.md): their columns hold null.
    const tokenColumns = { auth: null, token_issuer: null, token_sub: null, token_jti: null, mcp_server: null, tool: null, is_error: null };
    expect(Object.keys(rows[0]!).sort()).toEqual([...Object.keys(fileRecords[0]!), ...Object.keys(tokenColumns)].sort());
    for (const record of fileRecords) expect(byId.get(record.id)).toEqual({ ...record, ...tokenColumns });
    expect(fileRecords.some((r) => r.route === 'chat/stream') && fileRecords.some((r) => r.user_id !== null && r.session_id !== null)).toBe(true);
    const indexes = await sql<{ indexname: string }>('SELECT indexname FROM pg_indexes WHERE tablename = $1 ORDER BY indexname', [table]);
    expect(indexes.map((i) => i.indexname)).toEqual([`${table}_account_ts_idx`, `${table}_agent_ts_idx`, `${table}_key_id_ts_idx`, `${table}_pkey`, `${table}_ts_idx`]);
  });

  it('loses nothing and duplicates nothing when PostgreSQL goes away mid-run and comes back', async () => {
    const table = uniqueTable('outage');
    tables.push(table);
    const proxy: TcpProxy = await startTcpProxy(POSTGRES.hostname, Number(POSTGRES.port || 5432));
    cleanups.push(() => proxy.close());
    const throughProxy = new URL(POSTGRES_URL);
    throughProxy.port = String(proxy.port);
    const { gateway, key } = await gatewayFor(throughProxy.href, table);
    await send(gateway, key, 10);
    await waitFor('the first rows', async () => (await countOf(table).catch(() => ({ rows: 0 }))).rows === 10, 30_000);

    const spooledBefore = await auditCount('postgres', 'spooled');
    await proxy.down();
    await send(gateway, key, 25, 10);
    await waitFor('records spooled while PostgreSQL is away', async () => (await auditCount('postgres', 'spooled')) > spooledBefore, 30_000);
    expect((await countOf(table)).rows).toBe(10);

    await proxy.up();
    await send(gateway, key, 5, 35);
    await waitFor('every row once PostgreSQL is back', async () => (await countOf(table)).rows >= 40, 60_000);
    const fileIds = (await auditFileRecords(join(gateway.dir, 'audit.jsonl'))).map((r) => r.id).sort();
    expect(fileIds).toHaveLength(40);
    const rowIds = (await sql<{ id: string }>(`SELECT id FROM "${table}" ORDER BY id`)).map((r) => r.id);
    expect(rowIds).toEqual(fileIds);
    // The server being away is never a refusal of the data: nothing was set aside.
    expect(await readFile(join(gateway.dir, 'audit-spool.postgres.rejected.jsonl'), 'utf8').catch(() => '')).toBe('');
  });

  it('keeps records spooled while the URL is wrong, and writes each once after a restart with the right one', async () => {
    const table = uniqueTable('restart');
    tables.push(table);
    const dir = await mkdtemp(join(tmpdir(), 'agentgw-pg-restart-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const shared = { file: join(dir, 'audit.jsonl'), spool: join(dir, 'audit-spool.jsonl') };
    const wrong = new URL(POSTGRES_URL);
    wrong.port = String(await refusingPort());
    const spooledBefore = await auditCount('postgres', 'spooled');
    const first = await gatewayFor(wrong.href, table, shared);
    await send(first.gateway, first.key, 15);
    await waitFor('records spooled for the unreachable server', async () => (await auditCount('postgres', 'spooled')) - spooledBefore === 15, 60_000);
    await first.gateway.close();
    // On disk for the next start: the spool, or the part a replay attempt had taken aside.
    const spooled = async (suffix: string) => (await readFile(join(dir, `audit-spool.postgres.jsonl${suffix}`), 'utf8').catch(() => '')).split('\n').filter(Boolean).length;
    expect((await spooled('')) + (await spooled('.replaying'))).toBe(15);
    cleanups.splice(cleanups.indexOf(cleanups.at(-1)!), 1);

    const second = await gatewayFor(POSTGRES_URL, table, shared);
    await send(second.gateway, second.key, 5, 15);
    await waitFor('the spooled records and the new ones', async () => (await countOf(table).catch(() => ({ rows: 0 }))).rows >= 20, 60_000);
    expect(await countOf(table)).toEqual({ rows: 20, ids: 20 });
    const fileIds = (await auditFileRecords(shared.file)).map((r) => r.id).sort();
    expect((await sql<{ id: string }>(`SELECT id FROM "${table}" ORDER BY id`)).map((r) => r.id)).toEqual(fileIds);
  });

  it('adds the columns an older table lacks (the migration), then writes into it', async () => {
    const table = uniqueTable('migrate');
    tables.push(table);
    await sql(`CREATE TABLE "${table}" (id text, ts timestamptz NOT NULL, account text, PRIMARY KEY (id, ts)) PARTITION BY RANGE (ts)`);
    const { gateway, key } = await gatewayFor(POSTGRES_URL, table);
    await send(gateway, key, 3);
    await waitFor('rows in the migrated table', async () => (await countOf(table)).rows === 3, 30_000);
    const columns = await sql<{ column_name: string }>('SELECT column_name FROM information_schema.columns WHERE table_name = $1', [table]);
    expect(columns.map((c) => c.column_name).sort()).toEqual(AUDIT_COLUMNS.map((c) => c.name).sort());
    expect((await rowsOf(table)).every((row) => row.key_id !== null && row.status === 200)).toBe(true);
  });

  it('writes a batch given twice, or a record twice in one batch, once; and stores hostile values without refusing the batch', async () => {
    const table = uniqueTable('idempotent');
    tables.push(table);
    const sink = await sinkFor(table);
    const record = (id: string, extra: Partial<AuditRecord> = {}): string =>
      toAuditLine({
        id, request_id: id, ts: '2026-03-01T10:00:00.000Z', key_id: 'key_a', account: 'acme', plan: 'pro', agent: 'support', route: 'chat', status: 200, outcome: 'ok',
        tokens_used: 5, latency_ms: 3, upstream_latency_ms: 2, bytes_in: 10, bytes_out: 20, client_ip: '127.0.0.1', user_id: null, session_id: null, model: null, cost_usd: null, tool_calls: null, tools_withheld: null, ...extra,
      });
    const batch = [record('r1'), record('r2'), record('r2')];
    await sink.write(batch);
    await sink.write(batch);
    expect(await countOf(table)).toEqual({ rows: 2, ids: 2 });
    // NUL in a client's user_id (PostgreSQL text cannot hold it), a status out of range, a line that is not a record;
    // a bad timestamp (no day partition can take it): that record is set aside, the others written.
    await sink.write([record('r3', { user_id: 'a\u0000b', status: 2 ** 40 }), '{"not":"a record"}', record('r4', { ts: 'yesterday' })]);
    const [row] = await sql<{ user_id: string; status: number | null }>(`SELECT user_id, status FROM "${table}" WHERE id = 'r3'`);
    expect(row).toEqual({ user_id: 'a\ufffdb', status: null });
    expect((await countOf(table)).rows).toBe(3);
    const rejected = await rejectedIn(sink);
    expect(rejected.map((r) => [r.code, (r.record as AuditRecord).id])).toEqual([['outside_partitions', 'r4']]);
  });

  it('splits a batch the server refuses for its data until the refused records are alone: the rest written, those set aside with their SQLSTATE', async () => {
    const table = uniqueTable('bisect');
    tables.push(table);
    for (const statement of auditTableSql(table).migration) await sql(statement);
    await sql(`ALTER TABLE "${table}" ADD CONSTRAINT "${table}_no_blocked" CHECK (account <> 'blocked')`);
    const sink = await sinkFor(table);
    const blocked = new Set([0, 13, 14, 50, 77, 98, 99]);
    const now = new Date().toISOString();
    const lines = Array.from({ length: 100 }, (_, i) =>
      toAuditLine({
        id: `b${i}`, request_id: `b${i}`, ts: now, key_id: 'key_a', account: blocked.has(i) ? 'blocked' : 'acme', plan: 'pro', agent: 'support', route: 'chat', status: 200, outcome: 'ok',
        tokens_used: 1, latency_ms: 1, upstream_latency_ms: 1, bytes_in: 1, bytes_out: 1, client_ip: '127.0.0.1', user_id: null, session_id: null, model: null, cost_usd: null, tool_calls: null, tools_withheld: null,
      }),
    );
    await sink.write(lines);
    expect(await countOf(table)).toEqual({ rows: 93, ids: 93 });
    const rejected = await rejectedIn(sink);
    expect(rejected.map((r) => [r.code, (r.record as AuditRecord).id])).toEqual([...blocked].map((i) => ['23514', `b${i}`]));
    // Written again (a replay): nothing added, the refused ones set aside again (the file is the operator's to resolve).
    await sink.write(lines);
    expect(await countOf(table)).toEqual({ rows: 93, ids: 93 });
    expect(await rejectedIn(sink)).toHaveLength(14);
  });

  it('adds the answer facts to a table made before them (model, cost_usd numeric, tool_calls and tools_withheld jsonb) and inserts them', async () => {
    const table = uniqueTable('newfields');
    tables.push(table);
    await sql(`CREATE TABLE "${table}" (id text, ts timestamptz NOT NULL, PRIMARY KEY (id, ts)) PARTITION BY RANGE (ts)`);
    await sql(`CREATE TABLE "${table}_p20260301" PARTITION OF "${table}" FOR VALUES FROM ('2026-03-01T00:00:00Z') TO ('2026-03-02T00:00:00Z')`);
    const statements = auditTableSql(table, AUDIT_COLUMNS);
    for (const statement of statements.migration) await sql(statement);
    // Twice: the migration is safe to run at every start.
    for (const statement of statements.migration) await sql(statement);
    const line = toAuditLine({
      id: 'n1', request_id: 'n1', ts: '2026-03-01T10:00:00.000Z', key_id: 'key_a', account: 'acme', plan: 'pro', agent: 'support', route: 'chat', status: 200, outcome: 'ok',
      tokens_used: 5, latency_ms: 3, upstream_latency_ms: 2, bytes_in: 10, bytes_out: 20, client_ip: '127.0.0.1', user_id: null, session_id: null,
      model: 'big-model', cost_usd: 0.0123, tool_calls: ['search', 'calculator'], tools_withheld: ['web_search'],
    });
    await sql(statements.insert, decodeAuditColumns([line]).values);
    const [row] = await sql<{ model: string; cost_usd: string; tool_calls: unknown; first_tool: string; tools_withheld: unknown }>(
      `SELECT model, cost_usd, tool_calls, tool_calls->>0 AS first_tool, tools_withheld FROM "${table}"`,
    );
    expect(row).toEqual({ model: 'big-model', cost_usd: '0.0123', tool_calls: ['search', 'calculator'], first_tool: 'search', tools_withheld: ['web_search'] });
  });

  it('runs each usage query of docs/observability.md against a table the sink filled', async () => {
    const table = uniqueTable('docsql');
    tables.push(table);
    const sink = await sinkFor(table);
    const now = new Date().toISOString();
    const lines = ['ok', 'ok', 'upstream_error'].map((outcome, i) =>
      toAuditLine({
        id: `d${i}`, request_id: `d${i}`, ts: now, key_id: 'key_3xQ…', account: 'acme', plan: 'pro', agent: 'support', route: 'chat', status: outcome === 'ok' ? 200 : 503,
        outcome: outcome as AuditRecord['outcome'], tokens_used: 10 * (i + 1), latency_ms: 3, upstream_latency_ms: 2, bytes_in: 10, bytes_out: 20, client_ip: '127.0.0.1', user_id: `u${i % 2}`, session_id: null, model: null, cost_usd: null, tool_calls: null, tools_withheld: null,
      }),
    );
    // And one of the key in March 2026, outside every other query's period (this test runs later than that).
    lines.push(toAuditLine({ ...(JSON.parse(lines[0]!) as AuditRecord), id: 'march', request_id: 'march', ts: '2026-03-15T10:00:00.000Z' }));
    await sink.write(lines);
    const doc = await readFile(resolve(import.meta.dirname, '../../docs/observability.md'), 'utf8');
    const queries = [...doc.matchAll(/```sql\n([\s\S]*?)```/g)].map((match) => match[1]!.replaceAll('agentgw_audit', table));
    expect(queries).toHaveLength(5);
    const [perMonth, topUsers, errorRate, perDay, oneKey] = await Promise.all(queries.map((query) => sql(query)));
    expect(perMonth).toEqual([expect.objectContaining({ account: 'acme', requests: '3', tokens: '60' })]);
    expect(topUsers).toEqual([expect.objectContaining({ user_id: 'u0', tokens: '40' }), expect.objectContaining({ user_id: 'u1', tokens: '20' })]);
    expect(errorRate).toEqual([expect.objectContaining({ agent: 'support', requests: '3', error_rate: '0.3333' })]);
    expect(perDay).toEqual([expect.objectContaining({ requests: '3', tokens: '60' })]);
    expect(oneKey).toEqual([expect.objectContaining({ request_id: 'march', status: 200, outcome: 'ok' })]);
  });
});
