// What every fault test against gateway processes stands on, set up and torn down once: a
// temp dir, a real Redis, the fault runner (fault-runner.ts), a Redis client on the test's
// key prefix to read what the gateways wrote, and the gateway processes the test starts,
// which close() SIGKILLs before it stops the rest.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '../../../src/logger.js';
import { createRedisClient, type RedisClient } from '../../../src/redis/redis-client.js';
import { startRedis, type TestRedis } from '../redis.js';
import { startFaultGateway, type FaultGateway, type FaultGatewayOptions } from './fault-gateway.js';
import { startFaultRunner, type FaultRunner } from './fault-runner.js';

export interface FaultBedOptions {
  /** Names the temp dir: agentgw-faults-<name>-…. */
  name: string;
  /** The key prefix the gateways' `redis` block uses: `inspect` reads under it. */
  prefix: string;
  /**
   * A Redis this test may stop, restart and pause, with append-only persistence in the temp
   * dir (written before a stop, read back at the restart, as in production).
   */
  persistentRedis?: boolean;
  /** Keep the temp dir (its path is printed) when this environment variable is set: for debugging. */
  keepDirWhen?: string;
}

export interface FaultBed {
  dir: string;
  redis: TestRedis;
  runner: FaultRunner;
  inspect: RedisClient;
  /** Every gateway process started through startGateway, in order. */
  gateways: FaultGateway[];
  /** startFaultGateway in the bed's dir; close() SIGKILLs it. */
  startGateway(options: Omit<FaultGatewayOptions, 'dir'>): Promise<FaultGateway>;
  /** SIGKILLs the gateways, then closes the client, the runner and Redis, and removes the dir. */
  close(): Promise<void>;
}

export async function startFaultBed(options: FaultBedOptions): Promise<FaultBed> {
  const dir = await mkdtemp(join(tmpdir(), `agentgw-faults-${options.name}-`));
  const redisOptions = options.persistentRedis ? { controllable: true, extraArgs: ['--appendonly', 'yes', '--appendfsync', 'always', '--dir', dir] } : {};
  const [redis, runner] = await Promise.all([startRedis(redisOptions), startFaultRunner()]);
  const inspect = createRedisClient({ url: redis.url, prefix: options.prefix, commandTimeoutMs: 2_000 }, silentLogger, 'test-inspect');
  const gateways: FaultGateway[] = [];
  return {
    dir,
    redis,
    runner,
    inspect,
    gateways,
    async startGateway(gatewayOptions) {
      const gateway = await startFaultGateway({ ...gatewayOptions, dir });
      gateways.push(gateway);
      return gateway;
    },
    async close() {
      await Promise.all(gateways.map((gateway) => gateway.stop('SIGKILL')));
      inspect.disconnect();
      await runner.close();
      await redis.close();
      if (options.keepDirWhen && process.env[options.keepDirWhen]) console.log('kept', dir);
      else await rm(dir, { recursive: true, force: true });
    },
  };
}
