// The same SSE properties end to end, through a real gateway and real sockets: the bytes a
// runner writes reach the client unchanged whatever their chunking, tokens_used lands in the
// audit record, a heartbeat never splits or merges an event, and the final error event after
// an abnormal end parses as its own event whatever the runner had written before it.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditRecord } from '../../src/audit/audit-record.js';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { parseSseReference } from '../helpers/reference-sse.js';
import { cutsFor, sseGarbage, wellFormedStream } from '../helpers/sse-arbitraries.js';
import { sleep } from '../helpers/wait.js';
import { splitAtInside } from '../helpers/split-at.js';

const HEARTBEAT_MS = 20;

/** What the runner does with the next stream request. */
type Script = { chunks: Buffer[]; pauseAfterFirstMs: number; end: 'end' | 'reset' };

let upstream: FakeUpstream;
let gateway: TestGateway;
let key: string;
let script: Script = { chunks: [], pauseAfterFirstMs: 0, end: 'end' };
let counter = 0;

beforeAll(async () => {
  upstream = await startFakeUpstream(async (_req, res) => {
    const { chunks, pauseAfterFirstMs, end } = script;
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.flushHeaders();
    for (const [i, chunk] of chunks.entries()) {
      res.write(chunk);
      await (i === 0 && pauseAfterFirstMs > 0 ? sleep(pauseAfterFirstMs) : new Promise((resolve) => setImmediate(resolve)));
    }
    if (end === 'reset') {
      // Let the written bytes leave before the reset, so the reset is "mid-stream", not "instead of".
      await sleep(5);
      res.socket?.destroy();
    } else {
      res.end();
    }
  });
  gateway = await startTestGateway({
    agents: { support: upstream.baseUrl },
    config: { stream: { heartbeat: `${HEARTBEAT_MS}ms`, idle_timeout: '5s', max_duration: '10s' }, log: { level: 'warn' } },
  });
  ({ rawKey: key } = await gateway.createKey());
});

afterAll(async () => {
  await gateway?.close();
  await upstream?.close();
});

async function relay(next: Script): Promise<{ body: Buffer; requestId: string }> {
  script = next;
  const requestId = `sse-prop-${++counter}`;
  const response = await fetch(`${gateway.url}/agents/support/api/v1/chat/stream`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-request-id': requestId },
    body: '{"message":"hi"}',
  });
  expect(response.status).toBe(200);
  return { body: Buffer.from(await response.arrayBuffer()), requestId };
}

/** Runner output that stops anywhere: mid-line, after a bare CR (half a CRLF?), mid-event, between events. */
const streamPrefix = fc
  .tuple(fc.oneof(sseGarbage, wellFormedStream.map((s) => s.bytes)), fc.constantFrom('', '\r', '\n', 'data: x\r', 'data: x', 'event: token\r\ndata: {}\r'))
  .map(([bytes, tail]) => Buffer.concat([bytes, Buffer.from(tail)]));

function withoutPings(body: Buffer): Buffer {
  return Buffer.from(body.toString('latin1').replaceAll(': ping\n\n', '').replaceAll(': ping\n', ''), 'latin1');
}

describe('SSE relayed through the gateway (property)', () => {
  it('relays any chunking byte for byte and records the done event’s tokens_used', async () => {
    const expectedTokens = new Map<string, number | null>();
    await fc.assert(
      fc.asyncProperty(wellFormedStream, cutsFor(2_000), async (stream, cuts) => {
        // A stream must end with done to be complete; append one when the generator made none.
        const done = stream.events.some((e) => e.name === 'done');
        const bytes = done ? stream.bytes : Buffer.concat([stream.bytes, Buffer.from('event: done\ndata: {"latency_ms":1}\n\n')]);
        const { body, requestId } = await relay({ chunks: splitAtInside(bytes, cuts), pauseAfterFirstMs: 0, end: 'end' });
        expect(withoutPings(body).equals(bytes)).toBe(true);
        expectedTokens.set(requestId, done ? stream.tokensUsed : null);
      }),
      { numRuns: 60 },
    );
    const records = await waitForAuditRecords([...expectedTokens.keys()]);
    for (const [id, tokens] of expectedTokens) {
      expect(records.get(id), id).toMatchObject({ status: 200, outcome: 'ok', tokens_used: tokens });
    }
  });

  it('a heartbeat written while the runner is silent never splits or merges the events around it', async () => {
    await fc.assert(
      fc.asyncProperty(streamPrefix, fc.constantFrom('', '\n', '\r\n'), wellFormedStream, async (before, lead, after) => {
        // `lead` may complete a CRLF that `before` began. Whatever `before` left open is closed
        // before the final done, so the stream always ends normally.
        const rest = Buffer.concat([Buffer.from(lead), after.bytes, Buffer.from('\n\nevent: done\ndata: {}\n\n')]);
        const { body } = await relay({ chunks: [before, rest], pauseAfterFirstMs: HEARTBEAT_MS * 3, end: 'end' });
        const sent = Buffer.concat([before, rest]);
        expect(parseSseReference(body).events).toEqual(parseSseReference(sent).events);
      }),
      // Every run waits out a heartbeat: report the first counterexample instead of shrinking for minutes.
      { numRuns: 40, endOnFailure: true },
    );
  });

  it('after a reset mid-stream the final error event parses on its own, whatever came before it', async () => {
    await fc.assert(
      fc.asyncProperty(streamPrefix, async (before) => {
        fc.pre(before.length > 0);
        const { body, requestId } = await relay({ chunks: [before], pauseAfterFirstMs: 0, end: 'reset' });
        expect(body.subarray(0, before.length).equals(before)).toBe(true);
        const last = parseSseReference(body).events.at(-1);
        expect(last?.name).toBe('error');
        expect(JSON.parse(last!.data)).toMatchObject({ type: 'upstream_error', request_id: requestId });
      }),
      { numRuns: 60 },
    );
  });
});

async function waitForAuditRecords(ids: string[]): Promise<Map<string, AuditRecord>> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const text = await readFile(join(gateway.dir, 'audit.jsonl'), 'utf8').catch(() => '');
    const records = new Map(text.split('\n').filter(Boolean).map((line) => JSON.parse(line) as AuditRecord).map((r) => [r.request_id, r]));
    if (ids.every((id) => records.has(id)) || Date.now() > deadline) return records;
    await sleep(50);
  }
}
