// Issue 45, H3-03: tool-call quotas are not escaped by size. A `/chat` answer over 1 MiB and a
// `tool_call` event over 64 KiB (what search and fetch tools produce) have their tool calls
// counted in the quota, the metric and the audit record, as small ones are: read by a bounded
// streaming scan as they pass, not from a buffer that gives up. On a real Redis and embedded.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readAuditFile } from '../helpers/audit-records.js';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { postChat, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { metricsText, parseMetrics, sumSamples } from '../helpers/metrics-text.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { openSse } from '../helpers/sse-client.js';
import { waitFor } from '../helpers/wait.js';

const PLANS = { quota: { windows: [{ requests: 100, per: '1m' }], tool_calls: { fetch: [{ calls: 2, per: '1h' }] } } };
/** A fetched page: 1.5 MiB in a /chat answer, 200 KiB in a stream's tool_call event. */
const PAGE = 'p'.repeat(1536 * 1024);
const EVENT_PAGE = 'q'.repeat(200 * 1024);

let redis: TestRedis;
let upstream: FakeUpstream;
const gateways: Record<string, TestGateway> = {};

beforeAll(async () => {
  [redis, upstream] = await Promise.all([
    startRedis(),
    startFakeUpstream((req, res) => {
      if (req.url?.endsWith('/chat/stream')) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(`event: tool_call\ndata: ${JSON.stringify({ tool: 'fetch', input: { url: 'https://example.com' }, output: { page: EVENT_PAGE } })}\n\n`);
        res.end('event: token\ndata: {"content":"ok"}\n\nevent: done\ndata: {"tokens_used":5,"latency_ms":1}\n\n');
        return;
      }
      const body = JSON.stringify({ response: 'ok', tool_calls: [{ tool: 'fetch', input: { url: 'https://example.com' }, output: { page: PAGE } }], metadata: { tokens_used: 5, latency_ms: 1, model: 'm' } });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    }),
  ]);
  const agents = { support: { upstream: upstream.baseUrl, tools: ['fetch', 'search'] } };
  [gateways.redis, gateways.embedded] = await Promise.all([
    startTestGateway({ agents, config: { plans: PLANS, redis: { prefix: 'gwtq:', command_timeout: '5s' } }, redisUrl: redis.url }),
    startTestGateway({ agents, config: { plans: PLANS } }),
  ]);
}, 60_000);

afterAll(async () => {
  await Promise.all(Object.values(gateways).map((gateway) => gateway.close()));
  await Promise.all([upstream?.close(), redis?.close()]);
});

async function fetchCalls(gateway: TestGateway): Promise<number> {
  return sumSamples(parseMetrics(await metricsText(gateway.adminUrl)), 'agentgw_tool_calls_total', { agent: 'support', tool: 'fetch' });
}

describe.each(['redis', 'embedded'])('tool calls in large answers (%s)', (mode) => {
  it('counts a fetch in a 1.5 MiB /chat answer and in a 200 KiB tool_call event: the quota of 2 is then spent', async () => {
    const gateway = gateways[mode]!;
    const { rawKey } = await gateway.createKey({ account: `large-${mode}`, plan: 'quota', agents: ['support'] });
    const before = await fetchCalls(gateway);

    const chat = await postChat(gateway.url, '/agents/support/api/v1/chat', rawKey, { message: 'fetch it', tools: ['fetch'] });
    expect(chat.status).toBe(200);
    expect((await chat.text()).length).toBeGreaterThan(1024 * 1024);
    await waitFor('the /chat fetch counted', async () => (await fetchCalls(gateway)) === before + 1, 10_000);

    const sse = await openSse(`${gateway.url}/agents/support/api/v1/chat/stream`, rawKey, { message: 'fetch it', tools: ['fetch'] });
    await sse.ended;
    expect(sse.events.map((e) => e.name)).toEqual(['tool_call', 'token', 'done']);
    await waitFor('the stream fetch counted', async () => (await fetchCalls(gateway)) === before + 2, 10_000);

    const records = await waitFor(
      'both audit records',
      async () => {
        const all = (await readAuditFile(join(gateway.dir, 'audit.jsonl'))).filter((r) => r.request_id === chat.headers.get('x-request-id') || r.request_id === sse.headers['x-request-id']);
        return all.length === 2 ? all : undefined;
      },
      10_000,
    );
    for (const record of records) expect(record.tool_calls).toEqual(['fetch']);

    // Two fetches of a quota of two: a request naming fetch is refused, and never reaches the runner.
    const refused = await waitFor(
      'the quota spent',
      async () => {
        const res = await postChat(gateway.url, '/agents/support/api/v1/chat', rawKey, { message: 'again', tools: ['fetch'] });
        const text = await res.text();
        return res.status === 429 ? (JSON.parse(text) as { error: { type: string } }) : undefined;
      },
      10_000,
    );
    expect(refused.error.type).toBe('tool_budget_exceeded');
  });
});
