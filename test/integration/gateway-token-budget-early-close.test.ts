// Finding 3 of issue 33: a client that leaves a stream before `done`, or an answer too long
// to read for its count, is still charged to the token budget (docs/rate-limits.md, "Token
// budgets"; decision 0044). Against the product's own demo agent for streams, on a real
// Redis and in embedded (memory) mode.
import { join } from 'node:path';
import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDemoAgent } from '../../src/demo-agent/demo-agent.js';
import { readAuditFile } from '../helpers/audit-records.js';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { freePort } from '../helpers/free-port.js';
import { postChat, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { waitFor } from '../helpers/wait.js';

const STREAM = '/agents/demo/api/v1/chat/stream';
const CHAT = '/agents/big/api/v1/chat';
const BUDGET = 100;
/** Token events each client reads before it hangs up (the demo agent sends one token per event). */
const READ_EVENTS = 10;
/** A message long enough that the demo agent's reply has over 40 tokens: no stream reaches `done`. */
const MESSAGE = Array.from({ length: 40 }, (_, i) => `word${i}`).join(' ');
const PLANS = { budget: { tokens: [{ tokens: BUDGET, per: '1h' }] } };

let demo: Server;
let big: FakeUpstream;
let poison: FakeUpstream;
let redis: TestRedis;
let onRedis: TestGateway;
let embedded: TestGateway;

beforeAll(async () => {
  const port = await freePort();
  demo = await startDemoAgent({ port, tokenIntervalMs: 5 });
  // A JSON answer of 2 MiB: too long to be kept for its count (over 1 MiB).
  const filler = 'x'.repeat(2 * 1024 * 1024);
  big = await startFakeUpstream((_req, res) => {
    const body = JSON.stringify({ response: filler, metadata: { tokens_used: 5 } });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
  // Finding 5: a count no answer can have.
  poison = await startFakeUpstream((_req, res) => {
    const body = '{"response":"hi","metadata":{"tokens_used":1e308}}';
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
  redis = await startRedis();
  const agents = { demo: `http://127.0.0.1:${port}/api/v1`, big: big.baseUrl, poison: poison.baseUrl };
  [onRedis, embedded] = await Promise.all([
    startTestGateway({ agents, config: { plans: PLANS, redis: { prefix: 'gwec:', command_timeout: '5s' } }, redisUrl: redis.url }),
    startTestGateway({ agents, config: { plans: PLANS } }),
  ]);
});

afterAll(async () => {
  await Promise.all([onRedis?.close(), embedded?.close(), big?.close(), poison?.close()]);
  await new Promise((resolve) => (demo ? demo.close(resolve) : resolve(undefined)));
  await redis?.close();
});

/** Opens a stream, reads READ_EVENTS token events and hangs up; the status when refused. */
async function readAndLeave(gateway: TestGateway, key: string): Promise<{ status: number; events: number }> {
  const abort = new AbortController();
  const response = await fetch(`${gateway.url}${STREAM}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ message: MESSAGE }),
    signal: abort.signal,
  });
  if (response.status !== 200) {
    await response.text();
    return { status: response.status, events: 0 };
  }
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  let events = 0;
  while (events < READ_EVENTS) {
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
    events = text.split('event: token\n').length - 1;
  }
  expect(text).not.toContain('event: done');
  abort.abort();
  return { status: 200, events };
}

async function auditedCount(gateway: TestGateway, account: string): Promise<number> {
  return (await readAuditFile(join(gateway.dir, 'audit.jsonl'))).filter((r) => r.account === account).length;
}

describe.each([
  ['on Redis', () => onRedis],
  ['embedded (memory)', () => embedded],
])('a budget of 100 tokens per hour, %s', (mode, gatewayOf) => {
  it('streams left after 10 token events are charged what they relayed: refused after at most 10 of them', async () => {
    const gateway = gatewayOf();
    const account = `early-close-${mode === 'on Redis' ? 'redis' : 'mem'}`;
    const { rawKey } = await gateway.createKey({ account, plan: 'budget', agents: ['demo'] });
    let admitted = 0;
    let refused: number | undefined;
    for (let attempt = 1; attempt <= 20 && refused === undefined; attempt += 1) {
      const { status, events } = await readAndLeave(gateway, rawKey);
      if (status !== 200) {
        refused = status;
        break;
      }
      expect(events).toBeGreaterThanOrEqual(READ_EVENTS);
      admitted += 1;
      // The gateway has seen the client leave (and charged the stream) once its record exists.
      await waitFor('the stream audited', async () => (await auditedCount(gateway, account)) === attempt || undefined, 10_000);
    }
    expect(refused).toBe(429);
    // Each admitted stream was charged at least the 10 events its client read; a stream is
    // admitted while the budget has a token left, so at most 100 / 10 of them.
    expect(admitted).toBeLessThanOrEqual(BUDGET / READ_EVENTS);
    const records = await readAuditFile(join(gateway.dir, 'audit.jsonl'));
    const mine = records.filter((r) => r.account === account);
    expect(mine.filter((r) => r.outcome === 'client_closed')).toHaveLength(admitted);
    // The runner's count stays unknown in the record: the estimate is the budget's, not the usage report's.
    expect(mine.every((r) => r.tokens_used === null)).toBe(true);
  });

  it('a JSON answer over 1 MiB is charged by its bytes (4 per token): the next request is refused', async () => {
    const gateway = gatewayOf();
    const account = `big-json-${mode === 'on Redis' ? 'redis' : 'mem'}`;
    const { rawKey } = await gateway.createKey({ account, plan: 'budget', agents: ['big'] });
    const first = await postChat(gateway.url, CHAT, rawKey, { message: 'hi' });
    expect(first.status).toBe(200);
    expect((await first.arrayBuffer()).byteLength).toBeGreaterThan(2 * 1024 * 1024);
    await waitFor('the answer audited', async () => (await auditedCount(gateway, account)) === 1 || undefined, 10_000);
    const second = await postChat(gateway.url, CHAT, rawKey, { message: 'hi' });
    const body = (await second.json()) as { error: { type: string } };
    expect(second.status).toBe(429);
    expect(body.error.type).toBe('token_budget_exceeded');
  });

  it('tokens_used: 1e308 is an invalid count: charged by its bytes, the budget and the tokens metric stay finite', async () => {
    const gateway = gatewayOf();
    const account = `poison-${mode === 'on Redis' ? 'redis' : 'mem'}`;
    const { rawKey } = await gateway.createKey({ account, plan: 'budget', agents: ['poison'] });
    for (let i = 1; i <= 3; i += 1) {
      const answer = await postChat(gateway.url, '/agents/poison/api/v1/chat', rawKey, { message: 'hi' });
      await answer.text();
      // 51 bytes: 13 tokens each, far from exhausting 100.
      expect(answer.status).toBe(200);
      await waitFor('the answer audited', async () => (await auditedCount(gateway, account)) === i || undefined, 10_000);
    }
    const records = (await readAuditFile(join(gateway.dir, 'audit.jsonl'))).filter((r) => r.account === account);
    expect(records.map((r) => r.tokens_used)).toEqual([null, null, null]);
    const metrics = await (await fetch(`${gateway.adminUrl}/metrics`)).text();
    const tokenLines = metrics.split('\n').filter((line) => line.startsWith('agentgw_tokens_total'));
    for (const line of tokenLines) expect(Number(line.split(' ').pop())).toBeLessThan(Number.MAX_SAFE_INTEGER);
  });
});
