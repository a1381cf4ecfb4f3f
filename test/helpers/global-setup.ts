// Builds dist/ once before any test file runs: the e2e tests drive the built CLI. A build
// failure is reported here and surfaces again in the e2e tests that need dist/; unit and
// integration tests run from source and still run (`npm test` builds first and stops on failure).
import { execFileSync } from 'node:child_process';

export function setup(): void {
  try {
    execFileSync(process.execPath, ['scripts/build-if-needed.mjs'], { stdio: 'inherit' });
  } catch {
    process.stderr.write('agent-gateway tests: building dist/ failed; e2e tests will fail\n');
  }
}
