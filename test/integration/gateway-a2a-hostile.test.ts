// Hostile A2A servers (docs/a2a.md, "Limits"): an oversized card, garbage where JSON-RPC
// should be, a JSON-RPC error, an answer or event too large to hold, a stream that never
// ends, and an absurd token count. Nothing may crash the gateway, hang the client or corrupt
// a count; each gets its documented answer.
import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeUpstream, type FakeUpstream, type SeenRequest } from '../helpers/fake-upstream.js';
import { postChat, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { openSse } from '../helpers/sse-client.js';
import { waitFor } from '../helpers/wait.js';

const CARD = JSON.stringify({
  name: 'hostile',
  supportedInterfaces: [{ url: 'x', protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
  capabilities: { streaming: true },
  skills: [],
});

function rpc(id: unknown, result: unknown): string {
  return JSON.stringify({ jsonrpc: '2.0', id, result });
}

function completedTask(tokens: unknown): unknown {
  return { task: { id: 't-1', contextId: 'c-1', status: { state: 'TASK_STATE_COMPLETED' }, artifacts: [{ artifactId: 'a', parts: [{ text: 'ok' }] }], metadata: { tokens_used: tokens } } };
}

function json(res: ServerResponse, body: string): void {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(body);
}

/** What the hostile agent does, chosen by the message it is sent. */
function hostile(res: ServerResponse, seen: SeenRequest): void {
  if (seen.method === 'GET') {
    json(res, CARD);
    return;
  }
  const call = JSON.parse(seen.body.toString('utf8')) as { id: unknown; method: string; params: { message?: { parts: { text: string }[] } } };
  const said = call.params.message?.parts[0]?.text ?? '';
  if (call.method === 'CancelTask') return json(res, rpc(call.id, { id: 't-1' }));
  if (said === 'garbage') return json(res, 'this is not { json');
  if (said === 'rpc-error') return json(res, JSON.stringify({ jsonrpc: '2.0', id: call.id, error: { code: -32603, message: 'secret internal detail' } }));
  if (said === 'huge-tokens') return json(res, rpc(call.id, completedTask(1e300)));
  if (said === 'big-answer') return json(res, rpc(call.id, { message: { messageId: 'm', role: 'ROLE_AGENT', parts: [{ text: 'x'.repeat(5 * 1024 * 1024) }] } }));
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const event = (result: unknown): string => `data: ${rpc(call.id, result)}\n\n`;
  res.write(event({ task: { id: 't-1', contextId: 'c-1', status: { state: 'TASK_STATE_SUBMITTED' } } }));
  if (said === 'big-event') {
    // One event that never ends, past the bound.
    res.write('data: ');
    res.end('y'.repeat(2 * 1024 * 1024));
  } else if (said === 'stream-garbage') {
    res.end('data: {not json\n\n');
  } else if (said === 'endless') {
    const timer = setInterval(() => res.write(event({ statusUpdate: { taskId: 't-1', status: { state: 'TASK_STATE_WORKING' } } })), 50);
    res.once('close', () => clearInterval(timer));
  }
  // 'silent': nothing more, ever.
}

let agent: FakeUpstream;
let bigCard: FakeUpstream;
let gateway: TestGateway;
let key: string;

beforeAll(async () => {
  agent = await startFakeUpstream((_req, res, seen) => hostile(res, seen));
  bigCard = await startFakeUpstream((_req, res) => json(res, JSON.stringify({ ...JSON.parse(CARD), description: 'z'.repeat(300 * 1024) })));
  gateway = await startTestGateway({
    agents: { hostile: { protocol: 'a2a', upstream: `${agent.url}/rpc` }, bigcard: { protocol: 'a2a', upstream: `${bigCard.url}/rpc` } },
    config: { plans: { budget: { tokens: [{ tokens: 100, per: '1h' }] } }, stream: { idle_timeout: '500ms', max_duration: '1500ms' } },
  });
  key = (await gateway.createKey({ plan: 'budget' })).rawKey;
});

afterAll(async () => {
  await gateway?.close();
  await agent?.close();
  await bigCard?.close();
});

async function errorType(res: Response): Promise<string> {
  return ((await res.json()) as { error: { type: string } }).error.type;
}

const CHAT = '/agents/hostile/api/v1/chat';
const STREAM = '/agents/hostile/api/v1/chat/stream';

describe('hostile A2A agents', () => {
  it('refuses an oversized card: the agent is unavailable, with a log line naming why', async () => {
    const res = await postChat(gateway.url, '/agents/bigcard/api/v1/chat', key, { message: 'x' });
    expect(res.status).toBe(503);
    expect(gateway.logs.join('')).toContain('larger than 262144 bytes');
  });

  it('answers garbage where JSON-RPC should be with 502 agent_bad_response', async () => {
    const res = await postChat(gateway.url, CHAT, key, { message: 'garbage' });
    expect([res.status, await errorType(res)]).toEqual([502, 'agent_bad_response']);
  });

  it("answers a JSON-RPC error with 502 agent_error, its code, and none of the agent's text", async () => {
    const res = await postChat(gateway.url, CHAT, key, { message: 'rpc-error' });
    const body = await res.text();
    expect(res.status).toBe(502);
    expect(body).toContain('agent_error');
    expect(body).toContain('-32603');
    expect(body).not.toContain('secret internal detail');
  });

  it('refuses an answer larger than the bound instead of holding it', async () => {
    const res = await postChat(gateway.url, CHAT, key, { message: 'big-answer' });
    expect([res.status, await errorType(res)]).toEqual([502, 'agent_bad_response']);
  });

  it('does not charge an absurd token count: it is unknown (null), and the budget is untouched', async () => {
    const res = await postChat(gateway.url, CHAT, key, { message: 'huge-tokens' });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { metadata: { tokens_used: unknown } }).metadata.tokens_used).toBeNull();
    const next = await postChat(gateway.url, CHAT, key, { message: 'huge-tokens' });
    await next.text();
    expect(next.status).toBe(200);
  });

  it('ends a stream whose event grows past the bound with event: error agent_bad_response', async () => {
    const sse = await openSse(`${gateway.url}${STREAM}`, key, { message: 'big-event' });
    await sse.ended;
    expect(JSON.parse(sse.events.at(-1)!.data).type).toBe('agent_bad_response');
  });

  it('ends a stream with garbage in an event with event: error agent_bad_response', async () => {
    const sse = await openSse(`${gateway.url}${STREAM}`, key, { message: 'stream-garbage' });
    await sse.ended;
    expect(JSON.parse(sse.events.at(-1)!.data).type).toBe('agent_bad_response');
  });

  it('cuts a silent stream at the idle timeout, and cancels its task', async () => {
    const cancelsBefore = agent.requests.filter((r) => r.body.includes('CancelTask')).length;
    const sse = await openSse(`${gateway.url}${STREAM}`, key, { message: 'silent' });
    await sse.ended;
    expect(JSON.parse(sse.events.at(-1)!.data).type).toBe('upstream_timeout');
    await waitFor('a cancel', () => agent.requests.filter((r) => r.body.includes('CancelTask')).length > cancelsBefore, 5_000);
  });

  it('cuts a never-ending stream at the maximum duration', async () => {
    const sse = await openSse(`${gateway.url}${STREAM}`, key, { message: 'endless' });
    await sse.ended;
    expect(JSON.parse(sse.events.at(-1)!.data).type).toBe('stream_timeout');
  });

  it('is still serving after all of it', async () => {
    const res = await postChat(gateway.url, CHAT, key, { message: 'huge-tokens' });
    await res.text();
    expect(res.status).toBe(200);
  });
});
