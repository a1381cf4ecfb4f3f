// Runs a repo script (a bench tool) under this test's node as a child process and collects
// everything it printed, stdout and stderr interleaved, with its exit code.
import { spawn } from 'node:child_process';
import { trackChildProcess } from './child-processes.js';

export function runNodeScript(script: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = trackChildProcess(spawn(process.execPath, [script, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] }));
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, output }));
  });
}
