// The PostgreSQL audit table at volume (docs/audit.md "Partitions and retention", issue 49):
// insert throughput through the built gateway's own sink (dist/audit/postgres-audit-sink.js:
// the same decoder, day partitions and INSERT … unnest statement, one batch at a time as the
// sink channel writes them), then the table filled to --rows records spread over --days days
// (server-side, generate_series: the fill is not what is measured), ANALYZE, and the per-key
// 30-day usage question of docs/observability.md timed --runs times, a random key each run
// (median and max), with the plan's scans counted. Targets (issue 49): the query under 200 ms
// at 10,000,000 rows; inserts at least 20,000 records a second. A measurement, not a test:
// it prints figures and verdicts and fails only when it cannot run.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { median } from '../lib/stats.mjs';

export const USAGE = `node bench/run.mjs audit-pg [--rows 10000000] [--insert-rows 200000] [--days 90] [--keys 10000] [--batch 256] [--runs 20] [--url URL] [--keep]

  Build first (npm run build): inserts go through dist/audit/postgres-audit-sink.js.
  --rows N         records in the table when the query is timed (default 10,000,000)
  --insert-rows N  of those, records written through the sink and timed (default 200,000)
  --days N         days the records span, ending now: one partition each (default 90)
  --keys N         distinct key_id values (default 10,000)
  --batch N        records per sink batch (default 256, audit.batch_size's default)
  --runs N         timed runs of the per-key 30-day query, after one warm-up (default 20)
  --url URL        the PostgreSQL to use (default $AGENTGW_BENCH_POSTGRES_URL, else
                   postgres://postgres@127.0.0.1:5432/test); a table of its own, dropped after
  --keep           keep the table (its name is printed)
`;

const DAY_MS = 86_400_000;
const QUERY_TARGET_MS = 200;
const INSERT_TARGET_PER_S = 20_000;
const FILL_CHUNK = 500_000;

export async function run(argv) {
  const { values } = parseArgs({
    args: argv,
    options: {
      rows: { type: 'string', default: '10000000' },
      'insert-rows': { type: 'string', default: '200000' },
      days: { type: 'string', default: '90' },
      keys: { type: 'string', default: '10000' },
      batch: { type: 'string', default: '256' },
      runs: { type: 'string', default: '20' },
      url: { type: 'string', default: process.env.AGENTGW_BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test' },
      keep: { type: 'boolean', default: false },
    },
  });
  const ROWS = Number(values.rows);
  const INSERT_ROWS = Math.min(Number(values['insert-rows']), ROWS);
  const DAYS = Number(values.days);
  const KEYS = Number(values.keys);
  const BATCH = Number(values.batch);
  const RUNS = Number(values.runs);
  const log = (line) => process.stdout.write(`${line}\n`);

  const dist = (path) => new URL(`../../dist/${path}`, import.meta.url).href;
  const { PostgresAuditSink } = await import(dist('audit/postgres-audit-sink.js'));
  const { toAuditLine } = await import(dist('audit/audit-record.js'));
  const silent = { error() {}, warn() {}, info() {}, debug() {}, child() { return silent; } };

  const table = `agentgw_bench_audit_${randomBytes(4).toString('hex')}`;
  const tmpDir = mkdtempSync(join(tmpdir(), 'agentgw-audit-pg-bench-'));
  const client = new pg.Client({ connectionString: values.url, application_name: 'agentgw bench audit-pg' });
  await client.connect();
  const sink = new PostgresAuditSink({ url: values.url, table, maxConnections: 2, timeoutMs: 60_000, rejectedPath: join(tmpDir, 'rejected.jsonl'), clock: { now: () => Date.now() }, logger: silent });
  const endMs = Date.now();
  const startMs = endMs - DAYS * DAY_MS;
  // Record n of ROWS sits at startMs + n·step: every day holds ROWS/DAYS records, the newest now.
  const stepMs = (DAYS * DAY_MS) / ROWS;
  const keyOf = (n) => `key_${String(n % KEYS).padStart(16, '0')}`;
  const OUTCOMES = ['ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'rate_limited', 'upstream_error'];
  log(`audit-pg: table ${table}, ${ROWS.toLocaleString('en')} rows over ${DAYS} days, ${KEYS.toLocaleString('en')} keys; ${INSERT_ROWS.toLocaleString('en')} written through the sink in batches of ${BATCH}`);
  try {
    // 1. Inserts through the sink, timed: the records spaced evenly among the ROWS (so every day's partition is made by the sink itself).
    // Record n = i·every for the sink; the fill below writes every other n, so the table holds ROWS in all.
    const every = Math.max(1, Math.floor(ROWS / INSERT_ROWS));
    const lines = [];
    for (let i = 0; i < INSERT_ROWS; i++) {
      const n = i * every;
      lines.push(
        toAuditLine({
          id: `s${n}`, request_id: `s${n}`, ts: new Date(startMs + n * stepMs).toISOString(), key_id: keyOf(n), account: `account-${n % 100}`, plan: 'pro', agent: 'support', route: n % 3 === 0 ? 'chat/stream' : 'chat',
          status: 200, outcome: OUTCOMES[n % OUTCOMES.length], tokens_used: 100 + (n % 900), latency_ms: 40, upstream_latency_ms: 35, bytes_in: 120, bytes_out: 900, client_ip: '10.0.0.1',
          user_id: `user-${n % 5000}`, session_id: null, model: 'big-model', cost_usd: 0.0012, tool_calls: n % 4 === 0 ? ['search'] : null, tools_withheld: null,
        }),
      );
    }
    // Outside the timing: the table, and each day's partition (a gateway makes today's days ahead, never while records wait).
    const firstOfEachDay = lines.filter((line, i) => i === 0 || JSON.parse(line).ts.slice(0, 10) !== JSON.parse(lines[i - 1]).ts.slice(0, 10));
    await sink.write(firstOfEachDay);
    const insertStart = performance.now();
    for (let i = 0; i < lines.length; i += BATCH) await sink.write(lines.slice(i, i + BATCH));
    const insertS = (performance.now() - insertStart) / 1000;
    const insertPerS = Math.round(INSERT_ROWS / insertS);
    log(`  inserts: ${INSERT_ROWS.toLocaleString('en')} records in ${insertS.toFixed(2)} s = ${insertPerS.toLocaleString('en')} records/s`);

    // 2. The rest of the rows, server-side (partitions exist: the sink made one per day above).
    const fillStart = performance.now();
    const names = '"id", "request_id", "ts", "key_id", "account", "plan", "agent", "route", "status", "outcome", "tokens_used", "latency_ms", "upstream_latency_ms", "bytes_in", "bytes_out", "client_ip", "user_id", "session_id", "model", "cost_usd", "tool_calls", "tools_withheld"';
    for (let from = 0; from < ROWS; from += FILL_CHUNK) {
      const to = Math.min(from + FILL_CHUNK, ROWS) - 1;
      await client.query(
        `INSERT INTO "${table}" (${names})
         SELECT 'f' || g, 'f' || g, to_timestamp(($1::float8 + g * $2::float8) / 1000), 'key_' || lpad((g % $3)::text, 16, '0'), 'account-' || (g % 100), 'pro', 'support',
                CASE WHEN g % 3 = 0 THEN 'chat/stream' ELSE 'chat' END, 200, CASE WHEN g % 10 = 8 THEN 'rate_limited' WHEN g % 10 = 9 THEN 'upstream_error' ELSE 'ok' END,
                100 + g % 900, 40, 35, 120, 900, '10.0.0.1', 'user-' || (g % 5000), NULL, 'big-model', 0.0012, CASE WHEN g % 4 = 0 THEN '["search"]'::jsonb END, NULL
         FROM generate_series($4::bigint, $5::bigint) AS g
         WHERE g % $6::bigint <> 0`,
        [startMs, stepMs, KEYS, from, to, every],
      );
      process.stdout.write(`\r  fill: ${(to + 1).toLocaleString('en')} / ${ROWS.toLocaleString('en')}`);
    }
    await client.query(`ANALYZE "${table}"`);
    const [{ count }] = (await client.query(`SELECT count(*)::bigint AS count FROM "${table}"`)).rows;
    log(`\n  filled to ${Number(count).toLocaleString('en')} rows in ${((performance.now() - fillStart) / 1000).toFixed(1)} s (not measured), analyzed`);

    // 3. The per-key 30-day question, as docs/observability.md writes it.
    const doc = readFileSync(new URL('../../docs/observability.md', import.meta.url), 'utf8');
    const query = [...doc.matchAll(/```sql\n([\s\S]*?)```/g)].map((m) => m[1]).find((q) => q.includes("interval '30 days'") && q.includes('key_id ='));
    if (!query) throw new Error('docs/observability.md has no per-key 30-day query');
    const perKey = query.replaceAll('agentgw_audit', `"${table}"`).replace("'key_3xQ…'", '$1');
    const plan = (await client.query(`EXPLAIN ${perKey}`, [keyOf(7)])).rows.map((r) => r['QUERY PLAN']).join('\n');
    const indexScans = (plan.match(/Index (Only )?Scan|Bitmap Index Scan/g) ?? []).length;
    const seqScans = (plan.match(/Seq Scan/g) ?? []).length;
    await client.query(perKey, [keyOf(1)]); // warm-up
    const times = [];
    let rowsRead = 0;
    for (let i = 0; i < RUNS; i++) {
      const key = keyOf(Math.floor(Math.random() * KEYS));
      const start = performance.now();
      const result = await client.query(perKey, [key]);
      times.push(performance.now() - start);
      rowsRead = result.rows.reduce((sum, row) => sum + Number(row.requests), 0);
    }
    const p50 = median(times);
    const max = Math.max(...times);
    log(`  per-key 30-day query: median ${p50.toFixed(1)} ms, max ${max.toFixed(1)} ms over ${RUNS} runs (a key's 30 days: ~${rowsRead} records); plan: ${indexScans} index scans, ${seqScans} seq scans (the empty partitions made ahead)`);
    log('');
    log(`  target: per-key 30-day query under ${QUERY_TARGET_MS} ms at ${ROWS.toLocaleString('en')} rows: ${p50 < QUERY_TARGET_MS ? 'met' : 'NOT met'} (median ${p50.toFixed(1)} ms)${ROWS < 10_000_000 ? ' — below 10,000,000 rows: a smoke run, not the target' : ''}`);
    log(`  target: inserts at least ${INSERT_TARGET_PER_S.toLocaleString('en')} records/s: ${insertPerS >= INSERT_TARGET_PER_S ? 'met' : 'NOT met'} (${insertPerS.toLocaleString('en')}/s)`);
    log(JSON.stringify({ measurement: 'audit-pg', rows: Number(count), days: DAYS, keys: KEYS, batch: BATCH, insertRows: INSERT_ROWS, insertPerS, queryMedianMs: Number(p50.toFixed(2)), queryMaxMs: Number(max.toFixed(2)), runs: RUNS, indexScans, seqScans }));
  } finally {
    await sink.close();
    if (values.keep) log(`  kept table ${table}`);
    else await client.query(`DROP TABLE IF EXISTS "${table}"`);
    await client.end();
    rmSync(tmpDir, { recursive: true, force: true });
  }
}
