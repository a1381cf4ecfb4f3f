// `node bench/run.mjs idle-rss` (issue 48, docs/performance/0114): the memory of idle processes.
// The floor (bare node:http + undici), an idle `serve --demo` (what `npm start` runs) and the
// primary and workers of `serve --workers 2` (with a redis block), each started alone in turn,
// VmRSS read from /proc 8 s after its listening line. Linux only (/proc); run it on a quiet
// machine: each line ends with the load average.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';

export const USAGE = `node bench/run.mjs idle-rss [--rounds 3] [--repo .] [--redis-url redis://127.0.0.1:6379]

  Starts, one at a time: the floor (bench/reference/bare-undici-proxy.mjs), \`serve --demo\`, and
  \`serve --workers 2\` with a redis block; prints each one's VmRSS 8 s after it listens (MB =
  1000 KiB, as /proc counts), the single process's ratio to the floor, and the load average.
  --repo: a built checkout (dist/) to measure; default this one.
`;

const SETTLE_MS = 8_000;
const sleep = (ms) => new Promise((done) => setTimeout(done, ms));
const megabytes = (kib) => (kib / 1000).toFixed(1);

function vmRssKib(pid) {
  const match = readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/);
  if (match === null) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(match[1]);
}

function childPids(pid) {
  try {
    return execFileSync('pgrep', ['-P', String(pid)]).toString().trim().split('\n').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** Starts `node args` in `cwd` and resolves once its output matches `ready` and SETTLE_MS passed. */
async function startIdle(cwd, args, ready) {
  const child = spawn(process.execPath, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  await new Promise((resolveReady, reject) => {
    const timer = setTimeout(() => reject(new Error(`${args.join(' ')}: no ready line in 60 s: ${output.slice(-500)}`)), 60_000);
    const onData = (chunk) => {
      output += chunk;
      if (ready.test(output)) {
        clearTimeout(timer);
        resolveReady();
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${args.join(' ')} exited ${code}: ${output.slice(-500)}`));
    });
  });
  await sleep(SETTLE_MS);
  return child;
}

async function stop(child) {
  const exited = new Promise((done) => child.once('exit', done));
  child.kill('SIGTERM');
  await exited;
}

export async function run(argv) {
  const { values } = parseArgs({ args: argv, options: { rounds: { type: 'string', default: '3' }, repo: { type: 'string', default: resolve(import.meta.dirname, '..', '..') }, 'redis-url': { type: 'string', default: 'redis://127.0.0.1:6379' } } });
  const repo = resolve(values.repo);
  const dir = mkdtempSync(join(tmpdir(), 'agentgw-idle-rss-'));
  const clusterConfig = join(dir, 'cluster.yaml');
  writeFileSync(clusterConfig, `listen: { port: 0 }\nadmin: { port: 0 }\nredis: { url: ${JSON.stringify(values['redis-url'])}, prefix: "idle-rss:" }\nagents:\n  support: { upstream: http://127.0.0.1:9/api/v1 }\nplans:\n  free: { windows: [{ requests: 60, per: 1m }] }\n`);
  for (let round = 1; round <= Number(values.rounds); round++) {
    const floor = await startIdle(repo, ['bench/reference/bare-undici-proxy.mjs', '--upstream', 'http://127.0.0.1:9', '--port', '0'], /listening \d+/);
    const floorKib = vmRssKib(floor.pid);
    await stop(floor);
    const single = await startIdle(repo, ['dist/cli/main.js', 'serve', '--demo'], /gateway listening/);
    const singleKib = vmRssKib(single.pid);
    await stop(single);
    const cluster = await startIdle(repo, ['dist/cli/main.js', 'serve', '--config', clusterConfig, '--workers', '2'], /listening/);
    const primaryKib = vmRssKib(cluster.pid);
    const workersKib = childPids(cluster.pid).map(vmRssKib);
    await stop(cluster);
    const load = readFileSync('/proc/loadavg', 'utf8').split(' ')[0];
    process.stdout.write(`round ${round}: floor ${megabytes(floorKib)} MB; serve --demo ${megabytes(singleKib)} MB (×${(singleKib / floorKib).toFixed(2)} the floor); --workers 2: primary ${megabytes(primaryKib)} MB, workers ${workersKib.map(megabytes).join(', ')} MB; load ${load}\n`);
  }
}
