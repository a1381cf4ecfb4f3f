// Builds dist/ once before any test file runs: the e2e tests drive the built CLI.
import { execFileSync } from 'node:child_process';

export default function setup(): void {
  execFileSync(process.execPath, ['scripts/build-if-needed.mjs'], { stdio: 'inherit' });
}
