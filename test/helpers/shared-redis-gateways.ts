// Two gateway processes on one Redis (keys and limits shared there), one fake runner behind
// both, a client for reading Redis directly and an undici Agent for the requests: the
// fixture of the multi-process limit tests.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { afterAll, beforeAll } from 'vitest';
import { KeyService } from '../../src/keys/key-service.js';
import { openCliKeyStore } from '../../src/cli/keys.js';
import { createRedisClient, type RedisClient } from '../../src/redis/redis-client.js';
import { parseConfig } from '../../src/config/load-config.js';
import { silentLogger } from '../../src/logger.js';
import { startFakeUpstream, type FakeUpstream, type UpstreamHandler } from './fake-upstream.js';
import { sharedRedisGatewayConfig, startGatewayProcess, type GatewayProcess } from './gateway-process.js';
import { startRedis, type TestRedis } from './redis.js';

export interface SharedRedisGatewaysOptions {
  /** Redis key prefix of the gateways (and of `inspect`). */
  prefix: string;
  plans: Record<string, unknown>;
  /** What the runner answers. */
  upstream: UpstreamHandler;
  /** Connections of the test's dispatcher: at least the requests a test keeps open at once. */
  connections: number;
  /** Top-level config added to each gateway's (e.g. `{ rate_limits: { lease: true } }`). */
  extraConfig?: Record<string, unknown>;
  /** Gateway `b` listens on `a`'s port (both need `listen.reuse_port` in extraConfig). */
  samePort?: boolean;
}

export interface SharedRedisGateways {
  redis: TestRedis;
  /** Reads Redis directly, with the gateways' prefix. */
  inspect: RedisClient;
  upstream: FakeUpstream;
  /** Holds each process's YAML config and audit files. */
  dir: string;
  dispatcher: Agent;
  /** Gateways `a` and `b`. */
  gateways: GatewayProcess[];
  /** The config a process named `name` runs with (`cli` for key creation). */
  config(name: string): Record<string, unknown>;
  /** POSTs `{"message":"hi"}` to agent `support`'s chat on `gateway` with `key`: the status, and the error type of a refusal. */
  postChat(gateway: GatewayProcess, key: string): Promise<{ status: number; type: string | undefined }>;
  /** A key for agent `support` on `plan`, made in Redis as `keys create` makes it; returns the raw key. */
  createKey(account: string, plan: string): Promise<string>;
  /** Kills the gateways and stops everything else (safe on a half-started fixture). */
  close(): Promise<void>;
}

export async function startSharedRedisGateways(options: SharedRedisGatewaysOptions): Promise<SharedRedisGateways> {
  const { prefix, plans, extraConfig = {} } = options;
  const gateways: GatewayProcess[] = [];
  let redis: TestRedis | undefined;
  let dir: string | undefined;
  let upstream: FakeUpstream | undefined;
  let inspect: RedisClient | undefined;
  let dispatcher: Agent | undefined;
  const close = async (): Promise<void> => {
    await Promise.all(gateways.map((gateway) => gateway.stop('SIGKILL')));
    inspect?.disconnect();
    await dispatcher?.close();
    await upstream?.close();
    await redis?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  };
  try {
    [redis, dir] = await Promise.all([startRedis(), mkdtemp(join(tmpdir(), 'agentgw-shared-gw-'))]);
    upstream = await startFakeUpstream(options.upstream);
    inspect = createRedisClient({ url: redis.url, prefix, commandTimeoutMs: 2_000 }, silentLogger, 'test-inspect');
    const agent = new Agent({ connections: options.connections, pipelining: 1 });
    dispatcher = agent;
    const redisUrl = redis.url;
    const upstreamBaseUrl = upstream.baseUrl;
    const processDir = dir;
    const config = (name: string): Record<string, unknown> => ({
      ...sharedRedisGatewayConfig({ redisUrl, prefix, plans, upstreamBaseUrl, dir: processDir, name }),
      ...extraConfig,
    });
    for (const name of ['a', 'b']) {
      const port = options.samePort && gateways[0] ? { port: gateways[0].port } : {};
      gateways.push(await startGatewayProcess(processDir, name, config(name), {}, port));
    }
    return {
      redis,
      inspect,
      upstream,
      dir: processDir,
      dispatcher: agent,
      gateways,
      config,
      async postChat(gateway, key) {
        const response = await request(`${gateway.url}/agents/support/api/v1/chat`, {
          method: 'POST',
          dispatcher: agent,
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: '{"message":"hi"}',
        });
        const text = await response.body.text();
        const type = response.statusCode === 200 ? undefined : (JSON.parse(text) as { error: { type: string } }).error.type;
        return { status: response.statusCode, type };
      },
      async createKey(account, plan) {
        const parsed = parseConfig(config('cli'), 'test', {});
        const store = await openCliKeyStore(parsed);
        try {
          return (await new KeyService({ store, config: parsed }).createKey({ account, plan, agents: ['support'] })).rawKey;
        } finally {
          await store.close();
        }
      },
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

/**
 * Registers the file's hooks: the fixture started before all tests (60 s: two gateway
 * processes load their modules on a shared machine) and closed after them. The handle is
 * filled in by that beforeAll. A test's own afterAll registered after this call runs before
 * the close (vitest runs after-hooks in reverse order).
 */
export function useSharedRedisGateways(options: SharedRedisGatewaysOptions): SharedRedisGateways {
  const handle = {} as Partial<SharedRedisGateways>;
  beforeAll(async () => {
    Object.assign(handle, await startSharedRedisGateways(options));
  }, 60_000);
  afterAll(async () => {
    await handle.close?.();
  });
  return handle as SharedRedisGateways;
}
