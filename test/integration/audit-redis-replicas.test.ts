// audit.wait_replicas against a real master and replica: a batch counts as written only once
// the replicas the master has connected hold it (so a failover to one of them cannot lose it);
// a replica that does not confirm in time fails the batch (the audit log then spools and
// replays it); a master left without replicas does not wait (docs/audit.md).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisStreamAuditSink } from '../../src/audit/redis-stream-audit-sink.js';
import { silentLogger } from '../../src/logger.js';
import { createRedisClient, type RedisClient } from '../../src/redis/redis-client.js';
import { distinctFreePorts, killAll, redisCli, startRedisProcess, waitFor, type RedisProcess } from '../helpers/redis-process.js';

const STREAM = 'gwwait:audit';
let master: RedisProcess;
let replica: RedisProcess;
let client: RedisClient;
let dir: string;

// --dir: a replica's full sync writes an RDB file into the server's directory.
const serverArgs = (port: number): string[] => ['--port', String(port), '--bind', '127.0.0.1', '--protected-mode', 'no', '--save', '', '--appendonly', 'no', '--dir', dir, '--repl-diskless-sync-delay', '0'];
/** Generous: on a busy machine a replica may take a while to confirm even when it is fine. */
const BATCH_TIMEOUT_MS = 3_000;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'agentgw-audit-replicas-'));
  const [masterPort, replicaPort] = (await distinctFreePorts(2)) as [number, number];
  master = await startRedisProcess('redis-server', masterPort, serverArgs(masterPort));
  replica = await startRedisProcess('redis-server', replicaPort, [...serverArgs(replicaPort), '--replicaof', '127.0.0.1', String(masterPort)]);
  await waitFor('the replica to be in sync', async () => (await redisCli(replicaPort, 'info', 'replication')).includes('master_link_status:up'));
  // command_timeout 500 ms: the connection's own backstop (10 ×) stays above the batch's time, as in the gateway.
  client = createRedisClient({ url: `redis://127.0.0.1:${masterPort}/0`, prefix: 'gwwait:', commandTimeoutMs: 500 }, silentLogger, 'test-audit-wait');
  await waitFor('the client to connect', async () => client.status === 'ready');
});

afterAll(async () => {
  client?.disconnect();
  await killAll([master, replica].filter(Boolean));
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('audit.wait_replicas', () => {
  it('writes a batch once the replica holds it, and fails a batch the replica does not confirm in time', async () => {
    const sink = new RedisStreamAuditSink({ redis: client, streamKey: STREAM, maxLen: 1_000, commandTimeoutMs: BATCH_TIMEOUT_MS, waitReplicas: 1 });
    await sink.write(['{"id":"a"}', '{"id":"b"}']);
    // Confirmed by the replica before write() resolved, so it is there now.
    expect(Number(await redisCli(replica.port, 'xlen', STREAM))).toBe(2);

    replica.pause();
    try {
      await expect(sink.write(['{"id":"c"}'])).rejects.toThrow(/reached 0 of the master's 1 replicas/);
    } finally {
      replica.resume();
    }
  });

  it('does not wait when the master has no replica left', async () => {
    await replica.kill();
    await waitFor('the master to see its replica gone', async () => (await redisCli(master.port, 'info', 'replication')).includes('connected_slaves:0'));
    const sink = new RedisStreamAuditSink({ redis: client, streamKey: STREAM, maxLen: 1_000, commandTimeoutMs: BATCH_TIMEOUT_MS, waitReplicas: 1 });
    await sink.write(['{"id":"d"}']);
    expect((await client.xrange(STREAM, '-', '+')).map(([, fields]) => fields[1])).toContain('{"id":"d"}');
  });
});
