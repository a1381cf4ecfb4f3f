// The test files that take longest, started first (vitest's `sequence.sequencer`): with two
// workers, a 3-minute file started last would run alone at the end of `npm test`. Longest
// first is the classic rule for finishing a set of jobs on a few workers soonest. Vitest orders
// by its own duration cache when it has one (a machine that ran the suite before); a fresh
// clone has none, so the files measured slowest on this project's 2-core machine (seconds of
// one file alone, under load; docs/design.md "The test suite") go first, then vitest's order.
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Slowest first, as measured in a whole `npm test` at a load average of 19–21 (2026-12-07,
 * `npx vitest run --reporter=json`: each file's tests, not its import) before bench-smoke was
 * split in two and the sigkill file went to 6 kills; those three as measured since, alone at a
 * load of ~19–20 (docs/design.md "The test suite").
 */
export const SLOW_TEST_FILES: readonly string[] = [
  'test/integration/mcp-conformance.test.ts', // 77 s: the MCP conformance suite against the front door
  'test/e2e/bench-smoke.test.ts', // 54 s: bench scenarios 1, 2, 3, 5 (and since, 7) at toy size (100 s in the run above, with scenario 4)
  'test/e2e/bench-smoke-idle-streams.test.ts', // 48 s: bench scenario 4 at toy size
  'test/e2e/readme-examples.test.ts', // 42 s
  'test/e2e/child-process-cleanup.test.ts', // 41 s
  'test/integration/gateway-agent-runs-processes.test.ts', // 41 s
  'test/integration/key-expiry-sweeper.test.ts', // 36 s
  'test/faults/upstream-faults.test.ts', // 35 s
  'test/integration/keys-index-pages.test.ts', // 33 s
  'test/faults/soak-short.test.ts', // 31 s
  'test/e2e/observability-process.test.ts', // 31 s
  'test/e2e/cli-help.test.ts', // 29 s
  'test/integration/ratelimit-lease-renewal.test.ts', // 27 s
  'test/integration/redis-cluster.test.ts', // 26 s
  'test/integration/gateway-upstreams.test.ts', // 25 s
  'test/faults/redis-faults.test.ts', // 25 s
  'test/faults/gateway-sigkill-audit.test.ts', // 16 s with 6 SIGKILLs (29 s with 20 in the run above; 204 s in decision 0097's)
];

export class SlowestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (file: TestSpecification): number => {
      const index = SLOW_TEST_FILES.findIndex((slow) => file.moduleId.endsWith(slow));
      return index < 0 ? SLOW_TEST_FILES.length : index;
    };
    // A stable sort: the known slow files first, in the order above; the rest as vitest had them.
    return sorted.map((file, position) => ({ file, position, rank: rank(file) })).sort((a, b) => a.rank - b.rank || a.position - b.position).map(({ file }) => file);
  }
}
