// The answer's facts through HTTP (docs/policy.md "Cost in dollars"; decision 0066): a real
// runner names its model and tool calls in a JSON answer and in a stream (`tool_call`
// events, `done`'s `model`); the gateway, with `pricing`, writes `model`, `cost_usd` and
// `tool_calls` into each audit record and counts agentgw_tool_calls_total and
// agentgw_cost_usd_total. A hostile runner (over-long names, hundreds of calls) changes
// nothing but what is recorded, within the stated bounds.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import type { AuditRecord } from '../../src/audit/audit-record.js';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { postChat, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { readAuditFile } from '../helpers/audit-records.js';
import { metricsText, parseMetrics, sumSamples } from '../helpers/metrics-text.js';
import { openSse } from '../helpers/sse-client.js';
import { waitFor } from '../helpers/wait.js';

/** What the runner answers: the request's `message` names the case. */
function answerFor(message: string): { json?: unknown; events?: string } {
  switch (message) {
    case 'json':
      return { json: { response: 'hi', tool_calls: [{ tool: 'calculator', input: { a: 1 } }, { tool: 'web_search', output: {} }], metadata: { model: 'big-model', tokens_used: 1500 } } };
    case 'no-model':
      return { json: { response: 'hi', tool_calls: [], metadata: { tokens_used: 1000 } } };
    case 'unlisted':
      return { json: { response: 'hi', metadata: { model: 'other-model', tokens_used: 500 } } };
    case 'hostile':
      return {
        json: {
          response: 'hi',
          tool_calls: [{ tool: 'x'.repeat(65) }, { tool: 7 }, ...Array.from({ length: 300 }, (_, k) => ({ tool: `invented-${k}` }))],
          metadata: { model: 'm'.repeat(10_000), tokens_used: 2000 },
        },
      };
    case 'stream':
      return {
        events:
          'event: token\ndata: {"content":"a"}\n\n' +
          'event: tool_call\ndata: {"tool":"calculator","input":{"a":1}}\n\n' +
          'event: tool_call\ndata: {"tool":"secret_tool"}\n\n' +
          'event: tool_call\ndata: not json\n\n' +
          'event: done\ndata: {"tokens_used":250,"latency_ms":3,"model":"big-model"}\n\n',
      };
    default:
      return { json: { response: 'hi', metadata: { tokens_used: 1 } } };
  }
}

let runner: FakeUpstream;
let gateway: TestGateway;
let key: string;

beforeAll(async () => {
  runner = await startFakeUpstream((_req, res, seen) => {
    const { message } = JSON.parse(seen.body.toString('utf8')) as { message: string };
    const answer = answerFor(message);
    if (answer.events !== undefined) {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(answer.events);
      return;
    }
    const body = JSON.stringify(answer.json);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
  gateway = await startTestGateway({
    agents: {
      'facts-listed': { upstream: runner.baseUrl, tools: ['calculator', 'web_search'], model: 'agent-model' },
      'facts-open': { upstream: runner.baseUrl },
    },
    config: { pricing: { default: 0.002, 'big-model': 0.012, 'agent-model': 0.004 } },
  });
  key = (await gateway.createKey()).rawKey;
}, 60_000);

afterAll(async () => {
  await gateway?.close();
  await runner?.close();
});

async function recordOf(requestId: string): Promise<AuditRecord> {
  return waitFor(`the audit record of ${requestId}`, async () => (await readAuditFile(join(gateway.dir, 'audit.jsonl'))).find((r) => r.request_id === requestId), 10_000);
}

async function chat(agent: string, message: string, requestId: string, tools?: string[]): Promise<AuditRecord> {
  const res = await postChat(gateway.url, `/agents/${agent}/api/v1/chat`, key, { message, ...(tools === undefined ? {} : { tools }) }, { 'x-request-id': requestId });
  expect(res.status).toBe(200);
  await res.arrayBuffer();
  return recordOf(requestId);
}

describe('answer facts', () => {
  it('a JSON answer: model, cost and tool calls in the record, and in the metrics', async () => {
    const before = parseMetrics(await metricsText(gateway.adminUrl));
    const record = await chat('facts-listed', 'json', 'facts-json-1');
    expect(record).toMatchObject({ model: 'big-model', tool_calls: ['calculator', 'web_search'], tools_withheld: null, tokens_used: 1500 });
    expect(record.cost_usd).toBeCloseTo(0.018, 12);
    const after = parseMetrics(await metricsText(gateway.adminUrl));
    const delta = (name: string, labels: Record<string, string>) => sumSamples(after, name, labels) - sumSamples(before, name, labels);
    expect(delta('agentgw_tool_calls_total', { agent: 'facts-listed', tool: 'calculator', verdict: 'allowed' })).toBe(1);
    expect(delta('agentgw_tool_calls_total', { agent: 'facts-listed', tool: 'web_search', verdict: 'allowed' })).toBe(1);
    expect(delta('agentgw_cost_usd_total', { agent: 'facts-listed' })).toBeCloseTo(0.018, 9);
  });

  it('an answer without a model is priced as the agent\'s model; an unlisted model at `default`', async () => {
    const fallback = await chat('facts-listed', 'no-model', 'facts-no-model-1');
    expect(fallback).toMatchObject({ model: 'agent-model', tool_calls: null });
    expect(fallback.cost_usd).toBeCloseTo(0.004, 12);
    const unlisted = await chat('facts-open', 'unlisted', 'facts-unlisted-1');
    expect(unlisted.model).toBe('other-model');
    expect(unlisted.cost_usd).toBeCloseTo(0.001, 12);
    const unnamed = await chat('facts-open', 'plain', 'facts-plain-1');
    expect(unnamed).toMatchObject({ model: null, tool_calls: null });
    expect(unnamed.cost_usd).toBeCloseTo(0.000002, 15);
  });

  it('a stream: tool_call events and done\'s model; a tool outside the allow-list counts as other', async () => {
    const before = parseMetrics(await metricsText(gateway.adminUrl));
    const sse = await openSse(`${gateway.url}/agents/facts-listed/api/v1/chat/stream`, key, { message: 'stream' }, { 'x-request-id': 'facts-stream-1' });
    await sse.ended;
    expect(sse.events.map((e) => e.name)).toEqual(['token', 'tool_call', 'tool_call', 'tool_call', 'done']);
    const record = await recordOf('facts-stream-1');
    expect(record).toMatchObject({ route: 'chat/stream', model: 'big-model', tool_calls: ['calculator', 'secret_tool'], tokens_used: 250 });
    expect(record.cost_usd).toBeCloseTo(0.003, 12);
    const after = parseMetrics(await metricsText(gateway.adminUrl));
    const delta = (labels: Record<string, string>) => sumSamples(after, 'agentgw_tool_calls_total', labels) - sumSamples(before, 'agentgw_tool_calls_total', labels);
    expect(delta({ agent: 'facts-listed', tool: 'calculator', verdict: 'allowed' })).toBe(1);
    expect(delta({ agent: 'facts-listed', tool: 'other', verdict: 'allowed' })).toBe(1);
  });

  it('a hostile answer: the model too long to record, invalid names skipped, at most 128 calls, at most 64 tool labels per agent', async () => {
    const record = await chat('facts-open', 'hostile', 'facts-hostile-1');
    expect(record.model).toBeNull();
    expect(record.tool_calls).toHaveLength(128);
    expect(record.tool_calls![0]).toBe('invented-0');
    expect(record.cost_usd).toBeCloseTo(0.004, 12);
    const samples = parseMetrics(await metricsText(gateway.adminUrl)).filter((s) => s.name === 'agentgw_tool_calls_total' && s.labels.agent === 'facts-open');
    const labels = new Set(samples.map((s) => s.labels.tool));
    expect(labels.size).toBe(65);
    expect(labels.has('other')).toBe(true);
    expect(samples.reduce((sum, s) => sum + s.value, 0)).toBe(128);
  });
});
