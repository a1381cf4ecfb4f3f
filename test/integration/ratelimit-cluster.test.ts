// The limiter on a real 3-master Redis Cluster: the script's keys share the hash tag
// {subject}, so every call lands on one slot and works wherever that slot lives.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryRateLimiter } from '../../src/ratelimit/memory-rate-limiter.js';
import type { RateWindow } from '../../src/ratelimit/rate-limiter.js';
import { RedisRateLimiter, rateLimitKey } from '../../src/ratelimit/redis-rate-limiter.js';
import { freePort } from '../helpers/free-port.js';
import { waitFor } from '../helpers/wait.js';

const run = promisify(execFile);
const PREFIX = 'agentgw:';
const WINDOWS: RateWindow[] = [
  { name: 'minute', limit: 3, windowMs: 60_000 },
  { name: 'day', limit: 10, windowMs: 86_400_000 },
];

let dir: string;
const nodes: ChildProcess[] = [];
let ports: number[] = [];
let cluster: Cluster;

async function distinctFreePorts(count: number): Promise<number[]> {
  const found = new Set<number>();
  while (found.size < count) found.add(await freePort());
  return [...found];
}

async function redisCli(port: number, ...args: string[]): Promise<string> {
  const { stdout } = await run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], { timeout: 10_000 });
  return stdout;
}
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'agentgw-cluster-'));
  // Data and cluster-bus ports picked explicitly: port + 10000 may be taken or out of range.
  const free = await distinctFreePorts(6);
  ports = free.slice(0, 3);
  for (let i = 0; i < 3; i += 1) {
    const port = ports[i] as number;
    const child = spawn(
      'redis-server',
      [
        '--port', String(port), '--cluster-port', String(free[3 + i]), '--bind', '127.0.0.1', '--protected-mode', 'no',
        '--cluster-enabled', 'yes', '--cluster-config-file', join(dir, `nodes-${port}.conf`), '--cluster-node-timeout', '2000',
        '--dir', dir, '--save', '', '--appendonly', 'no',
      ],
      { stdio: 'ignore' },
    );
    nodes.push(child);
  }
  for (const port of ports) await waitFor(`redis on ${port}`, async () => (await redisCli(port, 'ping')).trim() === 'PONG', 20_000, 100);
  await run('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes'], { timeout: 30_000 });
  for (const port of ports) await waitFor(`cluster_state:ok on ${port}`, async () => (await redisCli(port, 'cluster', 'info')).includes('cluster_state:ok'), 20_000, 100);
  cluster = new Cluster([{ host: '127.0.0.1', port: ports[0] as number }], { redisOptions: { maxRetriesPerRequest: 1 } });
  await waitFor('the ioredis cluster client', async () => (await cluster.ping()) === 'PONG', 20_000, 100);
});

afterAll(async () => {
  cluster?.disconnect();
  await Promise.all(
    nodes.map(async (child) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, 'exit');
      child.kill('SIGKILL');
      await exited;
    }),
  );
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('RedisRateLimiter on Redis Cluster', () => {
  it('takes the same decisions as the memory limiter, for subjects spread over every master', async () => {
    const limiter = new RedisRateLimiter({ client: cluster, prefix: PREFIX, commandTimeoutMs: 2_000 });
    const memory = new MemoryRateLimiter();
    const subjects = Array.from({ length: 24 }, (_, i) => `account:tenant-${i}`);
    let nowMs = 1_700_000_000_000;
    let allowed = 0;
    let rejected = 0;
    for (let round = 0; round < 14; round += 1) {
      nowMs += round % 4 === 3 ? 61_000 : 700;
      for (const subject of subjects) {
        const expected = memory.consumeAt(subject, WINDOWS, nowMs);
        expect(await limiter.consume(subject, WINDOWS, { nowMs })).toEqual(expected);
        if (expected.allowed) allowed += 1;
        else rejected += 1;
      }
    }
    // Each subject hits the minute limit inside a minute and the day limit later on.
    expect(allowed).toBe(24 * 10);
    expect(rejected).toBeGreaterThan(0);

    const slots = await Promise.all(WINDOWS.map((w) => cluster.cluster('KEYSLOT', rateLimitKey(PREFIX, subjects[0] as string, w.name))));
    expect(new Set(slots).size).toBe(1);
    const masters = cluster.nodes('master');
    expect(masters).toHaveLength(3);
    const sizes = await Promise.all(masters.map((node) => node.dbsize()));
    expect(sizes.every((size) => size > 0)).toBe(true);
  });

  it("uses the cluster node's own time when no nowMs is given", async () => {
    const limiter = new RedisRateLimiter({ client: cluster, prefix: PREFIX, commandTimeoutMs: 2_000 });
    const decisions = await Promise.all(Array.from({ length: 6 }, () => limiter.consume('key:k_live', WINDOWS)));
    expect(decisions.map((d) => d.allowed).sort()).toEqual([false, false, false, true, true, true]);
    expect(decisions.filter((d) => !d.allowed).every((d) => d.retryAfterMs > 0 && d.retryAfterMs <= 61_000)).toBe(true);
  });
});
