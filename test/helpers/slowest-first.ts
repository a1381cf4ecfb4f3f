// The test files that take longest, started first (vitest's `sequence.sequencer`): with a few
// workers, a 3-minute file started last would run alone at the end of `npm test`. Longest
// first is the classic rule for finishing a set of jobs on a few workers soonest. Vitest orders
// by its own duration cache when it has one (a machine that ran the suite before); a fresh
// clone has none, so the files measured slowest on this project's 2-core machine (seconds of
// one file alone, under load; docs/design.md "The test suite") go first, then vitest's order.
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Slowest first, as measured in a whole `npm test` with three workers that keep their process
 * (decision 0115, which then chose four; 2026-12-07, load 4.8 at start, `--reporter=json`: each file's tests, not its
 * import).
 */
export const SLOW_TEST_FILES: readonly string[] = [
  'test/e2e/bench-smoke.test.ts', // 55 s: bench scenarios 1, 2, 3, 5 and 7 at toy size
  'test/e2e/bench-smoke-idle-streams.test.ts', // 43 s: bench scenario 4 at toy size
  'test/integration/key-expiry-sweeper.test.ts', // 34 s
  'test/faults/soak-short.test.ts', // 27 s
  'test/integration/mcp-conformance.test.ts', // 26 s: the MCP conformance suite, three targets at once
  'test/integration/ratelimit-lease-renewal.test.ts', // 23 s
  'test/e2e/dashboard-browser.test.ts', // 23 s
  'test/e2e/readme-examples.test.ts', // 22 s
  'test/faults/upstream-faults.test.ts', // 21 s
  'test/faults/redis-faults.test.ts', // 19 s
  'test/integration/telemetry-traces.test.ts', // 19 s
  'test/integration/redis-cluster.test.ts', // 17 s
  'test/faults/client-faults.test.ts', // 16 s
  'test/integration/webhook-idle-delivery.test.ts', // 15 s
  'test/faults/gateway-sigkill-audit.test.ts', // 14 s with 6 SIGKILLs
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
