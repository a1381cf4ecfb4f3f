// Every process a test starts is registered here, so that none outlives its test file: the
// file's own afterAll/finally stops it, and test/helpers/child-process-cleanup.ts (a vitest
// setup file) kills whatever is still running when the file ends (a failed assertion, a
// timeout, a throw before the cleanup line) and when the worker exits. A child started with
// `detached: true` leads its own process group; killing the group also ends what it started
// (a script's gateway, a primary's workers).
import type { ChildProcess } from 'node:child_process';

interface Tracked {
  child: ChildProcess;
  group: boolean;
}

const running = new Map<number, Tracked>();

/** Registers `child` (spawned with `detached: true` when `group`) and returns it. */
export function trackChildProcess<T extends ChildProcess>(child: T, options: { group?: boolean } = {}): T {
  const pid = child.pid;
  if (pid === undefined) return child;
  running.set(pid, { child, group: options.group ?? false });
  child.once('exit', () => {
    // The group may still hold grandchildren: forgotten only when the leader is gone and
    // it was not a group (a group is killed again at cleanup; ESRCH then is harmless).
    if (!running.get(pid)?.group) running.delete(pid);
  });
  return child;
}

/** Sends `signal` to a tracked child (its whole group when it leads one). */
export function signalTracked(child: ChildProcess, signal: NodeJS.Signals): void {
  const tracked = child.pid === undefined ? undefined : running.get(child.pid);
  if (tracked?.group) killQuietly(-child.pid!, signal);
  else if (child.exitCode === null && child.signalCode === null) child.kill(signal);
}

function killQuietly(pid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(pid, signal);
    return true;
  } catch {
    return false; // already gone
  }
}

/**
 * SIGKILLs every tracked process (and group) still running; returns the pids that were.
 * Synchronous, so it also works in a process 'exit' handler.
 */
export function killTrackedChildProcesses(): number[] {
  const killed: number[] = [];
  for (const [pid, { child, group }] of running) {
    const alive = child.exitCode === null && child.signalCode === null;
    if (group ? killQuietly(-pid, 'SIGKILL') : alive && killQuietly(pid, 'SIGKILL')) killed.push(pid);
    running.delete(pid);
  }
  return killed;
}
