// `agent-gateway audit tail` run in process (test/helpers/cli.ts), its output as lines.
import { runCliInProcess } from './cli.js';

export interface AuditTailRun {
  /** The non-empty lines written to stdout. */
  lines: string[];
  /** What the command set as the exit code; undefined when it set none. */
  exitCode: number | undefined;
  stderr: string;
}

/** Runs `audit tail <args>`; a usage error (commander's) rejects. */
export async function runAuditTail(args: string[]): Promise<AuditTailRun> {
  const run = await runCliInProcess(['audit', 'tail', ...args], { rejectUsageErrors: true });
  return { lines: run.stdout.split('\n').filter(Boolean), exitCode: run.setExitCode, stderr: run.stderr };
}
