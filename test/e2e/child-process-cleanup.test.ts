// No test leaves a process behind when it fails. A child vitest runs test files that start a
// real gateway and agent runners through the shared helpers and then fail (an assertion, a
// timeout) before cleaning up; once that run has exited, none of those processes may still
// exist. And scripts/soak.mjs, stopped mid-run as a test's cleanup stops it, takes its
// `node --inspect … serve` gateway and its redis-server with it.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { signalTracked, trackChildProcess } from '../helpers/child-processes.js';

const work = mkdtempSync(join(tmpdir(), 'agentgw-child-cleanup-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  // A zombie (exited, not yet reaped) is not running.
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/** Waits (up to a generous 20 s, for a loaded machine) for every pid to be gone; returns those still running. */
async function stillRunning(pids: number[]): Promise<number[]> {
  const deadline = Date.now() + 20_000;
  let left = pids.filter(alive);
  while (left.length > 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    left = left.filter(alive);
  }
  return left;
}

function run(command: string, args: string[], env: NodeJS.ProcessEnv, options: { detached?: boolean } = {}) {
  const child = trackChildProcess(spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'], detached: options.detached ?? false }), { group: options.detached ?? false });
  let output = '';
  child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, exited, output: () => output };
}

/** The pids whose parent is `ppid` (Linux /proc). */
function childrenOf(ppid: number): number[] {
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      // pid (comm) state ppid …; comm may hold spaces and parentheses, so read after the last ')'.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) === ppid) pids.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

describe('processes started by tests end with them', () => {
  it('a failing and a timed-out test file leave no gateway or runner running', async () => {
    const pidFile = join(work, 'pids');
    writeFileSync(pidFile, '');
    const vitest = run(process.execPath, ['node_modules/vitest/vitest.mjs', 'run', '--config', 'test/fixtures/child-cleanup/vitest.config.ts'], { ...process.env, CHILD_CLEANUP_PIDS: pidFile, NO_COLOR: '1', FORCE_COLOR: '0' });
    const code = await vitest.exited;
    const pids = readFileSync(pidFile, 'utf8').split('\n').filter(Boolean).map(Number);
    // Both fixture tests failed, after starting their processes: a gateway and two runners.
    expect(code, vitest.output()).toBe(1);
    expect(vitest.output()).toMatch(/Tests\s+2 failed/);
    expect(pids, vitest.output()).toHaveLength(3);
    expect(vitest.output()).toMatch(/child-process cleanup: killed \d+ process/);
    expect(await stillRunning(pids), vitest.output()).toEqual([]);
  }, 180_000);

  it('scripts/soak.mjs stopped mid-run takes its gateway (and Redis) with it', async () => {
    // Light traffic: this is about stopping, not load.
    const soak = run(process.execPath, ['scripts/soak.mjs', '--duration', '5m', '--sample', '1s', '--concurrency', '1', '--think', '100ms'], { ...process.env, SOAK_DURATION: '' }, { detached: false });
    const deadline = Date.now() + 90_000;
    while (!/req\/s/.test(soak.output())) {
      if (soak.child.exitCode !== null || Date.now() > deadline) throw new Error(`the soak did not start:\n${soak.output()}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const started = childrenOf(soak.child.pid!);
    expect(started.length, soak.output()).toBeGreaterThanOrEqual(1);
    signalTracked(soak.child, 'SIGTERM');
    expect(await soak.exited).not.toBe(0);
    expect(await stillRunning(started), soak.output()).toEqual([]);
  }, 180_000);
});
