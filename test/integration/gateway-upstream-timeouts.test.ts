// The exchange's own upstream deadlines (docs/decisions/0007): the agent timeout counts
// from the hand-off to the pool (a request still waiting for a pooled connection times out
// too, and is then never sent), a `/chat` body that stalls is cut after stream.idle_timeout,
// and a client that reads slowly is not the runner's silence.
import { request } from 'node:http';
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { postChat, startTestGateway, type TestGateway } from '../helpers/gateway.js';

const BIG_BODY = JSON.stringify({ response: 'x'.repeat(8 * 1024 * 1024), metadata: { tokens_used: 7 } });

let silent: FakeUpstream;
let stalling: FakeUpstream;
let big: FakeUpstream;
let gateway: TestGateway;
let key: string;

beforeAll(async () => {
  silent = await startFakeUpstream(() => {
    /* accepts the request and never answers */
  });
  stalling = await startFakeUpstream((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
    res.write('{"response":"partial');
  });
  big = await startFakeUpstream((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(BIG_BODY)) });
    res.end(BIG_BODY);
  });
  gateway = await startTestGateway({
    agents: {
      // Same origin and connection cap: one pool with one connection, shared by both agents.
      patient: { upstream: silent.baseUrl, timeout: '30s', max_connections: 1 },
      hurried: { upstream: silent.baseUrl, timeout: '300ms', max_connections: 1 },
      stalling: stalling.baseUrl,
      big: big.baseUrl,
    },
    config: { stream: { idle_timeout: '300ms' } },
  });
  ({ rawKey: key } = await gateway.createKey());
});

afterAll(async () => {
  await gateway?.close();
  await Promise.all([silent?.close(), stalling?.close(), big?.close()]);
});

interface AuditLine {
  request_id: string;
  agent: string;
  status: number;
  outcome: string;
}

async function auditLineFor(requestId: string): Promise<AuditLine> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const text = await readFile(`${gateway.dir}/audit.jsonl`, 'utf8').catch(() => '');
    const line = text
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as AuditLine)
      .find((r) => r.request_id === requestId);
    if (line) return line;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`no audit record for ${requestId}`);
}

async function upstreamErrors(agent: string, kind: string): Promise<number> {
  const text = await (await fetch(`${gateway.adminUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`agentgw_upstream_errors_total{agent="${agent}",kind="${kind}"}`));
  return line ? Number(line.split(' ').at(-1)) : 0;
}

/** POST /chat with node:http so the test controls when the body is read. */
function rawChat(agent: string, requestId: string): Promise<import('node:http').IncomingMessage> {
  const body = JSON.stringify({ message: 'hi' });
  return new Promise((resolve, reject) => {
    const req = request(`${gateway.url}/agents/${agent}/api/v1/chat`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'x-request-id': requestId },
    });
    req.once('response', resolve);
    req.once('error', reject);
    req.end(body);
  });
}

describe('upstream deadlines kept by the gateway', () => {
  it('a request still waiting for a pooled connection times out after the agent timeout, and is never sent', async () => {
    const holder = request(`${gateway.url}/agents/patient/api/v1/chat`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    });
    const held = new Promise((resolve) => holder.once('close', resolve));
    holder.on('error', () => {});
    holder.end(JSON.stringify({ message: 'holds the only connection' }));
    // The first request occupies the pool's only connection (the runner never answers it).
    for (let i = 0; i < 100 && silent.requests.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(silent.requests).toHaveLength(1);

    const response = await postChat(gateway.url, '/agents/hurried/api/v1/chat', key, { message: 'queued behind it' }, { 'x-request-id': 'queued-1' });
    expect(response.status).toBe(503);
    expect(((await response.json()) as { error: { type: string } }).error.type).toBe('agent_unavailable');
    expect(await auditLineFor('queued-1')).toMatchObject({ agent: 'hurried', status: 503, outcome: 'timeout' });
    expect(await upstreamErrors('hurried', 'headers_timeout')).toBe(1);

    // The first request still holds the connection; freeing it must not send the expired one.
    holder.destroy();
    await held;
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(silent.requests).toHaveLength(1);
  });

  it('a /chat body that stalls after the headers is cut after stream.idle_timeout', async () => {
    const response = await rawChat('stalling', 'stall-1');
    expect(response.statusCode).toBe(200);
    const received = await new Promise<{ bytes: number; aborted: boolean }>((resolve) => {
      let bytes = 0;
      response.on('data', (chunk: Buffer) => (bytes += chunk.length));
      response.once('end', () => resolve({ bytes, aborted: false }));
      response.once('error', () => resolve({ bytes, aborted: true }));
      response.once('aborted', () => resolve({ bytes, aborted: true }));
    });
    expect(received.aborted).toBe(true);
    expect(received.bytes).toBeLessThan(100);
    expect(await auditLineFor('stall-1')).toMatchObject({ agent: 'stalling', status: 200, outcome: 'timeout' });
    expect(await upstreamErrors('stalling', 'idle_timeout')).toBe(1);
  });

  it('a client that pauses reading a large /chat body for longer than the idle timeout still gets all of it', async () => {
    const response = await rawChat('big', 'slow-reader-1');
    expect(response.statusCode).toBe(200);
    response.pause();
    // Three idle timeouts long: the runner wrote everything at once, so any silence is ours.
    await new Promise((resolve) => setTimeout(resolve, 900));
    const chunks: Buffer[] = [];
    response.on('data', (chunk: Buffer) => chunks.push(chunk));
    await new Promise<void>((resolve, reject) => {
      response.once('end', resolve);
      response.once('error', reject);
      response.resume();
    });
    expect(Buffer.concat(chunks).toString('utf8')).toBe(BIG_BODY);
    expect(await auditLineFor('slow-reader-1')).toMatchObject({ agent: 'big', status: 200, outcome: 'ok' });
    expect(await upstreamErrors('big', 'idle_timeout')).toBe(0);
  });
});
