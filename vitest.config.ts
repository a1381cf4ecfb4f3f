// An unsupported Node.js is refused in one line before vitest loads a test (`npx vitest run`).
import './scripts/node-guard.mjs';
import { resolve } from 'node:path';
import { defineConfig } from 'vitest/config';
import { SlowestFirstSequencer } from './test/helpers/slowest-first.js';

// Every node process the tests start (gateways, the CLI, the bench, the workers themselves)
// keeps V8's compiled code in one cache (Node's NODE_COMPILE_CACHE, 22.1+): the suite starts
// hundreds of them, and compiling the same modules again was ~40% of a start's CPU on this
// 2-core machine (0.55 → 0.32 s of user time to load the gateway's modules). What runs is the
// same code: only its compilation is reused. An operator's own setting wins.
process.env.NODE_COMPILE_CACHE ??= resolve('node_modules/.cache/agentgw-test-compile-cache');

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/helpers/global-setup.ts'],
    // Kills what a test file left running (test/helpers/child-processes.ts).
    setupFiles: ['test/helpers/child-process-cleanup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Four workers on two cores: most of a file's time is spent waiting on the processes it
    // starts (gateways, Redis, the bench), so workers beyond the cores fill the time the cores
    // would sit idle. A worker runs its files one after another in one process (isolate:
    // false): a fresh process per file cost ~1 s of CPU each, a third of the suite's CPU
    // (decision 0115). So a file may find the module state an earlier file left: the metrics
    // registry is one per process (tests count it as a difference), and every process a test
    // starts is its own. minForks = maxForks: a worker left idle near the end is never reaped by
    // tinypool's idle timer, whose unawaited teardown could race the pool's own at exit
    // ("Terminating worker thread").
    poolOptions: { forks: { maxForks: 4, minForks: 4, isolate: false } },
    pool: 'forks',
    // The slowest files start first, so none runs alone at the end (test/helpers/slowest-first.ts).
    sequence: { sequencer: SlowestFirstSequencer },
  },
});
