// Vitest setup file (vitest.config.ts `setupFiles`): after each test file, and when the worker
// process exits, every child process registered in test/helpers/child-processes.ts that is
// still running is killed, so a failing or timed-out test leaves nothing behind. Checked by
// test/e2e/child-process-cleanup.test.ts, which runs a failing test file in a child vitest.
import { afterAll } from 'vitest';
import { killTrackedChildProcesses } from './child-processes.js';

afterAll(() => {
  const killed = killTrackedChildProcesses();
  if (killed.length > 0) process.stderr.write(`child-process cleanup: killed ${killed.length} process(es) the test file left running (pids ${killed.join(', ')})\n`);
});

// Once per worker process: a worker runs many files (vitest.config.ts, isolate: false) and this
// file is evaluated again before each. The hook kills through the latest evaluation's tracker:
// a file that resets the modules (vi.resetModules) leaves the next file a new one.
const EXIT_HOOK = Symbol.for('agentgw.test.child-process-exit-hook');
const holder = globalThis as { [EXIT_HOOK]?: () => unknown };
if (holder[EXIT_HOOK] === undefined) process.once('exit', () => holder[EXIT_HOOK]?.());
holder[EXIT_HOOK] = killTrackedChildProcesses;
