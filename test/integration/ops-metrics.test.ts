// The admin listener against real traffic: /metrics counters move with requests, labels
// stay bounded whatever the client sends, and /metrics, /healthz, /readyz exist on the
// admin port only.
import { refusingPort } from '../helpers/free-port.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultHandler, startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { postChat, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { openSse } from '../helpers/sse-client.js';
import { type MetricSample, parseMetrics, sumSamples } from '../helpers/metrics-text.js';

let upstream: FakeUpstream;
let gateway: TestGateway;
let key: string;
let tinyKey: string;
const CHAT = '/agents/support/api/v1/chat';
const STREAM = '/agents/support/api/v1/chat/stream';

/** A port that refuses connections (test/helpers/free-port.ts). */
async function refusedUrl(): Promise<string> {
  return `http://127.0.0.1:${await refusingPort()}/api/v1`;
}

async function scrape(): Promise<MetricSample[]> {
  const res = await fetch(`${gateway.adminUrl}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
  return parseMetrics(await res.text());
}

async function eventually(check: () => Promise<void>, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await check();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

beforeAll(async () => {
  upstream = await startFakeUpstream();
  gateway = await startTestGateway({
    agents: { support: upstream.baseUrl, down: await refusedUrl() },
    config: { plans: { scale: { windows: [] }, tiny: { windows: [{ requests: 1, per: '1m' }] } } },
  });
  ({ rawKey: key } = await gateway.createKey());
  ({ rawKey: tinyKey } = await gateway.createKey({ account: 'tiny-co', plan: 'tiny' }));
});

afterAll(async () => {
  await gateway?.close();
  await upstream?.close();
});

describe('admin listener', () => {
  it('answers /healthz and /readyz with JSON and 404s anything else', async () => {
    const health = await fetch(`${gateway.adminUrl}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });
    const ready = await fetch(`${gateway.adminUrl}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ready' });
    expect((await fetch(`${gateway.adminUrl}/nope`)).status).toBe(404);
    expect((await fetch(`${gateway.adminUrl}/metrics`, { method: 'POST' })).status).toBe(405);
  });

  it('does not serve /metrics, /healthz or /readyz on the public port', async () => {
    for (const path of ['/metrics', '/healthz', '/readyz']) {
      const res = await fetch(`${gateway.url}${path}`);
      expect(res.status).toBe(404);
      expect(((await res.json()) as { error: { type: string } }).error.type).toBe('not_found');
    }
  });
});

describe('counters move with traffic', () => {
  it('counts requests by agent, route and status class, with durations, tokens and key cache lookups', async () => {
    const before = await scrape();
    for (let i = 0; i < 3; i++) expect((await postChat(gateway.url, CHAT, key, { message: 'hi' })).status).toBe(200);
    const stream = await openSse(`${gateway.url}${STREAM}`, key, { message: 'hi' });
    await stream.ended;
    expect(stream.events.map((e) => e.name)).toEqual(['token', 'done']);

    await eventually(async () => {
      const after = await scrape();
      const delta = (name: string, labels: Record<string, string> = {}) => sumSamples(after, name, labels) - sumSamples(before, name, labels);
      expect(delta('agentgw_requests_total', { agent: 'support', route: 'chat', status: '2xx' })).toBe(3);
      expect(delta('agentgw_requests_total', { agent: 'support', route: 'chat/stream', status: '2xx' })).toBe(1);
      expect(delta('agentgw_request_duration_seconds_count', { route: 'chat' })).toBe(3);
      expect(delta('agentgw_upstream_duration_seconds_count', { agent: 'support', route: 'chat' })).toBe(3);
      expect(delta('agentgw_overhead_seconds_count', { route: 'chat' })).toBe(3);
      expect(delta('agentgw_stream_first_token_seconds_count', { agent: 'support' })).toBe(1);
      expect(delta('agentgw_stream_events_total', { agent: 'support' })).toBe(2);
      // The fake runner reports 5 tokens per chat answer and 1 in the stream's done event.
      expect(delta('agentgw_tokens_total', { agent: 'support' })).toBe(16);
      expect(delta('agentgw_key_cache_total', { result: 'hit' }) + delta('agentgw_key_cache_total', { result: 'miss' })).toBe(4);
      expect(delta('agentgw_key_cache_total', { result: 'hit' })).toBeGreaterThanOrEqual(3);
      // Histogram buckets are cumulative: +Inf holds every observation.
      expect(delta('agentgw_request_duration_seconds_bucket', { route: 'chat', le: '+Inf' })).toBe(3);
      // Every accepted request is audited; the file sink reports each record it wrote.
      expect(delta('agentgw_audit_records_total', { sink: 'file', result: 'written' })).toBe(4);
    });
  });

  it('shows a stream in agentgw_active_streams while it is open', async () => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    upstream.handle(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('event: token\ndata: {"content":"a"}\n\n');
      await released;
      res.end('event: done\ndata: {"tokens_used":1,"latency_ms":1}\n\n');
    });
    try {
      const stream = await openSse(`${gateway.url}${STREAM}`, key, { message: 'hi' });
      await eventually(async () => expect(sumSamples(await scrape(), 'agentgw_active_streams')).toBe(1));
      release();
      await stream.ended;
      await eventually(async () => expect(sumSamples(await scrape(), 'agentgw_active_streams')).toBe(0));
    } finally {
      release();
      upstream.handle(defaultHandler);
    }
  });

  it('counts auth failures by reason, rate-limited requests by plan and upstream errors by kind', async () => {
    const before = await scrape();
    expect((await postChat(gateway.url, CHAT, undefined, { message: 'hi' })).status).toBe(401);
    expect((await postChat(gateway.url, CHAT, 'ha_not_a_real_key', { message: 'hi' })).status).toBe(401);
    expect((await postChat(gateway.url, CHAT, tinyKey, { message: 'hi' })).status).toBe(200);
    expect((await postChat(gateway.url, CHAT, tinyKey, { message: 'hi' })).status).toBe(429);
    expect((await postChat(gateway.url, '/agents/down/api/v1/chat', key, { message: 'hi' })).status).toBe(503);

    const after = await scrape();
    const delta = (name: string, labels: Record<string, string> = {}) => sumSamples(after, name, labels) - sumSamples(before, name, labels);
    expect(delta('agentgw_auth_failures_total', { reason: 'missing_api_key' })).toBe(1);
    expect(delta('agentgw_auth_failures_total', { reason: 'invalid_api_key' })).toBe(1);
    expect(delta('agentgw_rate_limited_total', { plan: 'tiny' })).toBe(1);
    expect(delta('agentgw_upstream_errors_total', { agent: 'down', kind: 'connect' })).toBe(1);
    expect(delta('agentgw_requests_total', { agent: 'support', route: 'chat', status: '4xx' })).toBe(3);
    expect(delta('agentgw_requests_total', { agent: 'support', route: 'chat', status: '2xx' })).toBe(1);
    expect(delta('agentgw_requests_total', { agent: 'down', route: 'chat', status: '5xx' })).toBe(1);
  });

  it('keeps labels bounded: made-up agents, paths, plans and keys never become label values', async () => {
    const marker = `zz${Date.now().toString(36)}`;
    // The label values this file's requests add: the test workers share one process's metrics
    // registry across files (vitest.config.ts), so another file's agents may already be there.
    const before = labelValues(parseMetrics(await (await fetch(`${gateway.adminUrl}/metrics`)).text()));
    await postChat(gateway.url, `/agents/${marker}/api/v1/chat`, key, { message: 'hi' });
    await postChat(gateway.url, `/${marker}/anything`, key, { message: 'hi' });
    await postChat(gateway.url, CHAT, `ha_${marker}`, { message: 'hi' });
    await fetch(`${gateway.url}${CHAT}`, { method: 'GET', headers: { 'x-request-id': marker } });
    const text = await (await fetch(`${gateway.adminUrl}/metrics`)).text();
    expect(text).not.toContain(marker);
    expect(text).not.toContain('acme');
    expect(text).not.toContain('tiny-co');
    // Unroutable requests are counted under the fixed label value "none".
    expect(sumSamples(parseMetrics(text), 'agentgw_requests_total', { agent: 'none', route: 'none', status: '4xx' })).toBeGreaterThanOrEqual(3);
    const after = labelValues(parseMetrics(text));
    const added = (label: string) => [...(after.get(label) ?? [])].filter((value) => !before.get(label)?.has(value)).sort();
    const all = (label: string) => [...(after.get(label) ?? [])];
    // Every agent value this gateway has written is one of its agents or "none".
    expect(['down', 'none', 'support'].every((agent) => after.get('agent')?.has(agent))).toBe(true);
    expect(added('agent').every((agent) => ['down', 'none', 'support'].includes(agent))).toBe(true);
    expect(all('route').every((r) => ['chat', 'chat/stream', 'none'].includes(r))).toBe(true);
    expect(all('status').every((s) => /^[1-5]xx$/.test(s))).toBe(true);
    expect(after.get('plan')?.has('tiny')).toBe(true);
    expect(added('plan').every((plan) => plan === 'tiny')).toBe(true);
  });
});

/** Each label's values over the gateway's own series (`agentgw_`; histogram buckets' `le` left out). */
function labelValues(samples: readonly MetricSample[]): Map<string, Set<string>> {
  const values = new Map<string, Set<string>>();
  for (const sample of samples.filter((s) => s.name.startsWith('agentgw_'))) {
    for (const [label, value] of Object.entries(sample.labels)) {
      if (label === 'le') continue;
      if (!values.has(label)) values.set(label, new Set());
      values.get(label)!.add(value);
    }
  }
  return values;
}
