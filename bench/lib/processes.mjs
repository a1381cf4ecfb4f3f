// Every process the bench starts goes through here, so that all of them stop at the end —
// on success, on a thrown error, on Ctrl-C, on the watchdog — and none is left holding a
// port or a core on the shared machine.
import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { join } from 'node:path';

const running = new Set();

/**
 * Starts a child and waits until its output matches `readyPattern` (stdout and stderr are
 * both searched, and both are copied to `logFile`).
 *
 * @param {object} options
 * @param {string} options.name for messages
 * @param {string} options.command
 * @param {string[]} [options.args]
 * @param {NodeJS.ProcessEnv} [options.env] the whole environment of the child
 * @param {number} [options.fdLimit] `ulimit -n` for the child (through bash; must be ≤ the hard limit)
 * @param {RegExp} [options.readyPattern] none: ready as soon as it is spawned
 * @param {string} [options.cwd] its working directory (default: this process's)
 * @param {string} [options.logFile]
 * @param {number} [options.startTimeoutMs]
 * @param {number} [options.stopGraceMs] SIGTERM, then SIGKILL after this long
 * @param {() => number[]} [options.extraPids] processes the child forked that must die with it (nginx workers)
 */
export function spawnProcess(options) {
  const { name, fdLimit, readyPattern } = options;
  const startTimeoutMs = options.startTimeoutMs ?? 20_000;
  const [command, args] = fdLimit
    ? ['bash', ['-c', 'ulimit -n "$1" || exit 97; shift; exec "$@"', 'bench-fd-limit', String(fdLimit), options.command, ...(options.args ?? [])]]
    : [options.command, options.args ?? []];
  const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
  const log = options.logFile ? createWriteStream(options.logFile, { flags: 'a' }) : null;
  const handle = {
    name,
    child,
    pid: child.pid,
    logFile: options.logFile,
    match: null,
    extraPids: options.extraPids ?? (() => []),
    stop: (graceMs = options.stopGraceMs ?? 5_000) => stopProcess(handle, graceMs),
  };
  running.add(handle);
  child.once('exit', () => {
    running.delete(handle);
    log?.end();
  });

  let tail = '';
  const onOutput = (chunk) => {
    log?.write(chunk);
    if (handle.match === null) tail = (tail + chunk.toString('utf8')).slice(-8_192);
  };
  child.stdout.on('data', onOutput);
  child.stderr.on('data', onOutput);

  if (!readyPattern) return Promise.resolve(handle);
  return new Promise((resolve, reject) => {
    const fail = (message) => {
      clearTimeout(timer);
      clearInterval(poll);
      child.off('exit', onExit);
      void handle.stop(0);
      reject(new Error(`${name}: ${message}\n--- last output ---\n${tail.trim()}`));
    };
    const onExit = (code, signal) => fail(`exited (${code ?? signal}) before it was ready`);
    const timer = setTimeout(() => fail(`not ready within ${startTimeoutMs} ms`), startTimeoutMs);
    const poll = setInterval(() => {
      const match = readyPattern.exec(tail);
      if (!match) return;
      clearTimeout(timer);
      clearInterval(poll);
      child.off('exit', onExit);
      handle.match = match;
      tail = '';
      resolve(handle);
    }, 20);
    child.once('exit', onExit);
  });
}

function isAlive(child) {
  return child.exitCode === null && child.signalCode === null;
}

function stopProcess(handle, graceMs) {
  const { child } = handle;
  const extra = safeExtraPids(handle);
  if (!isAlive(child)) {
    killQuietly(extra, 'SIGKILL');
    return Promise.resolve();
  }
  return new Promise((resolve) => {
    const killTimer = setTimeout(() => {
      child.kill('SIGKILL');
      killQuietly(extra, 'SIGKILL');
    }, graceMs);
    child.once('exit', () => {
      clearTimeout(killTimer);
      killQuietly(extra, 'SIGKILL');
      resolve();
    });
    child.kill(graceMs === 0 ? 'SIGKILL' : 'SIGTERM');
  });
}

function safeExtraPids(handle) {
  try {
    return handle.extraPids();
  } catch {
    return [];
  }
}

function killQuietly(pids, signal) {
  for (const pid of pids) {
    try {
      process.kill(pid, signal);
    } catch {
      // Already gone.
    }
  }
}

/** Stops every child still running (gracefully, in parallel). */
export async function stopAll(graceMs = 5_000) {
  await Promise.all([...running].map((handle) => handle.stop(graceMs)));
}

let installed = false;

/**
 * Makes sure children die with this process: SIGINT/SIGTERM stop them and exit, an exit
 * for any other reason SIGKILLs what is left (the 'exit' handler cannot wait).
 */
export function installExitHandlers(onSignal) {
  if (installed) return;
  installed = true;
  process.once('exit', () => {
    for (const handle of running) {
      try {
        handle.child.kill('SIGKILL');
      } catch {
        // Already gone.
      }
      killQuietly(safeExtraPids(handle), 'SIGKILL');
    }
  });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.once(signal, () => {
      process.stderr.write(`\nbench: ${signal}, stopping children\n`);
      Promise.resolve(onSignal?.())
        .catch(() => {})
        .then(() => stopAll(2_000))
        .finally(() => process.exit(130));
    });
  }
}

/** The stub agent runner every measurement and reference talks to. */
export const STUB_RUNNER_SCRIPT = join(import.meta.dirname, '..', 'reference', 'stub-runner.mjs');

/**
 * A node program of bench/ (the stub runner, a bare reference proxy) as a child process, ready
 * once it prints `listening <port>`; `port` is that port. PORT is taken out of its
 * environment: the bench chooses every port itself.
 *
 * @param {object} options
 * @param {string} options.name for messages and its log file, `<tmpDir>/<name>.out`
 * @param {string} options.script
 * @param {string[]} [options.args]
 * @param {string} options.tmpDir
 * @param {number} [options.fdLimit]
 * @param {string[]} [options.nodeArgs] node flags before the script
 * @param {NodeJS.ProcessEnv} [options.env] added to this process's environment
 */
export async function startNodeProgram({ name, script, args = [], tmpDir, fdLimit, nodeArgs = [], env = {} }) {
  const childEnv = { ...process.env, ...env };
  delete childEnv.PORT;
  const handle = await spawnProcess({
    name,
    command: process.execPath,
    args: [...nodeArgs, script, ...args],
    env: childEnv,
    fdLimit,
    readyPattern: /^listening (\d+)$/m,
    logFile: join(tmpDir, `${name}.out`),
  });
  const port = Number(handle.match[1]);
  return { handle, pid: handle.pid, port, url: `http://127.0.0.1:${port}`, stop: (graceMs) => handle.stop(graceMs) };
}

/** The stub runner (bench/reference/stub-runner.mjs) as a process of its own; `url` is where it listens. */
export function startStubRunner({ tmpDir, name = 'stub', fdLimit }) {
  return startNodeProgram({ name, script: STUB_RUNNER_SCRIPT, args: ['--port', '0'], tmpDir, fdLimit });
}
