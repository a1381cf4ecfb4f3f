// A2A agents against the third hostile review (issue 45): a JSON-RPC answer dripped a byte at
// a time is cut at stream.max_duration on /chat and on the stream route of an agent that does
// not stream (H3-01); a stream of large events without `tokens_used` is charged by its bytes,
// not one token per event (H3-08); an answer to another JSON-RPC id is a bad answer; and a
// token count past the audit record's bound is shown as it is recorded (null).
import type { ServerResponse } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditRecord } from '../../src/audit/audit-record.js';
import { readAuditFile } from '../helpers/audit-records.js';
import { startFakeUpstream, type FakeUpstream, type SeenRequest } from '../helpers/fake-upstream.js';
import { postChat, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { openSse } from '../helpers/sse-client.js';
import { waitFor } from '../helpers/wait.js';

function card(streaming: boolean): string {
  return JSON.stringify({ name: 'r3', supportedInterfaces: [{ url: 'x', protocolBinding: 'JSONRPC', protocolVersion: '1.0' }], capabilities: { streaming }, skills: [] });
}

function rpc(id: unknown, result: unknown): string {
  return JSON.stringify({ jsonrpc: '2.0', id, result });
}

function agentMessage(text: string, metadata: Record<string, unknown> = {}): unknown {
  return { message: { messageId: 'm', role: 'ROLE_AGENT', parts: [{ text }], metadata } };
}

const timers = new Set<NodeJS.Timeout>();
const EVENT_TEXT = 'w'.repeat(2048);

function behave(streaming: boolean, res: ServerResponse, seen: SeenRequest): void {
  if (seen.method === 'GET') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(card(streaming));
    return;
  }
  const call = JSON.parse(seen.body.toString('utf8')) as { id: unknown; method: string; params: { message?: { parts: { text: string }[] } } };
  const said = call.params.message?.parts[0]?.text ?? '';
  if (said === 'drip') {
    // Valid JSON so far, then whitespace a byte at a time, forever: never idle, never whole.
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write('{"jsonrpc":"2.0"');
    const timer = setInterval(() => (res.destroyed ? clearInterval(timer) : res.write(' ')), 100);
    timers.add(timer);
    res.once('close', () => clearInterval(timer));
    return;
  }
  if (said === 'big-stream') {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    for (let i = 0; i < 5; i += 1) res.write(`data: ${rpc(call.id, { artifactUpdate: { taskId: 't-1', contextId: 'c-1', artifact: { artifactId: `a${i}`, parts: [{ text: EVENT_TEXT }] } } })}\n\n`);
    res.end(`data: ${rpc(call.id, { statusUpdate: { taskId: 't-1', contextId: 'c-1', status: { state: 'TASK_STATE_COMPLETED' } } })}\n\n`);
    return;
  }
  res.writeHead(200, { 'content-type': 'application/json' });
  if (said === 'wrong-id') res.end(rpc(`not-${String(call.id)}`, agentMessage('from another request')));
  else if (said === 'many-tokens') res.end(rpc(call.id, agentMessage('ok', { tokens_used: 20_000_000 })));
  else res.end(rpc(call.id, agentMessage('ok', { tokens_used: 1 })));
}

let streams: FakeUpstream;
let plain: FakeUpstream;
let gateway: TestGateway;

beforeAll(async () => {
  [streams, plain] = await Promise.all([startFakeUpstream((_req, res, seen) => behave(true, res, seen)), startFakeUpstream((_req, res, seen) => behave(false, res, seen))]);
  gateway = await startTestGateway({
    agents: { streams: { protocol: 'a2a', upstream: `${streams.url}/rpc` }, plain: { protocol: 'a2a', upstream: `${plain.url}/rpc` } },
    config: {
      plans: { budget: { tokens: [{ tokens: 1000, per: '1h' }] }, open: { windows: [{ requests: 1000, per: '1m' }] } },
      stream: { idle_timeout: '1s', max_duration: '2s' },
    },
  });
});

afterAll(async () => {
  for (const timer of timers) clearInterval(timer);
  await gateway?.close();
  await Promise.all([streams?.close(), plain?.close()]);
});

async function auditRecord(requestId: string | null): Promise<AuditRecord> {
  return waitFor('the audit record', async () => (await readAuditFile(join(gateway.dir, 'audit.jsonl'))).find((r) => r.request_id === requestId), 10_000);
}

describe('A2A deadlines are the same as every relay (H3-01)', () => {
  it.each([
    ['/chat', '/agents/streams/api/v1/chat'],
    ['/chat/stream on an agent that does not stream', '/agents/plain/api/v1/chat/stream'],
  ])('%s: an answer dripped a byte at a time is cut at stream.max_duration: 503, audited as timeout', async (_name, path) => {
    const { rawKey } = await gateway.createKey({ plan: 'open' });
    const res = await fetch(`${gateway.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${rawKey}` },
      body: JSON.stringify({ message: 'drip' }),
      signal: AbortSignal.timeout(20_000),
    });
    const body = (await res.json()) as { error: { type: string } };
    expect([res.status, body.error.type]).toEqual([503, 'agent_unavailable']);
    const record = await auditRecord(res.headers.get('x-request-id'));
    expect(record.outcome).toBe('timeout');
  });
});

describe('A2A usage and answers', () => {
  it('charges a stream without tokens_used by the bytes relayed, not one token per event (H3-08)', async () => {
    const { rawKey } = await gateway.createKey({ plan: 'budget' });
    const sse = await openSse(`${gateway.url}/agents/streams/api/v1/chat/stream`, rawKey, { message: 'big-stream' });
    await sse.ended;
    expect(sse.events.filter((e) => e.name === 'token')).toHaveLength(5);
    expect(JSON.parse(sse.events.at(-1)!.data).tokens_used).toBeNull();
    // Five 2 KiB events are over 2,500 tokens by the byte rule: the 1,000-token budget is spent.
    const next = await waitFor(
      'the budget spent',
      async () => {
        const res = await postChat(gateway.url, '/agents/streams/api/v1/chat', rawKey, { message: 'hi' });
        const body = (await res.json()) as { error?: { type: string } };
        return res.status === 429 ? body : undefined;
      },
      10_000,
    );
    expect(next.error?.type).toBe('token_budget_exceeded');
  });

  it("refuses an answer to another request's JSON-RPC id with 502 agent_bad_response", async () => {
    const { rawKey } = await gateway.createKey({ plan: 'open' });
    const res = await postChat(gateway.url, '/agents/streams/api/v1/chat', rawKey, { message: 'wrong-id' });
    const body = await res.text();
    expect(res.status).toBe(502);
    expect(JSON.parse(body).error.type).toBe('agent_bad_response');
    expect(body).not.toContain('from another request');
  });

  it('shows a token count past the audit bound as it records it: unknown (null), in the answer and the audit record', async () => {
    const { rawKey } = await gateway.createKey({ plan: 'open' });
    const res = await postChat(gateway.url, '/agents/streams/api/v1/chat', rawKey, { message: 'many-tokens' });
    expect(res.status).toBe(200);
    const shown = ((await res.json()) as { metadata: { tokens_used: unknown } }).metadata.tokens_used;
    const record = await auditRecord(res.headers.get('x-request-id'));
    expect(shown).toBe(record.tokens_used);
    expect(record.tokens_used).toBeNull();
  });
});
