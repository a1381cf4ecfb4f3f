// Usage reports from the rollups (docs/admin-api.md "Usage") equal the audit records' own
// totals for a known workload — JSON chats with metadata.tokens_used, streams with their
// `done` event's tokens_used, 400s and 429s — grouped by key, account and agent, with and
// across filters, in Redis mode (rollups written by the audit stream's batch script) and
// in embedded mode (day files beside the audit file). Answers are checked against both
// OpenAPI documents.
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisClient } from '../../src/redis/redis-client.js';
import { silentLogger } from '../../src/logger.js';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { OpenApiCheck } from '../helpers/openapi-check.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { totalsOfRows } from '../helpers/usage-workload.js';

const ADMIN_TOKEN = `adm-${randomUUID()}`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const admin = new OpenApiCheck('admin');
const chatDoc = new OpenApiCheck('agent-chat');

interface Record_ {
  key_id: string;
  account: string;
  agent: string;
  outcome: string;
  tokens_used: number | null;
  cost_usd: number | null;
  session_id: string | null;
  tool_calls: string[] | null;
}

interface Totals {
  requests: number;
  tokens: number;
  toolCalls: number;
  /** The records' cost_usd in whole micro-dollars, as the rollups count it. */
  costMicro: number;
  errors: Record<string, number>;
}

/** The runner answers with `n` tokens and `calls` tool calls, as the request's forwarded fields say. */
function tokenRunner(req: IncomingMessage, res: ServerResponse, seen: { body: Buffer }): void {
  const asked = JSON.parse(seen.body.toString('utf8')) as { n?: number; calls?: number };
  const n = Number(asked.n ?? 1);
  const toolCalls = Array.from({ length: Number(asked.calls ?? 0) }, (_, i) => ({ tool: `tool_${i}`, input: {}, output: {} }));
  if (req.url?.endsWith('/chat/stream')) {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('event: token\ndata: {"content":"a"}\n\n');
    res.end(`event: done\ndata: {"tokens_used":${n},"latency_ms":2}\n\n`);
    return;
  }
  const body = JSON.stringify({ response: 'ok', tool_calls: toolCalls, metadata: { model: 'm', tokens_used: n, latency_ms: 2 } });
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

let upstream: FakeUpstream;
let redis: TestRedis;

beforeAll(async () => {
  [upstream, redis] = await Promise.all([startFakeUpstream(), startRedis()]);
  upstream.handle(tokenRunner);
});

afterAll(async () => {
  await upstream?.close();
  await redis?.close();
});

function totalsOf(records: readonly Record_[], groupOf: (r: Record_) => string): Map<string, Totals> {
  const out = new Map<string, Totals>();
  for (const r of records) {
    const group = groupOf(r);
    const t = out.get(group) ?? { requests: 0, tokens: 0, toolCalls: 0, costMicro: 0, errors: {} };
    t.requests++;
    t.toolCalls += r.tool_calls?.length ?? 0;
    t.tokens += r.tokens_used ?? 0;
    if (r.cost_usd !== null) t.costMicro += Math.floor(r.cost_usd * 1_000_000 + 0.5);
    if (r.outcome !== 'ok') t.errors[r.outcome] = (t.errors[r.outcome] ?? 0) + 1;
    out.set(group, t);
  }
  return out;
}

interface Row extends Omit<Totals, 'costMicro' | 'toolCalls'> {
  cost_usd: number;
  tool_calls: number;
  group: string;
  period: string;
  latency_ms: { p50: number | null; p99: number | null };
}

describe.each(['redis', 'embedded'] as const)('usage report (%s mode)', (mode) => {
  let gw: TestGateway;
  const prefix = `usg${randomUUID().slice(0, 8)}:`;
  const stream = `${prefix}audit`;

  beforeAll(async () => {
    gw = await startTestGateway({
      agents: { support: upstream.baseUrl, sales: upstream.baseUrl },
      redisUrl: mode === 'redis' ? redis.url : undefined,
      config: {
        admin: { host: '127.0.0.1', port: 0, tokens: [{ name: 'ops', token: ADMIN_TOKEN, role: 'viewer' }] },
        plans: { roomy: { windows: [{ requests: 1000, per: '1m' }] }, tiny: { windows: [{ requests: 3, per: '1m' }] } },
        // A price whose costs are fractions of a cent: the report's cost_usd must be the records' summed exactly.
        pricing: { default: 0.0137 },
        ...(mode === 'redis' ? { redis: { prefix, command_timeout: '1s' }, keys: { store: 'redis' }, audit: { redis_stream: stream, file: undefined } } : {}),
      },
    });
  });

  afterAll(async () => {
    await gw?.close();
  });

  async function records(): Promise<Record_[]> {
    if (mode === 'embedded') {
      const text = await readFile(gw.config.audit.file!, 'utf8').catch(() => '');
      return text.split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record_);
    }
    const client = createRedisClient({ url: redis.url, prefix: '', commandTimeoutMs: 1000 }, silentLogger, 'test-reader');
    try {
      await new Promise((resolve) => client.once('ready', resolve));
      const entries = (await client.xrange(stream, '-', '+')) as [string, string[]][];
      return entries.map(([, fields]) => JSON.parse(fields[1]!) as Record_);
    } finally {
      client.disconnect();
    }
  }

  async function usagePage(query: string): Promise<{ data: Row[]; next_cursor: string | null }> {
    const from = new Date(Date.now() - 3_600_000).toISOString();
    const answer = await admin.fetch(`${gw.adminUrl}/admin/v1/usage?from=${from}&${query}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(answer.status, answer.text).toBe(200);
    return answer.body as { data: Row[]; next_cursor: string | null };
  }

  async function usage(query: string): Promise<Row[]> {
    const page = await usagePage(query);
    expect(page.next_cursor, query).toBeNull();
    return page.data;
  }

  it('equals the audit records for a known workload of JSON chats, streams, 400s and 429s', async () => {
    const k1 = await gw.createKey({ account: 'acme', plan: 'roomy', agents: ['support', 'sales'] });
    const k2 = await gw.createKey({ account: 'acme', plan: 'roomy', agents: ['support'] });
    const k3 = await gw.createKey({ account: 'globex', plan: 'tiny', agents: ['sales'] });
    let sent = 0;
    const send = async (key: string, agent: string, route: 'chat' | 'chat/stream', body: Record<string, unknown>, status: number) => {
      const answer = await chatDoc.fetch(`${gw.url}/agents/${agent}/api/v1/${route}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      expect(answer.status, answer.text).toBe(status);
      if (route === 'chat/stream' && status === 200) expect(answer.text).toContain('event: done');
      sent++;
    };
    for (let i = 1; i <= 4; i++) await send(k1.rawKey, 'support', 'chat', { message: 'hi', n: i * 10 }, 200);
    for (let i = 1; i <= 3; i++) await send(k1.rawKey, 'sales', 'chat/stream', { message: 'hi', n: i * 7 }, 200);
    await send(k1.rawKey, 'sales', 'chat', { message: 'hi', temperature: 5 }, 400);
    for (let i = 1; i <= 2; i++) await send(k2.rawKey, 'support', 'chat/stream', { message: 'hi', n: 100 + i }, 200);
    await send(k2.rawKey, 'support', 'chat', { message: '' }, 400);
    for (let i = 1; i <= 3; i++) await send(k3.rawKey, 'sales', 'chat', { message: 'hi', n: 1 }, 200);
    for (let i = 1; i <= 2; i++) await send(k3.rawKey, 'sales', 'chat', { message: 'hi', n: 1 }, 429);

    // Records reach their sink within a batch interval; rollups within a flush (1 s for files).
    let all: Record_[] = [];
    const deadline = Date.now() + 10_000;
    const mine = new Set([k1.keyId, k2.keyId, k3.keyId]);
    const byKey = () => totalsOf(all, (r) => r.key_id);
    for (;;) {
      all = (await records()).filter((r) => mine.has(r.key_id));
      if (all.length === sent) {
        // Embedded mode writes each family's files in turn within a flush: wait for all three.
        const report = totalsOfRows(await usage('group_by=key'));
        const accounts = totalsOfRows(await usage('group_by=account'));
        const agents = totalsOfRows(await usage('group_by=agent'));
        const expectedAccounts = totalsOf(all, (r) => r.account);
        const expectedAgents = totalsOf(all, (r) => r.agent);
        if (
          [...mine].every((id) => JSON.stringify(report.get(id)) === JSON.stringify(byKey().get(id))) &&
          [...expectedAccounts].every(([account, t]) => (accounts.get(account)?.requests ?? 0) >= t.requests) &&
          [...expectedAgents].every(([agent, t]) => (agents.get(agent)?.requests ?? 0) >= t.requests)
        ) {
          break;
        }
      }
      if (Date.now() > deadline) break;
      await sleep(100);
    }
    expect(all).toHaveLength(sent);
    // The stream's tokens came from `done`, the JSON chats' from metadata.
    // Cost: each record's tokens / 1000 x 0.0137 in whole micro-dollars (7 tokens: 95.9 -> 96; 1 token: 13.7 -> 14).
    expect(byKey().get(k1.keyId)).toEqual({ requests: 8, tokens: 10 + 20 + 30 + 40 + 7 + 14 + 21, toolCalls: 0, costMicro: 137 + 274 + 411 + 548 + 96 + 192 + 288, errors: { invalid_request: 1 } });
    expect(byKey().get(k3.keyId)).toEqual({ requests: 5, tokens: 3, toolCalls: 0, costMicro: 3 * 14, errors: { rate_limited: 2 } });

    const only = (m: Map<string, Totals>, groups: string[]) => new Map([...m].filter(([g]) => groups.includes(g)));
    const cases: [string, (r: Record_) => string, (r: Record_) => boolean][] = [
      ['group_by=key&granularity=day', (r) => r.key_id, () => true],
      ['group_by=key&granularity=hour', (r) => r.key_id, () => true],
      ['group_by=account', (r) => r.account, () => true],
      ['group_by=agent', (r) => r.agent, () => true],
      ['group_by=key&account=acme', (r) => r.key_id, (r) => r.account === 'acme'],
      [`group_by=key&key_id=${k1.keyId}`, (r) => r.key_id, (r) => r.key_id === k1.keyId],
      ['group_by=key&agent=sales', (r) => r.key_id, (r) => r.agent === 'sales'],
      [`group_by=agent&key_id=${k1.keyId}`, (r) => r.agent, (r) => r.key_id === k1.keyId],
      ['group_by=agent&account=acme', (r) => r.agent, (r) => r.account === 'acme'],
      ['group_by=account&agent=sales', (r) => r.account, (r) => r.agent === 'sales'],
      [`group_by=account&key_id=${k2.keyId}`, (r) => r.account, (r) => r.key_id === k2.keyId],
      ['group_by=agent&agent=support', (r) => r.agent, (r) => r.agent === 'support'],
    ];
    for (const [query, groupOf, keep] of cases) {
      const expected = totalsOf(all.filter(keep), groupOf);
      const rows = await usage(query);
      const got = only(totalsOfRows(rows), [...expected.keys()]);
      expect(got, query).toEqual(expected);
      for (const row of rows) {
        expect(row.latency_ms.p50, query).toBeGreaterThan(0);
        expect(row.latency_ms.p99!, query).toBeGreaterThanOrEqual(row.latency_ms.p50!);
      }
    }
    // Pages of one group each, followed by next_cursor, hold the whole report's rows in order.
    const whole = await usage('group_by=key&granularity=hour');
    const paged: Row[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const answer = await usagePage(`group_by=key&granularity=hour&limit=1${cursor === null ? '' : `&cursor=${cursor}`}`);
      expect(new Set(answer.data.map((row) => row.group)).size).toBeLessThanOrEqual(1);
      paged.push(...answer.data);
      cursor = answer.next_cursor;
      pages++;
    } while (cursor !== null && pages < 100);
    expect(paged).toEqual(whole);
    expect(pages).toBe(new Set(whole.map((row) => row.group)).size);
    // Hour rows are whole hours; day rows whole days.
    for (const row of await usage('group_by=agent&granularity=hour')) expect(row.period).toMatch(/T\d\d:00:00Z$/);
    for (const row of await usage('group_by=agent&granularity=day')) expect(row.period).toMatch(/T00:00:00Z$/);
  });

  it("lists a key's and an account's agent runs (sessions), each ranked by cost, tokens, tool calls and turns", async () => {
    const k1 = await gw.createKey({ account: 'initech', plan: 'roomy', agents: ['support', 'sales'] });
    const k2 = await gw.createKey({ account: 'initech', plan: 'roomy', agents: ['support'] });
    // Runs whose ids a group name must escape (a space, a percent sign, a newline) beside plain ones.
    const turns: [string, string, string | null, number, number][] = [
      // key, agent, session_id, tokens, tool calls
      [k1.rawKey, 'support', 'run-a', 100, 0],
      [k1.rawKey, 'support', 'run-a', 100, 1],
      [k1.rawKey, 'sales', 'run-a', 50, 0],
      [k1.rawKey, 'support', 'run b 50%', 10, 4],
      [k1.rawKey, 'support', 'line\nbreak', 1, 0],
      [k1.rawKey, 'support', 'line\nbreak', 1, 0],
      [k1.rawKey, 'support', 'line\nbreak', 1, 0],
      [k1.rawKey, 'support', null, 999, 9],
      [k2.rawKey, 'support', 'run-k2', 400, 2],
    ];
    for (const [key, agent, session, n, calls] of turns) {
      const answer = await chatDoc.fetch(`${gw.url}/agents/${agent}/api/v1/chat`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ message: 'hi', n, calls, ...(session === null ? {} : { context: { session_id: session } }) }),
      });
      expect(answer.status, answer.text).toBe(200);
    }
    const expectedK1 = { 'run-a': [3, 250, 1], 'run b 50%': [1, 10, 4], 'line\nbreak': [3, 3, 0] };
    // Rollups arrive within a batch interval (Redis) or a flush (files): poll until they hold every run.
    const runsOf = (rows: Row[]) => Object.fromEntries([...totalsOfRows(rows)].map(([run, t]) => [run, [t.requests, t.tokens, t.toolCalls]]).sort());
    const deadline = Date.now() + 15_000;
    let rows: Row[] = [];
    do {
      rows = await usage(`group_by=session&key_id=${k1.keyId}`);
      if (JSON.stringify(runsOf(rows)) === JSON.stringify(Object.fromEntries(Object.entries(expectedK1).sort()))) break;
      await sleep(100);
    } while (Date.now() < deadline);
    expect(runsOf(rows)).toEqual(expectedK1);
    // The account's runs span its keys; the agent filter narrows them.
    const deadline2 = Date.now() + 15_000;
    let account = new Map<string, { requests: number }>();
    while (Date.now() < deadline2) {
      account = totalsOfRows(await usage('group_by=session&account=initech'));
      if (account.get('run-k2')?.requests === 1) break;
      await sleep(100);
    }
    expect([...account.keys()].sort()).toEqual(['line\nbreak', 'run b 50%', 'run-a', 'run-k2']);
    expect(totalsOfRows(await usage(`group_by=session&key_id=${k1.keyId}&agent=sales`)).get('run-a')?.requests).toBe(1);
    // Ranked: the top run by each measure comes first.
    const top = async (sort: string) => (await usage(`group_by=session&account=initech&granularity=day&sort=${sort}`))[0]!.group;
    expect(await top('tokens')).toBe('run-k2');
    expect(await top('cost_usd')).toBe('run-k2');
    expect(await top('tool_calls')).toBe('run b 50%');
    expect(await top('requests')).toBe('line\nbreak');
    // A sorted report pages by rank: one group a page, in the ranked order, the cursor opaque.
    const ranked = [...new Set((await usage('group_by=session&account=initech&granularity=day&sort=tokens')).map((row) => row.group))];
    const paged: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await usagePage(`group_by=session&account=initech&granularity=day&sort=tokens&limit=1${cursor === null ? '' : `&cursor=${cursor}`}`);
      paged.push(...new Set(page.data.map((row) => row.group)));
      cursor = page.next_cursor;
    } while (cursor !== null && paged.length < 10);
    expect(paged).toEqual(ranked);
    expect(ranked).toEqual(['run-k2', 'run-a', 'run b 50%', 'line\nbreak']);
  });

  it('refuses malformed usage queries with 400 and param', async () => {
    for (const [query, param] of [
      ['group_by=plan', 'group_by'],
      ['granularity=week', 'granularity'],
      ['from=yesterday', 'from'],
      ['to=2020-13-45', 'to'],
      ['from=2030-01-02T00:00:00Z&to=2030-01-01T00:00:00Z', 'from'],
      ['from=2000-01-01T00:00:00Z', 'from'],
      ['group=key', 'group'],
      ['limit=0', 'limit'],
      ['limit=1001', 'limit'],
      ['cursor=%2F%2F', 'cursor'],
      // Sessions belong to a key or an account: a report of every run of every key is refused.
      ['group_by=session', 'group_by'],
      ['group_by=session&key_id=k&sort=latency', 'sort'],
      // A name-ordered report's cursor (a group) is no cursor for a ranked one.
      [`group_by=key&sort=tokens&cursor=${Buffer.from('key_x').toString('base64url')}`, 'cursor'],
    ] as const) {
      const answer = await admin.fetch(`${gw.adminUrl}/admin/v1/usage?${query}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
      expect([answer.status, (answer.body as { error: { param?: string } }).error.param], query).toEqual([400, param]);
    }
  });
});
