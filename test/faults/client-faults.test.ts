// Client faults against gateway processes with real Redis and a fake runner: 1,000 streams
// aborted at random moments, slowloris headers and bodies, 10,000 idle connections, and a
// client that reads a stream very slowly. Checked on the runner (no upstream request left
// open), in the process (descriptors, handles, RSS) and in the audit sinks.
import { spawn, execFileSync } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditRecord } from '../../src/audit/audit-record.js';
import type { RedisClient } from '../../src/redis/redis-client.js';
import { parseSseReference } from '../helpers/reference-sse.js';
import { trackChildProcess } from '../helpers/child-processes.js';
import type { TestRedis } from '../helpers/redis.js';
import { startFaultBed, type FaultBed } from '../helpers/faults/fault-bed.js';
import { describeSample, MB, type FaultGateway } from '../helpers/faults/fault-gateway.js';
import { FIREHOSE_EVENT, type FaultRunner } from '../helpers/faults/fault-runner.js';
import { createKeys } from '../helpers/faults/create-keys.js';
import { reportRow } from '../helpers/faults/report.js';
import { answerSummary, startTraffic, type Outcome } from '../helpers/faults/traffic.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { readAuditFile, readAuditStream } from '../helpers/audit-records.js';

const STREAM_KEY = 'faults:clients:audit';
const IDLE_CONNECTIONS_WANTED = Number(process.env.FAULT_IDLE_CONNECTIONS ?? 10_000);
const ABORTED_STREAMS = Number(process.env.FAULT_ABORTED_STREAMS ?? 1_000);
const FIREHOSE_BYTES = 64 * MB;

let bed: FaultBed;
let dir: string;
let redis: TestRedis;
let inspect: RedisClient;
let runner: FaultRunner;
/** Default timeouts: holds idle connections while 10,000 of them are opened. */
let gateway: FaultGateway;
/** Short timeouts (headers 2 s, request 3 s): for slowloris clients. */
let strict: FaultGateway;
let key: string;
let hardFdLimit: number;

function documentFor(name: string, listen: Record<string, unknown>): Record<string, unknown> {
  return {
    listen,
    redis: { url: redis.url, prefix: 'faults-cl:' },
    keys: { store: 'file', file: join(dir, 'keys.json') },
    plans: { bulk: { windows: [{ requests: 1_000_000, per: '1m' }] } },
    agents: { ok: { upstream: runner.baseUrl('ok') }, slow: { upstream: runner.baseUrl('slow') }, firehose: { upstream: runner.baseUrl('firehose') } },
    stream: { heartbeat: '200ms', idle_timeout: '1s', max_duration: '60s' },
    audit: { file: join(dir, `${name}-audit.jsonl`), redis_stream: `${STREAM_KEY}:${name}`, spool: join(dir, `${name}-spool.jsonl`) },
    shutdown_grace: '2s',
  };
}

beforeAll(async () => {
  bed = await startFaultBed({ name: 'clients', prefix: 'faults-cl:' });
  ({ dir, redis, runner, inspect } = bed);
  const hard = execFileSync('bash', ['-c', 'ulimit -Hn']).toString().trim();
  hardFdLimit = hard === 'unlimited' ? Number.POSITIVE_INFINITY : Number(hard) || 1_024;
  const main = documentFor('main', { headers_timeout: '30s', request_timeout: '60s' });
  key = (await createKeys(main, [{ account: 'clients', plan: 'bulk', agents: ['ok', 'slow', 'firehose'] }]))[0]!;
  [gateway, strict] = await Promise.all([
    bed.startGateway({ name: 'main', config: main, fdLimit: 65_536 }),
    bed.startGateway({ name: 'strict', config: documentFor('strict', { headers_timeout: '2s', request_timeout: '3s' }) }),
  ]);
  // Warm both up: compiled code, pools, limiter on Redis.
  await Promise.all(
    [gateway, strict].map((g, n) => startTraffic({ baseUrl: g.url, key, concurrency: 10, count: 100, idPrefix: `cl-warm${n}`, plan: (i) => ({ agent: 'ok', route: i % 2 ? 'chat' : 'chat/stream' }) }).done),
  );
});

afterAll(() => bed?.close());

/** mulberry32: random but reproducible abort moments (the seed is in every failure message). */
function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

async function goodRequests(target: FaultGateway, count: number, idPrefix: string): Promise<Outcome[]> {
  return startTraffic({ baseUrl: target.url, key, concurrency: 4, count, idPrefix, plan: (i) => ({ agent: 'ok', route: i % 2 ? 'chat' : 'chat/stream' }) }).done;
}

async function waitForRecords(path: string, ids: string[], timeoutMs = 5_000): Promise<Map<string, AuditRecord>> {
  return waitFor(
    'audit records',
    async () => {
      const records = new Map((await readAuditFile(path)).map((r) => [r.request_id, r]));
      return ids.every((id) => records.has(id)) ? records : undefined;
    },
    timeoutMs,
  ).catch(async () => new Map((await readAuditFile(path)).map((r) => [r.request_id, r])));
}

describe('clients misbehaving (gateway processes, real Redis)', () => {
  it(`${ABORTED_STREAMS} streams aborted at random moments leave no upstream request open and each keeps its audit record`, async () => {
    const before = await gateway.sample();
    const seed = Number(process.env.FAULT_SEED ?? Date.now() % 1_000_000);
    const random = seededRandom(seed);
    const abortAt = Array.from({ length: ABORTED_STREAMS }, () => Math.floor(random() * 700));
    // Each runner stream would last 10 s: anything the gateway fails to abort is still open afterwards.
    const body = JSON.stringify({ message: 'hi', runner: { tokens: 1_000, intervalMs: 10 } });
    const traffic = startTraffic({ baseUrl: gateway.url, key, concurrency: 100, count: ABORTED_STREAMS, idPrefix: 'cl-abort', plan: (i) => ({ agent: 'slow', route: 'chat/stream', body, abortAfterMs: abortAt[i] }) });
    const outcomes = await traffic.done;
    const context = `seed ${seed}`;
    expect(outcomes.every((o) => o.aborted && o.status !== 0 ? o.status === 200 : true), context).toBe(true);
    // A stream that was not aborted says how it ended instead (status, transport error, events).
    const notAborted = outcomes.filter((o) => !o.aborted).map((o) => ({ id: o.id, status: o.status, transportError: o.transportError, latencyMs: Math.round(o.latencyMs), events: o.events.slice(-3), text: o.text?.slice(0, 200) }));
    expect(notAborted, context).toEqual([]);

    await waitFor(`the runner to see every stream closed (${context})`, () => runner.open('slow') === 0, 2_000).catch(() => undefined);
    expect(runner.open('slow'), `upstream requests still open 2 s after the last abort (${context})`).toBe(0);
    const after = await waitFor('no open streams in the gateway', async () => {
      const sample = await gateway.sample();
      return sample.activeStreams === 0 ? sample : undefined;
    }, 2_000);

    // Every request the runner saw went past authentication, so it has a record (client_closed).
    const forwarded = runner.upstream.requests.map((r) => String(r.headers['x-request-id'])).filter((id) => id.startsWith('cl-abort-'));
    expect(forwarded.length).toBeGreaterThan(ABORTED_STREAMS / 2);
    const records = await waitForRecords(join(dir, 'main-audit.jsonl'), forwarded);
    const unrecorded = forwarded.filter((id) => !records.has(id));
    const outcomesOf = new Set(forwarded.filter((id) => records.has(id)).map((id) => `${records.get(id)!.status} ${records.get(id)!.outcome}`));
    // Aborted upstream requests leave no sockets behind: what remains open at first are idle
    // keep-alive connections to the runner, which undici closes by the runner's Keep-Alive hint.
    const settled = await waitFor('the gateway’s descriptors back near their baseline', async () => {
      const sample = await gateway.sample();
      return sample.openFds < before.openFds + 40 ? sample : undefined;
    }, 8_000).catch(() => undefined);
    reportRow({
      fault: `${ABORTED_STREAMS} streams aborted at random moments (0–700 ms)`,
      answered: `${answerSummary(outcomes.filter((o) => o.status > 0))}; ${outcomes.filter((o) => o.status === 0).length} aborted before the response head; runner: ${runner.open('slow')} left open`,
      affected: `${ABORTED_STREAMS}/${ABORTED_STREAMS} (by the client); records: ${[...outcomesOf].join(', ')}`,
      auditLost: unrecorded.length,
      memory: `rss ${(before.rssBytes / MB).toFixed(0)} → ${(after.rssBytes / MB).toFixed(0)} MB; fds ${before.openFds} → ${after.openFds} (idle keep-alive sockets to the runner) → ${settled?.openFds ?? '?'} settled; handles ${before.activeHandles} → ${after.activeHandles}`,
    });
    expect(unrecorded, `forwarded upstream but no audit record (${context})`).toEqual([]);
    expect([...outcomesOf].every((o) => o.endsWith('client_closed')), [...outcomesOf].join(', ')).toBe(true);
    expect(after.activeHandles).toBeLessThan(before.activeHandles + 40);
    expect(settled, `${describeSample(before)} → ${describeSample(after)}`).toBeDefined();
    for (const o of await goodRequests(gateway, 20, 'cl-abort-after')) expect(o.status).toBe(200);
  });

  it('slowloris headers and bodies are closed by the server timeouts, and good requests are served meanwhile', async () => {
    const before = await strict.sample();
    const opened = performance.now();
    const trickle = (lines: string[], intervalMs: number): Promise<{ closedAfterMs: number; answer: string }> =>
      new Promise((resolve) => {
        const socket: Socket = connect(strict.port, '127.0.0.1');
        let answer = '';
        let i = 0;
        const timer = setInterval(() => {
          if (socket.writable) socket.write(lines[Math.min(i++, lines.length - 1)]!);
        }, intervalMs);
        socket.on('data', (chunk) => (answer += chunk.toString('latin1')));
        socket.on('error', () => {});
        socket.on('close', () => {
          clearInterval(timer);
          resolve({ closedAfterMs: performance.now() - opened, answer });
        });
      });
    // Headers that never end: one more header line every 300 ms.
    const slowHeaders = Array.from({ length: 40 }, (_, n) => trickle([`POST /agents/ok/api/v1/chat HTTP/1.1\r\nHost: x\r\n`, `X-Slow-${n}: y\r\n`], 300));
    // Complete headers (a valid key: these get past authentication), then a body at a byte per 300 ms.
    const slowBodies = Array.from({ length: 40 }, (_, n) =>
      trickle(
        [
          `POST /agents/ok/api/v1/chat HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\nX-Request-Id: cl-slowbody-${n}\r\n\r\n`,
          'a',
        ],
        300,
      ),
    );
    const served = await goodRequests(strict, 40, 'cl-loris-good');
    const headerResults = await Promise.all(slowHeaders);
    const bodyResults = await Promise.all(slowBodies);
    const after = await strict.sample();

    for (const o of served) expect(o.status).toBe(200);
    // A trickle never stops on its own (it repeats its last line for ever), so every close is
    // the server's; the 408 request_timeout it answered first says which of its limits closed
    // it: headers_timeout (2 s) / request_timeout (3 s), not a later one. No bound on when:
    // a loaded machine may run the server's once-a-second check late (the times are reported).
    for (const r of [...headerResults, ...bodyResults]) {
      expect(r.answer).toMatch(/^HTTP\/1\.1 408 /);
      expect(r.answer).toContain('"type":"request_timeout"');
    }
    const records = await waitForRecords(join(dir, 'strict-audit.jsonl'), bodyResults.map((_, n) => `cl-slowbody-${n}`));
    const bodyRecords = bodyResults.map((_, n) => records.get(`cl-slowbody-${n}`));
    const bodyAnswers = new Set(bodyResults.map((r) => r.answer.split('\r\n')[0] || '(closed without an answer)'));
    reportRow({
      fault: 'slowloris: 40 header trickles + 40 body trickles (headers_timeout 2 s, request_timeout 3 s)',
      answered: `headers: ${[...new Set(headerResults.map((r) => r.answer.split('\r\n')[0]))].join(', ')} after ≤ ${Math.round(Math.max(...headerResults.map((r) => r.closedAfterMs)))} ms; bodies: ${[...bodyAnswers].join(', ')} after ≤ ${Math.round(Math.max(...bodyResults.map((r) => r.closedAfterMs)))} ms`,
      affected: `80/80 slow clients closed; 0/${served.length} good requests affected`,
      auditLost: bodyRecords.filter((r) => r === undefined).length,
      memory: `rss ${(after.rssBytes / MB).toFixed(0)} MB (before ${(before.rssBytes / MB).toFixed(0)}), fds ${before.openFds} → ${after.openFds}`,
    });
    // The trickled bodies got past authentication: each has its record.
    expect(bodyRecords.map((r) => r?.outcome)).toEqual(bodyResults.map(() => 'client_closed'));
    expect(after.openFds).toBeLessThan(before.openFds + 20);
  });

  it('10,000 idle connections (or as many as the descriptor limit allows) cost bounded memory and do not stop good requests', async () => {
    // As many as the hard descriptor limit allows the gateway (node raises its soft limit to it), up to 10,000.
    const count = Math.min(IDLE_CONNECTIONS_WANTED, hardFdLimit - 300);
    expect(count, `hard descriptor limit ${hardFdLimit}`).toBeGreaterThanOrEqual(100);
    const before = await gateway.sample();
    const clients = trackChildProcess(
      spawn('bash', ['-c', `ulimit -n ${count + 500} 2>/dev/null || ulimit -n "$(ulimit -Hn)"; exec "$0" "$@"`, process.execPath, join(import.meta.dirname, '../helpers/faults/idle-clients.mjs'), String(gateway.port), String(count)], {
        stdio: ['ignore', 'pipe', 'inherit'],
      }),
    );
    let report = '';
    clients.stdout!.on('data', (chunk: Buffer) => (report += chunk.toString('utf8')));
    const exited = new Promise<void>((resolve) => clients.on('exit', () => resolve()));
    try {
      const opened = await waitFor('every idle connection to open', () => (report.includes('"opened"') ? (JSON.parse(report.split('\n')[0]!) as { opened: number; open: number; failed: number; ms: number }) : undefined), 60_000, 100);
      // Connected on the client side means in the kernel's accept queue: wait for the gateway to take them all.
      const held = await waitFor(
        'the gateway to accept every idle connection',
        async () => {
          const sample = await gateway.sample();
          return sample.openFds >= count ? sample : undefined;
        },
        15_000,
        100,
      ).catch(() => gateway.sample());
      const served = await goodRequests(gateway, 40, 'cl-idle-good');
      clients.kill('SIGTERM');
      await exited;
      const after = await waitFor('the descriptors of the idle connections to be released', async () => {
        const sample = await gateway.sample();
        return sample.openFds < before.openFds + 50 ? sample : undefined;
      }, 5_000);
      reportRow({
        fault: `${opened.opened} idle connections (never send a byte)`,
        answered: `all held at once (${held.openFds} fds open in the gateway); good requests: ${answerSummary(served)}`,
        affected: `0/${served.length} good requests`,
        auditLost: 0,
        memory: `rss ${(before.rssBytes / MB).toFixed(0)} → ${(held.rssBytes / MB).toFixed(0)} MB while held (${(((held.rssBytes - before.rssBytes) / opened.opened) / 1024).toFixed(1)} KB each) → ${(after.rssBytes / MB).toFixed(0)} MB after; fds ${before.openFds} → ${held.openFds} → ${after.openFds}`,
      });
      expect(opened).toMatchObject({ opened: count, open: count, failed: 0 });
      expect(held.openFds).toBeGreaterThanOrEqual(count);
      for (const o of served) expect(o.status).toBe(200);
      expect(held.rssBytes - before.rssBytes, `${describeSample(before)} → ${describeSample(held)}`).toBeLessThan(count * 16 * 1024);
      expect(after.activeHandles).toBeLessThan(before.activeHandles + 20);
    } finally {
      clients.kill('SIGKILL');
    }
  });

  it('a client reading a stream very slowly: the runner is held back, memory stays bounded, no timeout fires', async () => {
    const before = await gateway.sample();
    const writtenBefore = runner.firehoseWritten();
    const chunks: Buffer[] = [];
    let response!: import('node:http').IncomingMessage;
    await new Promise<void>((resolve, reject) => {
      const req = httpRequest(`${gateway.url}/agents/firehose/api/v1/chat/stream`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-request-id': 'cl-slow-reader' } }, (res) => {
        response = res;
        resolve();
      });
      req.on('error', reject);
      req.end(JSON.stringify({ message: 'hi', runner: { bytes: FIREHOSE_BYTES } }));
    });
    // Read one chunk every 200 ms for 2.5 s: far slower than the runner writes, and longer than idle_timeout (1 s).
    let peakRss = before.rssBytes;
    const plateau: number[] = [];
    for (let i = 0; i < 12; i++) {
      const chunk = response.read() as Buffer | null;
      if (chunk) chunks.push(chunk);
      await sleep(200);
      if (i >= 9) plateau.push(runner.firehoseWritten() - writtenBefore);
      peakRss = Math.max(peakRss, (await gateway.sample()).rssBytes);
    }
    const heldBack = plateau.at(-1)!;
    // Now read at full speed to the end.
    response.on('data', (chunk: Buffer) => chunks.push(chunk));
    await new Promise<void>((resolve) => response.on('end', resolve));
    const body = Buffer.concat(chunks);
    const events = parseSseReference(body).events;
    const after = await gateway.sample();
    reportRow({
      fault: 'slow reader (one read per 200 ms for 2.5 s, then full speed) of a 64 MB stream',
      answered: `200, ${events.length} events ending with ${events.at(-1)?.name}, ${(body.length / MB).toFixed(1)} MB`,
      affected: '0/1 (no timeout, nothing dropped)',
      auditLost: 0,
      memory: `runner held at ${(heldBack / MB).toFixed(1)} MB written while the client stalled; gateway rss ${(before.rssBytes / MB).toFixed(0)} → peak ${(peakRss / MB).toFixed(0)} → ${(after.rssBytes / MB).toFixed(0)} MB`,
    });
    // Back-pressure: while the client stalls, the runner is paused well short of the whole stream…
    // (each slow read lets a little through: a few buffers' worth over the last 400 ms — more
    // since Node 22, whose streams default to a 64 KiB highWaterMark (1.76 MB seen there);
    // the runner being held short of its 64 MB is the check after this one)
    expect(plateau.at(-1)! - plateau[0]!).toBeLessThan(4 * MB);
    expect(heldBack).toBeLessThan(FIREHOSE_BYTES / 2);
    // …and the gateway holds only a bounded part of what is in flight.
    expect(peakRss - before.rssBytes).toBeLessThan(32 * MB);
    // The idle timer measures the runner's silence, not ours: the stream completes.
    expect(events.filter((e) => e.name === 'error')).toEqual([]);
    expect(events.at(-1)?.name).toBe('done');
    expect(events.filter((e) => e.name === 'token').length).toBe(Math.floor(FIREHOSE_BYTES / FIREHOSE_EVENT.length));
  });

  it('afterwards: both processes alive, every answered request recorded in both sinks', async () => {
    expect(gateway.alive() && strict.alive()).toBe(true);
    for (const [name, g] of [['main', gateway], ['strict', strict]] as const) {
      const file = await readAuditFile(join(dir, `${name}-audit.jsonl`));
      const stream = await waitFor(`the ${name} stream to catch up with its file`, async () => {
        const s = await readAuditStream(inspect, `${STREAM_KEY}:${name}`);
        return s.length >= file.length ? s : undefined;
      }, 5_000);
      const inStream = new Set(stream.map((r) => r.id));
      expect(file.filter((r) => !inStream.has(r.id)).map((r) => r.id)).toEqual([]);
      expect(new Set(file.map((r) => r.id)).size).toBe(file.length);
      expect(g.output()).not.toContain('unhandled error in request pipeline');
    }
  });
});
