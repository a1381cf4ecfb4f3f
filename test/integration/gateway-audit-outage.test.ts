// Usage audit across a Redis outage (docs/design.md, "Usage audit records"): the gateway in
// process keeps answering (file key store, rate limits fail open) while Redis is stopped for
// seconds; the records of that time wait in the spool and reach the stream once Redis is back.
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spoolPathFor } from '../../src/audit/audit-spool.js';
import { createRedisClient, type RedisClient } from '../../src/redis/redis-client.js';
import { silentLogger } from '../../src/logger.js';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { postChat, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { idsInFile, idsInStream } from '../helpers/audit-records.js';

const STREAM_KEY = `gwaudit-outage:${randomUUID()}`;
const SECRET_MESSAGE = 'walrus-topaz-message-51d0e7 what is my balance';
const OUTAGE_MS = 3_000;

let dataDir: string;
let redis: TestRedis;
let inspect: RedisClient;
let upstream: FakeUpstream;
let gateway: TestGateway;
let key: { rawKey: string; keyId: string };

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'agentgw-audit-outage-redis-'));
  // AOF, so the entries written before the outage survive the restart.
  [redis, upstream] = await Promise.all([
    startRedis({ controllable: true, extraArgs: ['--appendonly', 'yes', '--appendfsync', 'always', '--dir', dataDir] }),
    startFakeUpstream(),
  ]);
  inspect = createRedisClient({ url: redis.url, prefix: 'gwout:', commandTimeoutMs: 2_000 }, silentLogger, 'test-inspect');
  gateway = await startTestGateway({
    agents: { support: upstream.baseUrl },
    redisUrl: redis.url,
    config: {
      redis: { prefix: 'gwout:' },
      keys: { store: 'file' },
      rate_limits: { on_store_error: 'allow' },
      plans: { roomy: { windows: [{ requests: 100_000, per: '1m' }] } },
      audit: { redis_stream: STREAM_KEY, flush_interval: '50ms' },
    },
  });
  key = await gateway.createKey({ account: 'outage-acct', plan: 'roomy' });
});

afterAll(async () => {
  await gateway?.close();
  inspect?.disconnect();
  await upstream?.close();
  await redis?.close();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

const streamIds = (): Promise<string[]> => idsInStream(inspect, STREAM_KEY, 'request_id');

const fileIds = (): Promise<string[]> => idsInFile(join(gateway.dir, 'audit.jsonl'), 'request_id');

/** Distinct request ids in both files of the Redis sink's spool (the append file and the one being replayed). */
async function spoolIds(): Promise<Set<string>> {
  const path = spoolPathFor(join(gateway.dir, 'audit-spool.jsonl'), 'redis');
  // The append file first: a replay renames it to .replaying, so this order can see a record twice but never miss it.
  const text = (await readFile(path, 'utf8').catch(() => '')) + (await readFile(`${path}.replaying`, 'utf8').catch(() => ''));
  for (const secret of [key.rawKey, SECRET_MESSAGE]) expect(text, 'spool').not.toContain(secret);
  if (text.length > 0) expect(text, 'spool').toContain(key.keyId);
  return new Set([...text.matchAll(/"request_id":"(out-[0-9]+-[0-9]+)"/g)].map((m) => m[1]!));
}

describe('Redis stopped for seconds under traffic', () => {
  it('every request that got past authentication ends up in the stream (deduped by id)', async () => {
    const answered: { id: string; status: number }[] = [];
    let running = true;
    let sequence = 0;
    // Two clients sending one request after another for the whole test: before, during and after the outage.
    const loops = [0, 1].map(async (client) => {
      while (running) {
        const id = `out-${client}-${sequence++}`;
        const response = await postChat(gateway.url, '/agents/support/api/v1/chat', key.rawKey, { message: SECRET_MESSAGE }, { 'x-request-id': id });
        await response.arrayBuffer();
        answered.push({ id: response.headers.get('x-request-id') ?? '', status: response.status });
        // A short pause keeps the load polite on a shared machine; thousands of requests still flow.
        await sleep(2);
      }
    });

    // Before: traffic flows and its records reach the stream directly.
    await waitFor('20 answers before the outage', () => answered.length >= 20, 5_000, 25);
    const firstIds = answered.slice(0, 20).map((a) => a.id);
    await waitFor('the first records in the stream', async () => { const seen = new Set(await streamIds()); return firstIds.every((id) => seen.has(id)); }, 5_000, 25);

    const beforeOutage = answered.length;
    await redis.stop();
    await sleep(OUTAGE_MS / 2);
    const spoolMid = await spoolIds();
    await sleep(OUTAGE_MS / 2);
    const spoolLate = await spoolIds();
    const duringOutage = answered.length;
    await redis.start();
    await sleep(500);
    running = false;
    await Promise.all(loops);

    // Traffic really flowed in each phase, and the gateway kept answering without Redis.
    expect(duringOutage - beforeOutage, 'answers during the outage').toBeGreaterThan(5);
    expect(answered.length - duringOutage, 'answers after the outage').toBeGreaterThan(5);
    const statuses = answered.reduce<Record<number, number>>((counts, a) => ({ ...counts, [a.status]: (counts[a.status] ?? 0) + 1 }), {});
    expect(statuses).toEqual({ 200: answered.length });

    // The outage's records went to the spool, and it grew while the outage lasted.
    expect(spoolMid.size, 'spooled records 1.5 s into the outage').toBeGreaterThan(0);
    expect(spoolLate.size, 'spooled records at the end of the outage').toBeGreaterThan(spoolMid.size);
    for (const id of spoolMid) expect(spoolLate.has(id), `${id} still spooled`).toBe(true);

    const expected = answered.map((a) => a.id);
    const deadline = Date.now() + 15_000;
    let missing: string[] = expected;
    while (missing.length > 0 && Date.now() < deadline) {
      await sleep(100);
      const seen = new Set(await streamIds().catch(() => []));
      const inFile = new Set(await fileIds());
      missing = expected.filter((id) => !seen.has(id) || !inFile.has(id));
    }
    expect(missing, 'ids missing from the stream or the file').toEqual([]);
    // Nothing that was not asked for: at-least-once means duplicates of ours, never strangers.
    const distinct = new Set(await streamIds());
    expect([...distinct].sort(), 'distinct ids in the stream').toEqual([...expected].sort());

    // The file sink never failed: it has each record exactly once.
    expect((await fileIds()).sort(), 'ids in the audit file').toEqual([...expected].sort());
  });
});
