// One redis-server or redis-sentinel child process for the topology helpers (redis-cluster.ts,
// redis-sentinel.ts): started on a given port, asked things through redis-cli, killed for real.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { trackChildProcess } from './child-processes.js';
import { once } from 'node:events';
import { promisify } from 'node:util';
import { freePort } from './free-port.js';
import { waitFor as waitUntil } from './wait.js';

const run = promisify(execFile);

export interface RedisProcess {
  readonly port: number;
  /** Still running (not killed, not exited on its own). */
  readonly alive: boolean;
  /** SIGKILL by default: what a crashed machine looks like. Resolves once the process is gone. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** SIGSTOP / SIGCONT: a server that holds its connections and answers nothing. */
  pause(): void;
  resume(): void;
}

/**
 * Starts `binary` (redis-server or redis-sentinel) with `args` and waits until it answers
 * PING (through redis-cli with `cliArgs`, e.g. its --tls options).
 */
export async function startRedisProcess(binary: string, port: number, args: string[], cliArgs: string[] = []): Promise<RedisProcess> {
  const child: ChildProcess = trackChildProcess(spawn(binary, args, { stdio: 'ignore' }));
  child.unref();
  const exited = once(child, 'exit');
  const handle: RedisProcess = {
    port,
    get alive() {
      return child.exitCode === null && child.signalCode === null;
    },
    async kill(signal = 'SIGKILL') {
      if (!handle.alive) return;
      child.kill('SIGCONT');
      child.kill(signal);
      await exited;
    },
    pause() {
      if (handle.alive) child.kill('SIGSTOP');
    },
    resume() {
      if (handle.alive) child.kill('SIGCONT');
    },
  };
  try {
    await waitFor(`${binary} on port ${port} to answer PING`, async () => (await redisCli(port, ...cliArgs, 'ping')).trim() === 'PONG', 10_000);
  } catch (error) {
    await handle.kill();
    throw error;
  }
  return handle;
}

/** One redis-cli command against 127.0.0.1:port; its stdout. */
export async function redisCli(port: number, ...args: string[]): Promise<string> {
  const { stdout } = await run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], { timeout: 10_000 });
  return stdout;
}

/** `count` ports that are free now and distinct from each other. */
export async function distinctFreePorts(count: number): Promise<number[]> {
  const found = new Set<number>();
  while (found.size < count) found.add(await freePort());
  return [...found];
}

/**
 * test/helpers/wait.ts's waitFor with the defaults Redis topologies need (a cluster or a
 * failover settles in seconds): 20 s, polled every 100 ms.
 */
export async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 20_000, intervalMs = 100): Promise<void> {
  await waitUntil(what, check, timeoutMs, intervalMs);
}

/** Kills every process given, whatever state each is in; never throws (for afterAll). */
export async function killAll(processes: Iterable<RedisProcess>): Promise<void> {
  await Promise.all([...processes].map((p) => p.kill().catch(() => undefined)));
}
