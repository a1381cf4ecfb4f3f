// Runs one reference program as a child process and waits for its `listening <port>` line,
// so a benchmark's load generator and the program under load are separate processes.
import { spawn } from 'node:child_process';

/**
 * @param {string} scriptPath
 * @param {string[]} [args]
 * @param {{ env?: NodeJS.ProcessEnv, startTimeoutMs?: number }} [options]
 * @returns {Promise<{ child: import('node:child_process').ChildProcess, port: number, url: string, stop: () => Promise<void> }>}
 */
export function spawnReference(scriptPath, args = [], options = {}) {
  const startTimeoutMs = options.startTimeoutMs ?? 15_000;
  const child = spawn(process.execPath, [scriptPath, ...args], {
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let buffered = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${scriptPath} did not print "listening <port>" within ${startTimeoutMs} ms`));
    }, startTimeoutMs);
    const onExit = (code) => {
      clearTimeout(timer);
      reject(new Error(`${scriptPath} exited with ${code} before listening`));
    };
    child.once('exit', onExit);
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', function onData(text) {
      buffered += text;
      const match = /^listening (\d+)$/m.exec(buffered);
      if (!match) return;
      clearTimeout(timer);
      child.off('exit', onExit);
      child.stdout.off('data', onData);
      child.stdout.resume();
      const port = Number(match[1]);
      resolve({ child, port, url: `http://127.0.0.1:${port}`, stop: () => stopChild(child) });
    });
  });
}

function stopChild(child) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const killTimer = setTimeout(() => child.kill('SIGKILL'), 3_000);
    child.once('exit', () => {
      clearTimeout(killTimer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}
