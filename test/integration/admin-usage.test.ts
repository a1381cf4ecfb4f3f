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
}

interface Totals {
  requests: number;
  tokens: number;
  /** The records' cost_usd in whole micro-dollars, as the rollups count it. */
  costMicro: number;
  errors: Record<string, number>;
}

/** The runner answers with `n` tokens, as the request's forwarded `n` field says. */
function tokenRunner(req: IncomingMessage, res: ServerResponse, seen: { body: Buffer }): void {
  const n = Number((JSON.parse(seen.body.toString('utf8')) as { n?: number }).n ?? 1);
  if (req.url?.endsWith('/chat/stream')) {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('event: token\ndata: {"content":"a"}\n\n');
    res.end(`event: done\ndata: {"tokens_used":${n},"latency_ms":2}\n\n`);
    return;
  }
  const body = JSON.stringify({ response: 'ok', tool_calls: [], metadata: { model: 'm', tokens_used: n, latency_ms: 2 } });
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
    const t = out.get(group) ?? { requests: 0, tokens: 0, costMicro: 0, errors: {} };
    t.requests++;
    t.tokens += r.tokens_used ?? 0;
    if (r.cost_usd !== null) t.costMicro += Math.floor(r.cost_usd * 1_000_000 + 0.5);
    if (r.outcome !== 'ok') t.errors[r.outcome] = (t.errors[r.outcome] ?? 0) + 1;
    out.set(group, t);
  }
  return out;
}

interface Row extends Omit<Totals, 'costMicro'> {
  cost_usd: number;
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
    expect(byKey().get(k1.keyId)).toEqual({ requests: 8, tokens: 10 + 20 + 30 + 40 + 7 + 14 + 21, costMicro: 137 + 274 + 411 + 548 + 96 + 192 + 288, errors: { invalid_request: 1 } });
    expect(byKey().get(k3.keyId)).toEqual({ requests: 5, tokens: 3, costMicro: 3 * 14, errors: { rate_limited: 2 } });

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
    ] as const) {
      const answer = await admin.fetch(`${gw.adminUrl}/admin/v1/usage?${query}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
      expect([answer.status, (answer.body as { error: { param?: string } }).error.param], query).toEqual([400, param]);
    }
  });
});
