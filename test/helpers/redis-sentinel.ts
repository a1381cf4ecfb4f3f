// A real Sentinel setup on 127.0.0.1 for tests: one master, `replicas` replicas and three
// redis-sentinel processes watching them (quorum 2), with short timeouts so a failover takes
// seconds. Every process is killed by close(), also when the start itself failed half-way.
import { writeFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { distinctFreePorts, killAll, redisCli, startRedisProcess, waitFor, type RedisProcess } from './redis-process.js';

export interface RedisSentinelOptions {
  replicas?: number;
  /** down-after-milliseconds: how long a silent master takes to be declared down. */
  downAfterMs?: number;
  failoverTimeoutMs?: number;
}

export interface TestRedisSentinel {
  /** The master's name as the sentinels know it (redis.name). */
  readonly name: string;
  /** The sentinels' addresses (redis.sentinels). */
  readonly sentinels: Array<{ host: string; port: number }>;
  readonly servers: ReadonlyMap<number, RedisProcess>;
  /** The master's port as the sentinels report it now. */
  masterPort(): Promise<number>;
  /** SIGKILLs the server on `port`. */
  kill(port: number): Promise<void>;
  /** Until the sentinels report a master other than `oldPort`, running and answering as master. */
  waitForNewMaster(oldPort: number, timeoutMs?: number): Promise<number>;
  close(): Promise<void>;
}

const NAME = 'agentgw-master';

export async function startRedisSentinel(options: RedisSentinelOptions = {}): Promise<TestRedisSentinel> {
  const replicas = options.replicas ?? 1;
  const dir = await mkdtemp(join(tmpdir(), 'agentgw-redis-sentinel-'));
  const servers = new Map<number, RedisProcess>();
  const sentinelProcesses: RedisProcess[] = [];
  const close = async (): Promise<void> => {
    await killAll([...sentinelProcesses, ...servers.values()]);
    await rm(dir, { recursive: true, force: true });
  };
  try {
    const ports = await distinctFreePorts(1 + replicas + 3);
    const [masterPort, ...rest] = ports as [number, ...number[]];
    const replicaPorts = rest.slice(0, replicas);
    const sentinelPorts = rest.slice(replicas);
    // No diskless-sync delay: a replica holds the master's data seconds sooner (by default the
    // master waits 5 s for more replicas before the first sync).
    const serverArgs = (port: number): string[] => [
      '--port', String(port), '--bind', '127.0.0.1', '--protected-mode', 'no', '--save', '', '--appendonly', 'no', '--dir', dir, '--repl-diskless-sync-delay', '0',
    ];
    servers.set(masterPort, await startRedisProcess('redis-server', masterPort, serverArgs(masterPort)));
    for (const port of replicaPorts) {
      servers.set(port, await startRedisProcess('redis-server', port, [...serverArgs(port), '--replicaof', '127.0.0.1', String(masterPort)]));
    }
    // A connected replica may still be waiting for its first sync; promoted then, it would be empty.
    await waitFor('every replica to be in sync with the master', async () => {
      const infos = await Promise.all(replicaPorts.map((port) => redisCli(port, 'info', 'replication')));
      return infos.every((info) => info.includes('master_link_status:up'));
    }, 20_000);
    for (const port of sentinelPorts) {
      // Sentinels rewrite their config file (known replicas, epochs): one writable file each.
      const file = join(dir, `sentinel-${port}.conf`);
      await writeFile(
        file,
        [
          `port ${port}`,
          'bind 127.0.0.1',
          'protected-mode no',
          `dir ${dir}`,
          `sentinel monitor ${NAME} 127.0.0.1 ${masterPort} 2`,
          `sentinel down-after-milliseconds ${NAME} ${options.downAfterMs ?? 1_000}`,
          `sentinel failover-timeout ${NAME} ${options.failoverTimeoutMs ?? 3_000}`,
          `sentinel parallel-syncs ${NAME} 1`,
          '',
        ].join('\n'),
      );
      sentinelProcesses.push(await startRedisProcess('redis-sentinel', port, [file]));
    }
    const sentinel = makeSentinel(sentinelPorts, servers, close);
    // Each sentinel must know the replicas and the other sentinels before it can fail over.
    await waitFor('the sentinels to see the replicas and each other', async () => {
      const views = await Promise.all(sentinelPorts.map((port) => redisCli(port, 'sentinel', 'master', NAME)));
      return views.every((view) => fieldOf(view, 'num-slaves') === String(replicas) && fieldOf(view, 'num-other-sentinels') === '2');
    }, 30_000);
    return sentinel;
  } catch (error) {
    await close();
    throw error;
  }
}

function makeSentinel(sentinelPorts: number[], servers: Map<number, RedisProcess>, close: () => Promise<void>): TestRedisSentinel {
  const masterPort = async (): Promise<number> => {
    const answer = (await redisCli(sentinelPorts[0]!, 'sentinel', 'get-master-addr-by-name', NAME)).trim().split('\n');
    return Number(answer[1]);
  };
  return {
    name: NAME,
    sentinels: sentinelPorts.map((port) => ({ host: '127.0.0.1', port })),
    servers,
    masterPort,
    async kill(port) {
      await servers.get(port)?.kill('SIGKILL');
    },
    async waitForNewMaster(oldPort, timeoutMs = 30_000) {
      let found = oldPort;
      await waitFor('the sentinels to promote a replica', async () => {
        found = await masterPort();
        if (found === oldPort || !servers.get(found)?.alive) return false;
        return (await redisCli(found, 'role')).startsWith('master');
      }, timeoutMs);
      return found;
    },
    close,
  };
}

/** A field of redis-cli's flat "name\nvalue\n..." answer to SENTINEL MASTER. */
function fieldOf(view: string, field: string): string | undefined {
  const lines = view.trim().split('\n');
  const at = lines.indexOf(field);
  return at === -1 ? undefined : lines[at + 1];
}
