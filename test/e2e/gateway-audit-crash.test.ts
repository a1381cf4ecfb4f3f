// A gateway process SIGKILLed while Redis is down (docs/design.md, "Usage audit records";
// docs/audit.md "Shutdown"): the records of the outage are in its spool on disk; the next
// gateway process with the same config replays that spool into the stream once Redis is back,
// before its own new records.
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spoolPathFor } from '../../src/audit/audit-spool.js';
import { openCliKeyStore } from '../../src/cli/keys.js';
import { KeyService } from '../../src/keys/key-service.js';
import { createRedisClient, type RedisClient } from '../../src/redis/redis-client.js';
import { parseConfig } from '../../src/config/load-config.js';
import { silentLogger } from '../../src/logger.js';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { postChat } from '../helpers/gateway.js';
import { startGatewayProcess, type GatewayProcess } from '../helpers/gateway-process.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { sleep } from '../helpers/wait.js';
import { idsInStream } from '../helpers/audit-records.js';

const STREAM_KEY = `gwaudit-crash:${randomUUID()}`;
const SECRET_MESSAGE = 'narwhal-opal-message-3c9b12 cancel my subscription';
const FLUSH_INTERVAL_MS = 50;

let dir: string;
let redis: TestRedis;
let inspect: RedisClient;
let upstream: FakeUpstream;
let document: Record<string, unknown>;
let rawKey: string;
let keyId: string;
const processes: GatewayProcess[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'agentgw-audit-crash-'));
  // AOF, so the entries written before the outage survive the Redis restart.
  [redis, upstream] = await Promise.all([
    startRedis({ controllable: true, extraArgs: ['--appendonly', 'yes', '--appendfsync', 'always', '--dir', dir] }),
    startFakeUpstream(),
  ]);
  inspect = createRedisClient({ url: redis.url, prefix: 'gwcrash:', commandTimeoutMs: 2_000 }, silentLogger, 'test-inspect');
  document = {
    redis: { url: redis.url, prefix: 'gwcrash:' },
    keys: { store: 'file', file: join(dir, 'keys.json') },
    rate_limits: { on_store_error: 'allow' },
    plans: { scale: { windows: [] } },
    agents: { support: { upstream: upstream.baseUrl } },
    audit: { redis_stream: STREAM_KEY, spool: join(dir, 'audit-spool.jsonl'), flush_interval: `${FLUSH_INTERVAL_MS}ms` },
    shutdown_grace: '2s',
  };
  const config = parseConfig({ ...document, listen: { port: 0 }, admin: { port: 0 } }, 'test', {});
  const store = await openCliKeyStore(config);
  const created = await new KeyService({ store, config }).createKey({ account: 'crash-acct', plan: 'scale', agents: ['support'] });
  await store.close();
  ({ rawKey, record: { keyId } } = created);
});

afterAll(async () => {
  await Promise.all(processes.map((p) => p.stop('SIGKILL')));
  inspect?.disconnect();
  await upstream?.close();
  await redis?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function send(gateway: GatewayProcess, id: string): Promise<void> {
  const response = await postChat(gateway.url, '/agents/support/api/v1/chat', rawKey, { message: SECRET_MESSAGE }, { 'x-request-id': id });
  await response.arrayBuffer();
  expect(response.status).toBe(200);
  expect(response.headers.get('x-request-id')).toBe(id);
}

/** Stream records' request ids in stream order (may repeat: delivery is at-least-once). */
const streamIds = (): Promise<string[]> => idsInStream(inspect, STREAM_KEY, 'request_id');

async function waitForStream(ids: string[], timeoutMs: number): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const inStream = await streamIds().catch(() => [] as string[]);
    const seen = new Set(inStream);
    const missing = ids.filter((id) => !seen.has(id));
    if (missing.length === 0) return inStream;
    if (Date.now() > deadline) throw new Error(`not in the audit stream after ${timeoutMs} ms: ${missing.join(', ')}`);
    await sleep(50);
  }
}

/** Both files of the Redis sink's spool: the append file and the one a failed replay left. */
async function spoolText(): Promise<string> {
  const path = spoolPathFor(join(dir, 'audit-spool.jsonl'), 'redis');
  // The append file first: a replay renames it to .replaying, so this order can see a record twice but never miss it.
  return (await readFile(path, 'utf8').catch(() => '')) + (await readFile(`${path}.replaying`, 'utf8').catch(() => ''));
}

function spooledOutageIds(text: string): Set<string> {
  return new Set([...text.matchAll(/"request_id":"(crash-down-[ab][0-9])"/g)].map((m) => m[1]!));
}

async function waitForSpool(ids: string[], timeoutMs: number): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const text = await spoolText();
    const missing = ids.filter((id) => !text.includes(`"request_id":"${id}"`));
    if (missing.length === 0) return text;
    if (Date.now() > deadline) throw new Error(`not in the audit spool after ${timeoutMs} ms: ${missing.join(', ')}`);
    await sleep(25);
  }
}

describe('gateway process killed while Redis is down', () => {
  it('spools the outage to disk; the next process replays it into the stream before its own records', async () => {
    const first = await startGatewayProcess(dir, 'first', document);
    processes.push(first);

    const beforeOutage = Array.from({ length: 5 }, (_, i) => `crash-pre-${i}`);
    for (const id of beforeOutage) await send(first, id);
    await waitForStream(beforeOutage, 5_000);

    await redis.stop();
    const outageA = Array.from({ length: 10 }, (_, i) => `crash-down-a${i}`);
    const outageB = Array.from({ length: 10 }, (_, i) => `crash-down-b${i}`);
    for (const id of outageA) await send(first, id);
    const spoolAfterA = await waitForSpool(outageA, 5_000);
    for (const id of outageB) await send(first, id);
    const spoolAfterB = await waitForSpool([...outageA, ...outageB], 5_000);
    // The spool grew as the outage went on: 10 distinct records, then 20.
    expect(spooledOutageIds(spoolAfterA).size).toBe(10);
    expect(spooledOutageIds(spoolAfterB).size).toBe(20);
    // Past the flush interval with a margin: nothing answered is left only in memory.
    await sleep(FLUSH_INTERVAL_MS * 4);

    const killed = await first.stop('SIGKILL');
    expect(killed.signal).toBe('SIGKILL');
    await redis.start();

    // Before the next process starts, the outage's records exist only in the spool.
    const spoolAtRestart = await spoolText();
    for (const id of [...outageA, ...outageB]) expect(spoolAtRestart).toContain(`"request_id":"${id}"`);
    const streamBefore = new Set(await waitForStream(beforeOutage, 5_000));
    for (const id of [...outageA, ...outageB]) expect(streamBefore.has(id)).toBe(false);

    const second = await startGatewayProcess(dir, 'second', document);
    processes.push(second);
    await send(second, 'crash-after-restart');
    const spooled = [...outageA, ...outageB];
    const inStream = await waitForStream([...beforeOutage, ...spooled, 'crash-after-restart'], 10_000);

    // The leftover spool went in first: the new process's record follows every spooled one.
    const newIndex = inStream.indexOf('crash-after-restart');
    for (const id of spooled) expect(inStream.indexOf(id)).toBeLessThan(newIndex);
    // Only ids we sent (duplicates of them are allowed, strangers are not).
    expect([...new Set(inStream)].sort()).toEqual([...beforeOutage, ...spooled, 'crash-after-restart'].sort());

    // Once replayed, the spool is emptied.
    const deadline = Date.now() + 5_000;
    while ((await spoolText()).length > 0 && Date.now() < deadline) await sleep(50);
    expect(await spoolText()).toBe('');

    const stopped = await second.stop('SIGTERM');
    expect(stopped.code).toBe(0);

    // Neither the spool nor the processes' output ever held the raw key or the message.
    for (const text of [spoolAfterB, first.output(), second.output()]) {
      expect(text).toContain('crash-');
      for (const secret of [rawKey, SECRET_MESSAGE]) expect(text).not.toContain(secret);
    }
    expect(spoolAfterB).toContain(keyId);
  }, 180_000); // two gateway processes, a kill and a replay: generous for a loaded machine
});
