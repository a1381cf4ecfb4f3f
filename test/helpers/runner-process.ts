// An agent runner in a process of its own (the bench's stub, bench/reference/stub-runner.mjs),
// for tests where a runner must die the way a real one does: SIGKILL, the kernel closing its
// sockets, and a restart on the same port.
import { spawn, type ChildProcess } from 'node:child_process';
import { trackChildProcess } from './child-processes.js';
import { once } from 'node:events';
import { join } from 'node:path';

const STUB_PATH = join(process.cwd(), 'bench/reference/stub-runner.mjs');
const LISTENING = /^listening (\d+)$/m;

export interface RunnerProcess {
  port: number;
  /** `http://127.0.0.1:<port>`: the target's origin, as metrics and /upstreamz name it. */
  url: string;
  /** The runner's base URL for an agent's `upstream(s)`. */
  baseUrl: string;
  child: ChildProcess;
  /** Sends `signal` and waits for the exit; a no-op once the process is gone. */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/** Starts the stub on `port` (a free one by default) and resolves once it listens. */
export async function startRunnerProcess(port = 0, startTimeoutMs = 20_000): Promise<RunnerProcess> {
  const env = { ...process.env };
  delete env.PORT;
  const child = trackChildProcess(spawn(process.execPath, [STUB_PATH, '--port', String(port)], { env, stdio: ['ignore', 'pipe', 'pipe'] }));
  let output = '';
  child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
  const listening = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`runner process did not listen within ${startTimeoutMs} ms:\n${output}`)), startTimeoutMs);
    const onData = () => {
      const match = LISTENING.exec(output);
      if (!match) return;
      clearTimeout(timer);
      child.stdout!.off('data', onData);
      resolve(Number(match[1]));
    };
    child.stdout!.on('data', onData);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`runner process exited (${code ?? signal}) before listening:\n${output}`));
    });
  });
  const url = `http://127.0.0.1:${listening}`;
  return {
    port: listening,
    url,
    baseUrl: `${url}/api/v1`,
    child,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, 'exit');
      child.kill(signal);
      await exited;
    },
  };
}
