// `agent-gateway audit tail` run in process through commander, its output captured.
import { PassThrough } from 'node:stream';
import { Command } from 'commander';
import { registerAuditCommand } from '../../src/cli/audit.js';

export interface AuditTailRun {
  /** The non-empty lines written to stdout. */
  lines: string[];
  /** What the command set as the exit code; undefined when it set none. */
  exitCode: number | undefined;
  stderr: string;
}

/** Runs `audit tail <args>`; a usage error (commander's) rejects. */
export async function runAuditTail(args: string[]): Promise<AuditTailRun> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (c: Buffer) => (out += c.toString()));
  stderr.on('data', (c: Buffer) => (err += c.toString()));
  let exitCode: number | undefined;
  const program = new Command('agent-gateway').exitOverride().configureOutput({ writeErr: () => {} });
  registerAuditCommand(program, { stdout, stderr, setExitCode: (code) => (exitCode = code) });
  await program.parseAsync(['audit', 'tail', ...args], { from: 'user' });
  return { lines: out.split('\n').filter(Boolean), exitCode, stderr: err };
}
