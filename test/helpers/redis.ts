// Throwaway Redis for tests, as docs/design.md ("Layout") says: REDIS_URL if set (shared,
// cannot be killed), else a `redis-server` child on a free port, else a testcontainers
// container. Tests that kill, pause or restart Redis ask for `controllable: true`.
import { spawn, type ChildProcess } from 'node:child_process';
import { trackChildProcess } from './child-processes.js';
import { existsSync } from 'node:fs';
import { once } from 'node:events';
import { Redis } from 'ioredis';
import { freePort } from './free-port.js';

export interface TestRedis {
  url: string;
  port: number;
  /** Stops the server (SIGKILL for `hard`); `start()` brings it back on the same port, empty. */
  stop(options?: { hard?: boolean }): Promise<void>;
  start(): Promise<void>;
  /** SIGSTOP/SIGCONT: a hung server rather than a refused one. */
  pause(): void;
  resume(): void;
  /** Removes everything the test wrote (FLUSHALL). */
  flush(): Promise<void>;
  close(): Promise<void>;
}

const REDIS_BINARIES = ['/usr/bin/redis-server', '/usr/local/bin/redis-server'];

function findRedisBinary(): string | undefined {
  return REDIS_BINARIES.find((path) => existsSync(path));
}

async function waitForPing(url: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 500 });
    client.on('error', () => {});
    try {
      await client.connect();
      await client.ping();
      client.disconnect();
      return;
    } catch (error) {
      client.disconnect();
      if (Date.now() > deadline) throw new Error(`redis at ${url} did not answer PING: ${String(error)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

async function flushAll(url: string): Promise<void> {
  const client = new Redis(url, { maxRetriesPerRequest: 1 });
  try {
    await client.flushall();
  } finally {
    client.disconnect();
  }
}

class ChildRedis implements TestRedis {
  private child: ChildProcess | undefined;
  url: string;
  constructor(private readonly binary: string, readonly port: number, private readonly extraArgs: string[]) {
    this.url = `redis://127.0.0.1:${port}/0`;
  }
  async start(): Promise<void> {
    const child = trackChildProcess(spawn(this.binary, ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--protected-mode', 'no', ...this.extraArgs], { stdio: 'ignore' }));
    this.child = child;
    child.unref();
    await waitForPing(this.url);
  }
  async stop(options: { hard?: boolean } = {}): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    this.child = undefined;
    const exited = once(child, 'exit');
    child.kill('SIGCONT');
    child.kill(options.hard ? 'SIGKILL' : 'SIGTERM');
    await exited;
  }
  pause(): void {
    this.child?.kill('SIGSTOP');
  }
  resume(): void {
    this.child?.kill('SIGCONT');
  }
  flush(): Promise<void> {
    return flushAll(this.url);
  }
  close(): Promise<void> {
    return this.stop({ hard: true });
  }
}

class SharedRedis implements TestRedis {
  readonly port: number;
  constructor(readonly url: string) {
    this.port = Number(new URL(url).port || 6379);
  }
  async start(): Promise<void> {}
  async stop(): Promise<void> {
    throw new Error('this test needs a Redis it can stop; unset REDIS_URL or install redis-server');
  }
  pause(): void {
    throw new Error('this test needs a Redis it can pause; unset REDIS_URL or install redis-server');
  }
  resume(): void {}
  flush(): Promise<void> {
    return flushAll(this.url);
  }
  async close(): Promise<void> {}
}

async function startContainerRedis(): Promise<TestRedis> {
  const { GenericContainer } = await import('testcontainers');
  const container = await new GenericContainer('redis:7-alpine').withExposedPorts(6379).start();
  const url = `redis://${container.getHost()}:${container.getMappedPort(6379)}/0`;
  await waitForPing(url);
  return {
    url,
    port: container.getMappedPort(6379),
    stop: async () => {
      await container.stop();
    },
    start: async () => {
      throw new Error('a testcontainers Redis cannot be restarted on the same port');
    },
    pause: () => {
      throw new Error('a testcontainers Redis cannot be paused here');
    },
    resume: () => {},
    flush: () => flushAll(url),
    close: async () => {
      await container.stop();
    },
  };
}

export async function startRedis(options: { controllable?: boolean; extraArgs?: string[] } = {}): Promise<TestRedis> {
  if (process.env.REDIS_URL && !options.controllable) {
    const shared = new SharedRedis(process.env.REDIS_URL);
    await waitForPing(shared.url);
    return shared;
  }
  const binary = findRedisBinary();
  if (binary) {
    const redis = new ChildRedis(binary, await freePort(), options.extraArgs ?? []);
    await redis.start();
    return redis;
  }
  return startContainerRedis();
}
