// The test files that take longest, started first (vitest's `sequence.sequencer`): with two
// workers, a 3-minute file started last would run alone at the end of `npm test`. Longest
// first is the classic rule for finishing a set of jobs on a few workers soonest. Vitest orders
// by its own duration cache when it has one (a machine that ran the suite before); a fresh
// clone has none, so the files measured slowest on this project's 2-core machine (seconds of
// one file alone, under load; docs/design.md "The test suite") go first, then vitest's order.
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** Slowest first, as measured (`npx vitest run --reporter=verbose <file>`), 2026-12-07. */
export const SLOW_TEST_FILES: readonly string[] = [
  'test/faults/gateway-sigkill-audit.test.ts', // 204 s: 20 SIGKILLs under traffic, a restart after each
  'test/e2e/bench-smoke.test.ts', // 194 s: every bench scenario at toy size
  'test/faults/client-faults.test.ts', // 61 s
  'test/e2e/gateway-keys-revocation.test.ts', // 58 s
  'test/faults/gateway-process-faults.test.ts', // 57 s
  'test/e2e/dashboard-browser.test.ts', // 56 s
  'test/faults/redis-faults.test.ts', // 54 s
  'test/e2e/dashboard-events.test.ts', // 52 s
  'test/faults/upstream-faults.test.ts', // 49 s
  'test/e2e/observability-process.test.ts', // 41 s
  'test/e2e/child-process-cleanup.test.ts', // 41 s
  'test/e2e/cli-help.test.ts', // 38 s
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
