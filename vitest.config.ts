// An unsupported Node.js is refused in one line before vitest loads a test (`npx vitest run`).
import './scripts/node-guard.mjs';
import { defineConfig } from 'vitest/config';
import { SlowestFirstSequencer } from './test/helpers/slowest-first.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/helpers/global-setup.ts'],
    // Kills what a test file left running (test/helpers/child-processes.ts).
    setupFiles: ['test/helpers/child-process-cleanup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Two cores: integration tests start real processes; keep the fan-out modest.
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
    pool: 'forks',
    // The slowest files start first, so none runs alone at the end (test/helpers/slowest-first.ts).
    sequence: { sequencer: SlowestFirstSequencer },
  },
});
