// `agent-gateway` as the tests run it, written once. In process: the commands src/cli/main.ts
// registers, on a commander program whose output and exit codes are captured instead of
// reaching this process (a test injects a clock and an environment). As the built bin
// (dist/cli/main.js, what an operator runs): run to its exit, or started as a child that keeps
// running (serve, audit tail --follow) with its output collected as it comes.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { Command, CommanderError } from 'commander';
import { registerAuditCommand } from '../../src/cli/commands/audit.js';
import { registerKeysCommand } from '../../src/cli/commands/keys.js';
import { registerEventsCommand } from '../../src/cli/commands/events.js';
import { registerUsageCommand } from '../../src/cli/commands/usage.js';
import type { Clock } from '../../src/clock.js';
import { trackChildProcess } from './child-processes.js';

export const CLI_PATH = join(process.cwd(), 'dist/cli/main.js');

export interface CliRun {
  /** The exit status: the one the command set, commander's for a usage error, else 0. */
  code: number;
  stdout: string;
  stderr: string;
}

export interface InProcessCliRun extends CliRun {
  /** The exit code the command set itself; undefined when it set none. */
  setExitCode: number | undefined;
}

export interface InProcessCliOptions {
  /** The environment the keys command reads (REDIS_URL …); empty by default, never this process's. */
  env?: NodeJS.ProcessEnv;
  clock?: Clock;
  /** A `--config` option on the program itself too, before the sub-command's own. */
  programConfigOption?: boolean;
  /** A commander usage error (unknown option, invalid value) rejects instead of giving its exit code. */
  rejectUsageErrors?: boolean;
}

/** A stream that hands every chunk to `write` at once (the audit command writes to streams). */
function textSink(write: (text: string) => void): Writable {
  return new Writable({
    write(chunk: Buffer | string, _encoding, done) {
      write(chunk.toString());
      done();
    },
  });
}

/** Runs `agent-gateway <args>` in this process: keys, usage and audit, as main.ts registers them. */
export async function runCliInProcess(args: string[], options: InProcessCliOptions = {}): Promise<InProcessCliRun> {
  const run: InProcessCliRun = { code: 0, stdout: '', stderr: '', setExitCode: undefined };
  const stdout = (text: string) => void (run.stdout += text);
  const stderr = (text: string) => void (run.stderr += text);
  const setExitCode = (code: number) => {
    run.setExitCode = code;
    run.code = code;
  };
  const program = new Command('agent-gateway').exitOverride().configureOutput({ writeOut: stdout, writeErr: stderr });
  if (options.programConfigOption) program.option('--config <path>', 'config', 'config/gateway.yaml');
  registerKeysCommand(program, { clock: options.clock, env: options.env ?? {}, stdout, stderr, setExitCode });
  registerUsageCommand(program, { stdout, stderr, setExitCode });
  registerEventsCommand(program, { stdout, stderr, setExitCode });
  registerAuditCommand(program, { stdout: textSink(stdout), stderr: textSink(stderr), setExitCode });
  try {
    await program.parseAsync(args, { from: 'user' });
  } catch (error) {
    if (!(error instanceof CommanderError) || options.rejectUsageErrors) throw error;
    run.code = error.exitCode;
  }
  return run;
}

export interface BuiltCliOptions {
  /** Added to this process's environment, after REDIS_URL and PORT are emptied (so the config decides). */
  env?: NodeJS.ProcessEnv;
  cwd?: string;
}

function childEnvironment(env: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return { ...process.env, REDIS_URL: '', PORT: '', ...env };
}

/** Runs the built bin to its exit; a non-zero exit resolves too (its code says so). */
export function runBuiltCli(args: string[], options: BuiltCliOptions & { timeoutMs?: number } = {}): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    trackChildProcess(
      execFile(process.execPath, [CLI_PATH, ...args], { env: childEnvironment(options.env), cwd: options.cwd, timeout: options.timeoutMs ?? 30_000 }, (error, stdout, stderr) => {
        if (error && typeof error.code !== 'number') reject(new Error(`agent-gateway ${args.join(' ')}: ${error.message}\n${stderr}`));
        else resolve({ code: error ? Number(error.code) : 0, stdout, stderr });
      }),
    );
  });
}

/** The stdout of a run of the built bin that must succeed; a non-zero exit rejects with its stderr. */
export async function builtCliOutput(args: string[], options: BuiltCliOptions & { timeoutMs?: number } = {}): Promise<string> {
  const run = await runBuiltCli(args, options);
  if (run.code !== 0) throw new Error(`agent-gateway ${args.join(' ')} exited ${run.code}:\n${run.stderr}`);
  return run.stdout;
}

export interface CliChild {
  child: ChildProcess;
  /** Everything it wrote so far, stdout and stderr interleaved. */
  output(): string;
  /** What it wrote to stdout so far. */
  stdout(): string;
  /** Its exit, as `once(child, 'exit')` gives it. */
  exited: Promise<[number | null, NodeJS.Signals | null]>;
  /** Resolves once `test(output())` holds; rejects, with the output, when it exits first or after `timeoutMs`. */
  waitForOutput(test: (output: string) => boolean, what: string, timeoutMs?: number): Promise<void>;
}

export interface CliChildOptions extends BuiltCliOptions {
  /** Node flags before the CLI's path. */
  nodeArgs?: string[];
  /** Soft `ulimit -n` for the child (falls back to the hard limit). */
  fdLimit?: number;
  /** Leads its own process group (a cluster primary and its workers), killed as one at cleanup. */
  group?: boolean;
}

/** Starts the built bin as a child that keeps running. */
export function spawnBuiltCli(args: string[], options: CliChildOptions = {}): CliChild {
  const argv = [...(options.nodeArgs ?? []), CLI_PATH, ...args];
  const spawnOptions = { env: childEnvironment(options.env), cwd: options.cwd, stdio: ['ignore', 'pipe', 'pipe'] as ['ignore', 'pipe', 'pipe'], detached: options.group ?? false };
  const child = trackChildProcess(
    options.fdLimit
      ? // exec keeps the pid: signals reach node, not bash.
        spawn('bash', ['-c', `ulimit -n ${options.fdLimit} 2>/dev/null || ulimit -n "$(ulimit -Hn)"; exec "$0" "$@"`, process.execPath, ...argv], spawnOptions)
      : spawn(process.execPath, argv, spawnOptions),
    { group: options.group ?? false },
  );
  let output = '';
  let stdout = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    const text = chunk.toString('utf8');
    output += text;
    stdout += text;
  });
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  return {
    child,
    output: () => output,
    stdout: () => stdout,
    exited,
    async waitForOutput(test, what, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      while (!test(output)) {
        if (child.exitCode !== null || child.signalCode !== null) throw new Error(`exited (${child.exitCode ?? child.signalCode}) before ${what}:\n${output}`);
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}:\n${output}`);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    },
  };
}
