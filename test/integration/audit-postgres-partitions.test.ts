// The PostgreSQL audit table's day partitions (docs/audit.md "Partitions and retention")
// against the machine's real server, with the sink's clock injected: partitions exist ahead
// of the day they take; records keep flowing across midnight; `retention` drops whole
// partitions (and only those past it); an unpartitioned table from an older gateway is
// refused with the documented message, its records kept in the spool; the per-key 30-day
// usage question of docs/observability.md reads each partition through an index.
import { afterEach, describe, expect, it } from 'vitest';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AUDIT_COLUMNS } from '../../src/audit/audit-columns.js';
import { PostgresAuditSink } from '../../src/audit/postgres-audit-sink.js';
import { toAuditLine, type AuditRecord } from '../../src/audit/audit-record.js';
import { ManualClock, systemClock, type Clock } from '../../src/clock.js';
import { silentLogger } from '../../src/logger.js';
import { dropTable, POSTGRES_URL, sql, uniqueTable } from '../helpers/postgres.js';

const DAY_MS = 86_400_000;

function line(id: string, ts: string, extra: Partial<AuditRecord> = {}): string {
  return toAuditLine({
    id, request_id: id, ts, key_id: 'key_a', account: 'acme', plan: 'pro', agent: 'support', route: 'chat', status: 200, outcome: 'ok',
    tokens_used: 5, latency_ms: 3, upstream_latency_ms: 2, bytes_in: 10, bytes_out: 20, client_ip: '127.0.0.1', user_id: null, session_id: null, model: null, cost_usd: null, tool_calls: null, tools_withheld: null, ...extra,
  });
}

async function partitionsOf(table: string): Promise<string[]> {
  const rows = await sql<{ name: string }>('SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = $1::regclass ORDER BY 1', [`"${table}"`]);
  return rows.map((r) => r.name);
}

async function idsByPartition(table: string): Promise<Record<string, string[]>> {
  const rows = await sql<{ part: string; id: string }>(`SELECT tableoid::regclass::text AS part, id FROM "${table}" ORDER BY id`);
  const out: Record<string, string[]> = {};
  for (const { part, id } of rows) (out[part.replaceAll('"', '')] ??= []).push(id);
  return out;
}

describe('PostgreSQL audit partitions', { timeout: 180_000 }, () => {
  const tables: string[] = [];
  const cleanups: (() => Promise<void>)[] = [];

  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    for (const table of tables.splice(0)) await dropTable(table);
  });

  /** `before` runs before the sink exists (the sink starts its migration at once, in the background). */
  async function sinkFor(what: string, clock: Clock, retentionMs?: number, before?: (table: string) => Promise<void>): Promise<{ sink: PostgresAuditSink; table: string }> {
    const table = uniqueTable(what);
    tables.push(table);
    await before?.(table);
    const dir = await mkdtemp(join(tmpdir(), 'agentgw-pg-parts-'));
    const sink = new PostgresAuditSink({ url: POSTGRES_URL, table, maxConnections: 2, timeoutMs: 10_000, retentionMs, rejectedPath: join(dir, 'rejected.jsonl'), clock, logger: silentLogger });
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    cleanups.push(() => sink.close());
    return { sink, table };
  }

  it('creates the partitions of today and the next two days before their first record, and a partitioned table with (id, ts) as its key', async () => {
    const clock = new ManualClock(Date.parse('2026-05-10T12:00:00.000Z'));
    const { sink, table } = await sinkFor('ahead', clock);
    await sink.write([line('a1', '2026-05-10T11:59:00.000Z')]);
    expect(await partitionsOf(table)).toEqual([`${table}_p20260510`, `${table}_p20260511`, `${table}_p20260512`]);
    const [kind] = await sql<{ kind: string }>('SELECT relkind AS kind FROM pg_class WHERE oid = $1::regclass', [`"${table}"`]);
    expect(kind!.kind).toBe('p');
    const key = await sql<{ column: string }>(
      `SELECT a.attname AS column FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) WHERE i.indrelid = $1::regclass AND i.indisprimary ORDER BY a.attname`,
      [`"${table}"`],
    );
    expect(key.map((k) => k.column)).toEqual(['id', 'ts']);
    // Written again (a replay): still one row.
    await sink.write([line('a1', '2026-05-10T11:59:00.000Z')]);
    expect(await idsByPartition(table)).toEqual({ [`${table}_p20260510`]: ['a1'] });
  });

  it('keeps records flowing across midnight: each lands in its own day, and the day after next is made ahead', async () => {
    const clock = new ManualClock(Date.parse('2026-05-10T23:59:59.500Z'));
    const { sink, table } = await sinkFor('midnight', clock);
    await sink.write([line('before', '2026-05-10T23:59:59.400Z')]);
    clock.set(Date.parse('2026-05-11T00:00:00.300Z'));
    await sink.write([line('after', '2026-05-11T00:00:00.200Z'), line('late', '2026-05-10T23:59:59.900Z')]);
    clock.set(Date.parse('2026-05-12T00:00:01.000Z'));
    await sink.write([line('next', '2026-05-12T00:00:00.800Z')]);
    expect(await idsByPartition(table)).toEqual({
      [`${table}_p20260510`]: ['before', 'late'],
      [`${table}_p20260511`]: ['after'],
      [`${table}_p20260512`]: ['next'],
    });
    expect(await partitionsOf(table)).toEqual(['10', '11', '12', '13', '14'].map((d) => `${table}_p202605${d}`));
  });

  it('drops whole partitions past the retention, keeps the rest, and sets aside a record older than it', async () => {
    const clock = new ManualClock(Date.parse('2026-05-10T12:00:00.000Z'));
    const { sink, table } = await sinkFor('retention', clock, 3 * DAY_MS);
    await sink.write(['07', '08', '09', '10'].map((d) => line(`d${d}`, `2026-05-${d}T06:00:00.000Z`)).concat(line('too-old', '2026-05-06T23:00:00.000Z')));
    expect(Object.keys(await idsByPartition(table)).sort()).toEqual(['07', '08', '09', '10'].map((d) => `${table}_p202605${d}`));
    const rejected = (await readFile(sink.rejectedPath, 'utf8')).split('\n').filter(Boolean).map((l) => JSON.parse(l) as { code: string; record: AuditRecord });
    expect(rejected.map((r) => [r.code, r.record.id])).toEqual([['outside_partitions', 'too-old']]);

    // Two days later the horizon is 2026-05-09T12:00: the 7th and the 8th end before it and go whole; the 9th ends after it and stays.
    clock.set(Date.parse('2026-05-12T12:00:00.000Z'));
    await sink.write([line('d12', '2026-05-12T11:00:00.000Z')]);
    expect(await partitionsOf(table)).toEqual(['09', '10', '11', '12', '13', '14'].map((d) => `${table}_p202605${d}`));
    expect(Object.values(await idsByPartition(table)).flat().sort()).toEqual(['d09', 'd10', 'd12']);
  });

  it('refuses an unpartitioned table from an older gateway with the documented message, and writes nothing into it', async () => {
    const { sink, table } = await sinkFor('legacy', systemClock, undefined, async (name) => {
      await sql(`CREATE TABLE "${name}" (id text PRIMARY KEY, ts timestamptz, account text)`);
    });
    await expect(sink.write([line('x', new Date().toISOString())])).rejects.toThrow(/is not partitioned by day .*docs\/audit\.md "Migrating an unpartitioned table"/);
    expect(await sql(`SELECT id FROM "${table}"`)).toEqual([]);
  });

  it('migrates an unpartitioned table as docs/audit.md says: rename, the gateway makes the new one, the old rows copied back a day at a time', async () => {
    // The table as a gateway before partitioning made it, with two rows.
    const { sink, table } = await sinkFor('migrated', new ManualClock(Date.parse('2026-11-02T09:00:00.000Z')), undefined, async (name) => {
      const oldDefinitions = AUDIT_COLUMNS.map((c) => `"${c.name}" ${c.type}${c.name === 'id' ? ' PRIMARY KEY' : ''}`).join(', ');
      await sql(`CREATE TABLE "${name}" (${oldDefinitions})`);
      for (const column of ['ts', 'account', 'key_id', 'agent']) await sql(`CREATE INDEX "${name}_${column === 'ts' ? '' : `${column}_`}ts_idx" ON "${name}" (${column === 'ts' ? '' : `"${column}", `}ts)`);
      await sql(`INSERT INTO "${name}" (id, ts, account) VALUES ('old-1', '2026-11-01T08:00:00Z', 'acme'), ('old-2', '2026-11-01T20:00:00Z', 'acme')`);
      tables.push(`${name}_old`);
    });
    // The sink refuses it meanwhile (its start-up migration said so); the operator renames it.
    await expect(sink.write([line('refused', '2026-11-02T08:58:00.000Z')])).rejects.toThrow(/not partitioned by day/);

    const doc = await readFile(join(import.meta.dirname, '../../docs/audit.md'), 'utf8');
    const section = doc.slice(doc.indexOf('### Migrating an unpartitioned table'), doc.indexOf('### Records PostgreSQL refuses'));
    const [rename, copy] = [...section.matchAll(/```sql\n([\s\S]*?)```/g)].map((m) => m[1]!.replaceAll('agentgw_audit', table));
    await sql(rename!);
    await sink.write([line('new-1', '2026-11-02T08:59:00.000Z')]);
    await sql(copy!);
    expect(Object.values(await idsByPartition(table)).flat().sort()).toEqual(['new-1', 'old-1', 'old-2']);
    expect(await partitionsOf(table)).toContain(`${table}_p20261101`);
    expect(await sql('SELECT to_regclass($1) AS old', [`"${table}_old"`])).toEqual([{ old: null }]);
  });

  it('reads each partition of the per-key 30-day usage question through an index, and no partition outside the 30 days', async () => {
    const { sink, table } = await sinkFor('explain', systemClock);
    // 35 days of 2,500 records over 500 keys: 5 records of a key per partition, some 50 pages per partition.
    const now = Date.now();
    for (let day = 34; day >= 0; day--) {
      const lines: string[] = [];
      for (let i = 0; i < 2_500; i++) lines.push(line(`e${day}-${i}`, new Date(now - day * DAY_MS - i * 1_000).toISOString(), { key_id: `key_${i % 500}` }));
      await sink.write(lines);
    }
    await sql(`ANALYZE "${table}"`);
    const doc = await readFile(join(import.meta.dirname, '../../docs/observability.md'), 'utf8');
    const perKey = [...doc.matchAll(/```sql\n([\s\S]*?)```/g)].map((m) => m[1]!).find((q) => q.includes("interval '30 days'") && q.includes('key_id ='));
    expect(perKey).toBeDefined();
    const plan = (await sql<{ 'QUERY PLAN': string }>(`EXPLAIN ${perKey!.replaceAll('agentgw_audit', table).replace("'key_3xQ…'", "'key_7'")}`)).map((r) => r['QUERY PLAN']).join('\n');
    // A sequential scan only of the partitions made ahead for the next days: empty, nothing to read (no index could do less).
    const today = new Date(now).toISOString().slice(0, 10).replaceAll('-', '');
    const seqScanned = [...plan.matchAll(new RegExp(`Seq Scan on ${table}_p(\\d{8})`, 'g'))].map((m) => m[1]!);
    expect(plan.split('\n').filter((l) => l.includes('Seq Scan')).length).toBe(seqScanned.length);
    expect(seqScanned.filter((day) => day <= today)).toEqual([]);
    const scanned = new Set([...plan.matchAll(new RegExp(`${table}_p(\\d{8})_key_id_ts_idx`, 'g'))].map((m) => m[1]));
    // Today and the 30 days before it at most (31 partitions, 30 when the boundary falls exactly at midnight); none older.
    expect(scanned.size).toBeGreaterThanOrEqual(30);
    expect(scanned.size).toBeLessThanOrEqual(31);
  });
});
