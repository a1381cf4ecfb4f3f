// The audit log against a real Redis: the stream layout and MAXLEN, outages (server stopped,
// server hung) with records arriving throughout, a SIGKILLed gateway's spool replayed by the
// next one, and `audit tail` reading the stream.
import { spawn } from 'node:child_process';
import { trackChildProcess } from '../helpers/child-processes.js';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { toAuditLine, type AuditRecord } from '../../src/audit/audit-record.js';
import { spoolPathFor } from '../../src/audit/audit-spool.js';
import { BatchingAuditLog } from '../../src/audit/batching-audit-log.js';
import { openAuditLog } from '../../src/audit/open-audit-log.js';
import { tailAuditRecords } from '../../src/audit/read-audit-records.js';
import { RedisStreamAuditSink } from '../../src/audit/redis-stream-audit-sink.js';
import { systemClock } from '../../src/clock.js';
import { parseConfig } from '../../src/config/load-config.js';
import { silentLogger } from '../../src/logger.js';
import { createRedisClientFactory } from '../../src/redis/redis-client.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { dedupe, idOfLine, makeLines, makeRecord, makeRecords } from '../helpers/audit-records.js';
import { sleep } from '../helpers/wait.js';
import { fileExists } from '../helpers/files.js';
import { runAuditTail } from '../helpers/audit-tail.js';
import { auditCount, redisErrorCount } from '../helpers/metric-counts.js';

const STREAM = 'agentgw:audit';
const agents = { support: { upstream: 'http://127.0.0.1:8081/api/v1' } };

/** A client set up like the gateway's: fail fast while disconnected, reconnect quickly. */
function gatewayClient(url: string): Redis {
  const client = new Redis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: (n) => Math.min(50 * n, 300) });
  client.on('error', () => {});
  return client;
}

describe('audit log with the Redis stream sink', () => {
  let redis: TestRedis;
  let dataDir: string;
  let dir: string;
  let admin: Redis;
  const clients: Redis[] = [];

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'agentgw-audit-redis-data-'));
    // Persist across stop()/start() so records written before an outage are still there after it.
    redis = await startRedis({ controllable: true, extraArgs: ['--appendonly', 'yes', '--appendfsync', 'always', '--dir', dataDir] });
  });
  afterAll(async () => {
    await redis?.close();
    await rm(dataDir, { recursive: true, force: true });
  });
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'agentgw-audit-'));
    admin = new Redis(redis.url, { maxRetriesPerRequest: 1 });
    admin.on('error', () => {});
    await admin.del(STREAM);
  });
  afterEach(async () => {
    admin.disconnect();
    for (const client of clients.splice(0)) client.disconnect();
    await rm(dir, { recursive: true, force: true });
  });

  async function client(): Promise<Redis> {
    const c = gatewayClient(redis.url);
    clients.push(c);
    if (c.status !== 'ready') await once(c, 'ready');
    return c;
  }

  async function streamRecords(): Promise<AuditRecord[]> {
    const entries = await admin.xrange(STREAM, '-', '+');
    return entries.map(([, fields]) => {
      expect(fields[0]).toBe('record');
      return JSON.parse(fields[1]!) as AuditRecord;
    });
  }
  const streamIds = async (): Promise<string[]> => (await streamRecords()).map((r) => r.id);

  function config(audit: Record<string, unknown>) {
    return parseConfig({ agents, redis: { url: redis.url }, audit: { redis_stream: STREAM, spool: join(dir, 'spool.jsonl'), ...audit } }, 'test', {});
  }

  it('adds one entry per record (field "record" = the JSON record) and caps the stream with MAXLEN ~', async () => {
    const log = openAuditLog(config({ max_len: 100, batch_size: 50 }), { redis: await client(), logger: silentLogger, clock: systemClock });
    const records = makeRecords(0, 1000);
    for (const record of records) log.record(record);
    await log.close();
    const stored = await streamRecords();
    // Approximate trimming removes whole stream nodes (100 entries by default): at least maxLen stay.
    expect(stored.length).toBeGreaterThanOrEqual(100);
    expect(stored.length).toBeLessThan(300);
    expect(stored).toEqual(records.slice(-stored.length));
  });

  it('loses nothing while Redis is stopped for seconds and records keep coming; order kept', async () => {
    const log = openAuditLog(config({ batch_size: 20, flush_interval: '5ms' }), { redis: await client(), logger: silentLogger, clock: systemClock, retryMinMs: 50, retryMaxMs: 400 });
    const spooledBefore = await auditCount('redis', 'spooled');
    const replayedBefore = await auditCount('redis', 'replayed');
    const redisErrorsBefore = await redisErrorCount('audit');
    let n = 0;
    const produce = async (durationMs: number): Promise<void> => {
      const until = Date.now() + durationMs;
      while (Date.now() < until) {
        for (let i = 0; i < 5; i++) log.record(makeRecord(n++));
        await sleep(2);
      }
    };
    await produce(300);
    const stopping = redis.stop();
    await produce(200);
    await stopping;
    await produce(2_000);
    const starting = redis.start();
    await produce(200);
    await starting;
    await produce(500);
    const expected = makeRecords(0, n).map((r) => r.id);
    await vi.waitFor(
      async () => {
        await log.flush();
        expect(log.spoolingSinks()).toEqual([]);
        expect(dedupe(await streamIds())).toEqual(expected);
      },
      { timeout: 15_000, interval: 200 },
    );
    await log.close();
    expect(await auditCount('redis', 'spooled')).toBeGreaterThan(spooledBefore);
    expect(await auditCount('redis', 'replayed')).toBeGreaterThan(replayedBefore);
    // Each failed batch write is one Redis error, op="audit" (while stopped, the sink tries
    // the first batch and then the retries; the rest goes straight to the spool).
    expect(await redisErrorCount('audit')).toBeGreaterThan(redisErrorsBefore);
    expect(await fileExists(spoolPathFor(join(dir, 'spool.jsonl'), 'redis'))).toBe(false);
  });

  it('spools when Redis hangs (batch timeout) and replays after it wakes up', async () => {
    const redisErrorsBefore = await redisErrorCount('audit');
    const log = new BatchingAuditLog({
      sinks: [new RedisStreamAuditSink({ redis: await client(), streamKey: STREAM, maxLen: 1_000_000, commandTimeoutMs: 150 })],
      spoolPath: join(dir, 'spool.jsonl'),
      batchSize: 10,
      flushIntervalMs: 5,
      maxQueue: 50,
      logger: silentLogger,
      clock: systemClock,
      retryMinMs: 50,
      retryMaxMs: 300,
    });
    let n = 0;
    for (; n < 50; n++) log.record(makeRecord(n));
    await log.flush();
    redis.pause();
    try {
      for (let round = 0; round < 40; round++) {
        for (let i = 0; i < 10; i++) log.record(makeRecord(n++));
        await sleep(20);
      }
      await log.flush();
      expect(log.spoolingSinks()).toEqual(['redis']);
      // The batch that timed out is a Redis error.
      expect((await redisErrorCount('audit')) - redisErrorsBefore).toBeGreaterThanOrEqual(1);
    } finally {
      redis.resume();
    }
    for (let i = 0; i < 20; i++) log.record(makeRecord(n++));
    const expected = makeRecords(0, n).map((r) => r.id);
    await vi.waitFor(
      async () => {
        await log.flush();
        expect(dedupe(await streamIds())).toEqual(expected);
      },
      { timeout: 10_000, interval: 100 },
    );
    await log.close();
  });

  it('after a SIGKILLed gateway, the next one replays its spool: every spooled record reaches the stream', async () => {
    const spool = join(dir, 'spool.jsonl');
    await redis.stop();
    let spoolLeftByChild = false;
    try {
      // The child writes records with Redis down, reports once 200 are spooled, keeps writing, and is killed mid-flight.
      const script = `
        import { Redis } from 'ioredis';
        import { openAuditLog } from './dist/audit/open-audit-log.js';
        import { parseConfig } from './dist/config/load-config.js';
        import { metrics } from './dist/metrics/metrics.js';
        import { silentLogger } from './dist/logger.js';
        import { systemClock } from './dist/clock.js';
        const [url, spool] = process.argv.slice(1);
        const config = parseConfig({ agents: ${JSON.stringify(agents)}, redis: { url }, audit: { redis_stream: '${STREAM}', spool, batch_size: 20, flush_interval: '5ms' } }, 'child', {});
        const redis = new Redis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: () => 1000 });
        redis.on('error', () => {});
        const log = openAuditLog(config, { redis, logger: silentLogger, clock: systemClock, retryMinMs: 60000, retryMaxMs: 60000 });
        const record = (n) => ({ id: 'crash-' + String(n).padStart(6, '0'), request_id: 'client-' + n, ts: new Date().toISOString(), key_id: 'k', account: 'a', plan: 'p', agent: 'support', route: 'chat', status: 200, outcome: 'ok', tokens_used: null, latency_ms: 1, upstream_latency_ms: 1, bytes_in: 1, bytes_out: 1, client_ip: '127.0.0.1', user_id: null, session_id: null });
        let n = 0;
        for (; n < 200; n++) log.record(record(n));
        for (;;) {
          const spooled = (await metrics.auditRecords.get()).values.find((v) => v.labels.sink === 'redis' && v.labels.result === 'spooled');
          if (spooled && spooled.value >= 200) break;
          await new Promise((r) => setTimeout(r, 5));
        }
        process.stdout.write('SPOOLED\\n');
        setInterval(() => { for (let i = 0; i < 20; i++) log.record(record(n++)); }, 1);
      `;
      const child = trackChildProcess(spawn(process.execPath, ['--input-type=module', '-e', script, '--', redis.url, spool], { cwd: process.cwd(), stdio: ['ignore', 'pipe', 'inherit'] }));
      let output = '';
      child.stdout.setEncoding('utf8');
      await new Promise<void>((resolve, reject) => {
        child.once('exit', (code) => reject(new Error(`child exited early (${code}): ${output}`)));
        child.stdout.on('data', (chunk: string) => {
          output += chunk;
          if (output.includes('SPOOLED')) resolve();
        });
      });
      await sleep(150); // more batches in flight, some mid-append when the kill lands
      const exited = once(child, 'exit');
      child.kill('SIGKILL');
      const [, signal] = (await exited) as [number | null, string | null];
      expect(signal).toBe('SIGKILL');
      spoolLeftByChild = await fileExists(spoolPathFor(spool, 'redis'));
    } finally {
      await redis.start();
    }
    expect(spoolLeftByChild).toBe(true);

    const log = openAuditLog(config({}), { redis: await client(), logger: silentLogger, clock: systemClock, retryMinMs: 50, retryMaxMs: 200 });
    log.record(makeRecord(0, { id: 'after-restart' }));
    await vi.waitFor(
      async () => {
        await log.flush();
        expect(log.spoolingSinks()).toEqual([]);
      },
      { timeout: 10_000, interval: 100 },
    );
    await log.close();
    const ids = dedupe(await streamIds());
    const crashIds = ids.filter((id) => id.startsWith('crash-'));
    // Every acknowledged record (the first 200) is there, and spooled ones come in order.
    expect(crashIds.slice(0, 200)).toEqual(Array.from({ length: 200 }, (_, i) => `crash-${String(i).padStart(6, '0')}`));
    expect(crashIds).toEqual([...crashIds].sort());
    expect(crashIds.length).toBeGreaterThan(200);
    // The spool of the crashed run went ahead of the new record.
    expect(ids.at(-1)).toBe('after-restart');
    expect(await fileExists(spoolPathFor(spool, 'redis'))).toBe(false);
    expect(await fileExists(`${spoolPathFor(spool, 'redis')}.replaying`)).toBe(false);
  });

  it('a batch whose reply comes while the event loop is blocked past the timeout counts as written, not failed', async () => {
    const sink = new RedisStreamAuditSink({ redis: admin, streamKey: STREAM, maxLen: 10_000, commandTimeoutMs: 50 });
    const writing = sink.write(makeLines(0, 256));
    await new Promise((resolve) => process.nextTick(resolve)); // the command is on the wire
    // Busy for 4× the timeout, as when thousands of streams close at once: the reply arrives
    // meanwhile and waits unread in the socket. A bare timer would call the batch failed
    // (and the channel would spool, then replay, a batch Redis already holds).
    const busyUntil = Date.now() + 200;
    while (Date.now() < busyUntil) {
      // spin
    }
    await expect(writing).resolves.toBeUndefined();
    expect(await admin.xlen(STREAM)).toBe(256);
  });

  describe('audit tail', () => {
    let configPath: string;
    beforeEach(async () => {
      configPath = join(dir, 'gateway.yaml');
      await writeFile(configPath, `agents:\n  support: { upstream: "http://127.0.0.1:8081/api/v1" }\nredis: { url: "${redis.url}" }\naudit: { redis_stream: "${STREAM}" }\n`);
      const sink = new RedisStreamAuditSink({ redis: admin, streamKey: STREAM, maxLen: 10_000, commandTimeoutMs: 1_000 });
      await sink.write(makeLines(0, 300));
    });

    it('prints the last --limit records oldest first, as JSON Lines', async () => {
      const { lines, exitCode } = await runAuditTail(['--config', configPath, '--limit', '5']);
      expect(exitCode).toBeUndefined();
      expect(lines.map((l) => JSON.parse(l))).toEqual(makeRecords(295, 5));
    });

    it('defaults to 20 records', async () => {
      const { lines } = await runAuditTail(['--config', configPath]);
      expect(lines.map(idOfLine)).toEqual(makeRecords(280, 20).map((r) => r.id));
    });

    it('filters by --key across pages of the stream', async () => {
      await new RedisStreamAuditSink({ redis: admin, streamKey: STREAM, maxLen: 10_000, commandTimeoutMs: 1_000 }).write(
        Array.from({ length: 500 }, (_, i) => toAuditLine(makeRecord(1000 + i, { key_id: 'key_noise' }))),
      );
      const { lines } = await runAuditTail(['--config', configPath, '--key', 'key_odd', '--limit', '3']);
      expect(lines.map(idOfLine)).toEqual([295, 297, 299].map((n) => makeRecord(n).id));
    });

    it('fails with exit code 1 and a readable message when Redis is unreachable', async () => {
      await writeFile(configPath, `agents:\n  support: { upstream: "http://127.0.0.1:8081/api/v1" }\nredis: { url: "redis://127.0.0.1:1/0" }\naudit: { redis_stream: "${STREAM}" }\n`);
      const { exitCode, stderr } = await runAuditTail(['--config', configPath]);
      expect(exitCode).toBe(1);
      expect(stderr).toMatch(/audit tail/);
    });

    it('--follow prints records added later until stopped', async () => {
      const seen: string[] = [];
      const controller = new AbortController();
      const cfg = parseConfig({ agents, redis: { url: redis.url }, audit: { redis_stream: STREAM } }, 'test', {});
      const following = tailAuditRecords(cfg, { limit: 1, keyId: 'key_even', follow: true, signal: controller.signal, redis: createRedisClientFactory(cfg.redis!, silentLogger) }, (line) => void seen.push(idOfLine(line)));
      await vi.waitFor(() => expect(seen).toEqual([makeRecord(298).id]));
      await new RedisStreamAuditSink({ redis: admin, streamKey: STREAM, maxLen: 10_000, commandTimeoutMs: 1_000 }).write(makeLines(300, 4));
      await vi.waitFor(() => expect(seen).toEqual([298, 300, 302].map((n) => makeRecord(n).id)));
      controller.abort();
      await following;
    });
  });
});
