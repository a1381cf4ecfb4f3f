// Finding H3-02 (docs/reliability.md): with audit.postgres on, one record PostgreSQL refuses
// must never hold the records of everyone else. Against the machine's real server and real
// gateways, each test across a restart:
//   - a runner naming a tool "\ud800" (a lone surrogate; jsonb refuses it, 22P02) in a /chat
//     answer and in a stream's tool_call event: stored well-formed, and the other tenants'
//     records behind it reach the table, from the spool of an earlier run and directly;
//   - a record the server still refuses for its data (here a CHECK constraint an operator
//     added, 23514): set aside in the rejected file, counted, logged at warn without the
//     record; the records behind it flow; the file replays as docs/audit.md says.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { appendFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { auditTableSql } from '../../src/audit/postgres-audit-table.js';
import { metrics } from '../../src/metrics/metrics.js';
import { startFakeUpstream, defaultHandler, type FakeUpstream } from '../helpers/fake-upstream.js';
import { refusingPort } from '../helpers/free-port.js';
import { postChat, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { auditCount } from '../helpers/metric-counts.js';
import { dropTable, POSTGRES_URL, sql, uniqueTable } from '../helpers/postgres.js';
import { waitFor } from '../helpers/wait.js';

/** A lone high surrogate as a JSON escape: what a hostile runner sends. */
const LONE_SURROGATE_JSON = '"\\ud800"';

async function setAsideCount(code: string): Promise<number> {
  return (await metrics.auditSetAside.get()).values.find((v) => v.labels.sink === 'postgres' && v.labels.code === code)?.value ?? 0;
}

async function rowsByAccount(table: string): Promise<Record<string, number>> {
  const rows = await sql<{ account: string; n: string }>(`SELECT account, count(*) AS n FROM "${table}" GROUP BY account`).catch(() => []);
  return Object.fromEntries(rows.map((r) => [r.account, Number(r.n)]));
}

describe('H3-02: records PostgreSQL refuses do not hold the others', { timeout: 240_000 }, () => {
  let runner: FakeUpstream;
  const tables: string[] = [];
  const cleanups: (() => Promise<void>)[] = [];

  beforeAll(async () => {
    // A message containing "poison" gets the lone surrogate as a tool name, on /chat and on the stream.
    runner = await startFakeUpstream(async (req, res, seen) => {
      if (!seen.body.toString('utf8').includes('poison')) return defaultHandler(req, res, seen);
      if (req.url?.endsWith('/chat/stream')) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(`event: tool_call\ndata: {"tool":${LONE_SURROGATE_JSON}}\n\n`);
        res.end('event: done\ndata: {"tokens_used":1,"latency_ms":1}\n\n');
        return;
      }
      const body = `{"response":"ok","tool_calls":[{"tool":${LONE_SURROGATE_JSON}}],"metadata":{"tokens_used":1}}`;
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    });
  });

  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    for (const table of tables.splice(0)) await dropTable(table);
  });

  afterAll(async () => {
    await runner.close();
  });

  async function sharedDir(): Promise<{ file: string; spool: string; dir: string }> {
    const dir = await mkdtemp(join(tmpdir(), 'agentgw-pg-refused-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    return { dir, file: join(dir, 'audit.jsonl'), spool: join(dir, 'audit-spool.jsonl') };
  }

  async function gatewayFor(url: string, table: string, shared: { file: string; spool: string }): Promise<TestGateway> {
    const gateway = await startTestGateway({ agents: { support: runner.baseUrl }, config: { audit: { postgres: { url, table, timeout: '5s' }, file: shared.file, spool: shared.spool } } });
    cleanups.push(() => gateway.close());
    return gateway;
  }

  async function ask(gateway: TestGateway, key: string, message: string, stream = false): Promise<void> {
    const res = await postChat(gateway.url, `/agents/support/api/v1/chat${stream ? '/stream' : ''}`, key, { message });
    expect(res.status).toBe(200);
    await res.text();
  }

  it('a tool named "\\ud800" in a /chat answer and in a stream tool_call event: the other tenants\' records reach the table, from the spool of an earlier run and directly', async () => {
    const table = uniqueTable('surrogate');
    tables.push(table);
    const shared = await sharedDir();

    // An earlier run, the server unreachable: the poisoned records go to the spool first, the victims' behind them.
    const wrong = new URL(POSTGRES_URL);
    wrong.port = String(await refusingPort());
    const spooledBefore = await auditCount('postgres', 'spooled');
    const first = await gatewayFor(wrong.href, table, shared);
    const mallory = (await first.createKey({ account: 'mallory' })).rawKey;
    const acme = (await first.createKey({ account: 'acme' })).rawKey;
    await ask(first, mallory, 'poison json');
    await ask(first, mallory, 'poison stream', true);
    for (let i = 0; i < 3; i++) await ask(first, acme, `hello ${i}`, i === 1);
    await waitFor('five records spooled', async () => (await auditCount('postgres', 'spooled')) - spooledBefore >= 5, 60_000);
    await first.close();
    cleanups.splice(cleanups.length - 1, 1);

    // The restart, the server reachable: the spool replays (poison first), then new records, poison among them, flow directly.
    const second = await gatewayFor(POSTGRES_URL, table, shared);
    const mallory2 = (await second.createKey({ account: 'mallory' })).rawKey;
    const acme2 = (await second.createKey({ account: 'acme' })).rawKey;
    await waitFor('the spooled records in the table', async () => (await rowsByAccount(table)).acme === 3, 60_000);
    await ask(second, mallory2, 'poison json again');
    await ask(second, acme2, 'after the poison');
    await ask(second, acme2, 'after the poison, streamed', true);
    await waitFor('every record of both runs in the table', async () => {
      const counts = await rowsByAccount(table);
      return counts.acme === 5 && counts.mallory === 3;
    }, 60_000);
    // Stored well-formed (U+FFFD), once each, nothing set aside.
    const poisoned = await sql<{ tool_calls: string[] }>(`SELECT tool_calls FROM "${table}" WHERE account = 'mallory'`);
    expect(poisoned.map((r) => r.tool_calls)).toEqual([['\ufffd'], ['\ufffd'], ['\ufffd']]);
    const [{ ids }] = (await sql<{ ids: string }>(`SELECT count(DISTINCT id) AS ids FROM "${table}"`)) as [{ ids: string }];
    expect(Number(ids)).toBe(8);
    expect(await readFile(join(shared.dir, 'audit-spool.postgres.rejected.jsonl'), 'utf8').catch(() => '')).toBe('');
  });

  it('a record the server refuses for its data is set aside, counted and logged at warn; the records behind it flow; the rejected file replays as documented', async () => {
    const table = uniqueTable('refused');
    tables.push(table);
    const shared = await sharedDir();
    const rejectedPath = join(shared.dir, 'audit-spool.postgres.rejected.jsonl');
    // The operator's own rule on the table: no row of account "blocked" (23514 check_violation, a data refusal).
    for (const statement of auditTableSql(table).migration) await sql(statement);
    await sql(`ALTER TABLE "${table}" ADD CONSTRAINT "${table}_no_blocked" CHECK (account <> 'blocked')`);
    // An earlier run left a spool: a blocked record first, an acme one behind it.
    const spooled = (id: string, account: string): string => JSON.stringify({ id, request_id: id, ts: new Date().toISOString(), key_id: `key_${account}`, account, plan: 'pro', agent: 'support', route: 'chat', status: 200, outcome: 'ok', tokens_used: 1 });
    await writeFile(join(shared.dir, 'audit-spool.postgres.jsonl'), `${spooled('old-blocked', 'blocked')}\n${spooled('old-acme', 'acme')}\n`);
    const setAsideBefore = await setAsideCount('23514');

    const first = await gatewayFor(POSTGRES_URL, table, shared);
    const blocked = (await first.createKey({ account: 'blocked' })).rawKey;
    const acme = (await first.createKey({ account: 'acme' })).rawKey;
    await ask(first, blocked, 'hello');
    await ask(first, acme, 'hello');
    await ask(first, acme, 'hello', true);
    await waitFor('the acme records, spooled and new, in the table', async () => (await rowsByAccount(table)).acme === 3, 60_000);
    await waitFor('both blocked records set aside', async () => (await setAsideCount('23514')) - setAsideBefore === 2, 30_000);
    expect((await rowsByAccount(table)).blocked).toBeUndefined();
    const rejected = (await readFile(rejectedPath, 'utf8')).split('\n').filter(Boolean).map((l) => JSON.parse(l) as { code: string; table: string; reason: string; record: { id: string; account: string } });
    expect(rejected.map((r) => [r.code, r.table, r.record.account])).toEqual([['23514', table, 'blocked'], ['23514', table, 'blocked']]);
    expect(rejected[0]!.record.id).toBe('old-blocked');
    expect(rejected[0]!.reason).toMatch(/check constraint/);
    const warnings = first.logs.map((l) => JSON.parse(l) as { level: number; msg: string; ids?: string[] }).filter((l) => l.msg.includes('set aside'));
    expect(warnings.length).toBeGreaterThan(0);
    expect(warnings.every((w) => w.level === 40 && w.ids !== undefined)).toBe(true);
    // The log names the records, never carries them, nor the URL.
    expect(first.logs.join('').includes('postgres://')).toBe(false);
    await first.close();
    cleanups.splice(cleanups.length - 1, 1);

    // The documented replay: the rule lifted, the gateway stopped, `.record` of each line back into the spool.
    await sql(`ALTER TABLE "${table}" DROP CONSTRAINT "${table}_no_blocked"`);
    const records = (await readFile(rejectedPath, 'utf8')).split('\n').filter(Boolean).map((l) => `${JSON.stringify((JSON.parse(l) as { record: unknown }).record)}\n`);
    await appendFile(join(shared.dir, 'audit-spool.postgres.jsonl'), records.join(''));
    await rm(rejectedPath);
    const second = await gatewayFor(POSTGRES_URL, table, shared);
    await waitFor('the replayed records in the table', async () => (await rowsByAccount(table)).blocked === 2, 60_000);
    expect(await rowsByAccount(table)).toEqual({ acme: 3, blocked: 2 });
    await second.close();
    cleanups.splice(cleanups.length - 1, 1);
  });
});
