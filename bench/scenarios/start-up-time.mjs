// `node bench/run.mjs start-up-time` (issue 48, docs/performance/0114): how long `serve` takes
// from spawn to its listening line — by default `serve --demo`, what `npm start` runs — for two
// built checkouts, alternated round by round so the machine's drift falls on both alike.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { median } from '../lib/stats.mjs';

export const USAGE = `node bench/run.mjs start-up-time [--rounds 5] [--base DIR] [--new DIR] [-- serve args…]

  Spawn → "listening" of \`node dist/cli/main.js serve …\` in each built checkout (default: this one
  for both), alternated, --rounds times each; prints every time and the medians, in ms, and the
  load average. Serve args after -- (default --demo), e.g. -- --config /tmp/plain.yaml
`;

// Its own spawn rather than bench/lib/processes.mjs's spawnProcess: that one looks for the ready
// line every 20 ms, as much as the differences measured here; this one stops the clock on the
// chunk that holds the line.
async function startUpMs(repo, serveArgs) {
  const started = process.hrtime.bigint();
  const child = spawn(process.execPath, ['dist/cli/main.js', 'serve', ...serveArgs], { cwd: repo, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const ms = await new Promise((done, reject) => {
    const onData = (chunk) => {
      output += chunk;
      if (/listening/.test(output)) done(Number(process.hrtime.bigint() - started) / 1e6);
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => reject(new Error(`serve exited ${code}: ${output.slice(-400)}`)));
  });
  const exited = new Promise((done) => child.once('exit', done));
  child.kill('SIGTERM');
  await exited;
  return ms;
}

export async function run(argv) {
  const split = argv.indexOf('--');
  const own = split === -1 ? argv : argv.slice(0, split);
  const serveArgs = split === -1 ? ['--demo'] : argv.slice(split + 1);
  const here = resolve(import.meta.dirname, '..', '..');
  const { values } = parseArgs({ args: own, options: { rounds: { type: 'string', default: '5' }, base: { type: 'string', default: here }, new: { type: 'string', default: here } } });
  const times = { base: [], new: [] };
  for (let round = 0; round < Number(values.rounds); round++) {
    times.base.push(await startUpMs(resolve(values.base), serveArgs));
    times.new.push(await startUpMs(resolve(values.new), serveArgs));
  }
  const whole = (list) => list.map((ms) => Math.round(ms)).join(', ');
  process.stdout.write(`serve ${serveArgs.join(' ')}\nbase ${whole(times.base)} ms (median ${Math.round(median(times.base))})\nnew  ${whole(times.new)} ms (median ${Math.round(median(times.new))})\nload ${readFileSync('/proc/loadavg', 'utf8').trim()}\n`);
}
