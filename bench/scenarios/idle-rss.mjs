// `node bench/run.mjs idle-rss` (issue 48, docs/performance/0114): the memory of idle processes.
// The floor (bare node:http + undici), an idle `serve --demo` (what `npm start` runs) and the
// primary and workers of `serve --workers 2` (with a redis block), each started alone in turn,
// VmRSS read from /proc 8 s after its listening line. Linux only (/proc); run it on a quiet
// machine: each line ends with the load average.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { childPids, memoryKb } from '../lib/proc-stats.mjs';
import { spawnProcess } from '../lib/processes.mjs';

export const USAGE = `node bench/run.mjs idle-rss [--rounds 3] [--repo .] [--redis-url redis://127.0.0.1:6379]

  Starts, one at a time: the floor (bench/reference/bare-undici-proxy.mjs), \`serve --demo\`, and
  \`serve --workers 2\` with a redis block; prints each one's VmRSS 8 s after it listens (MB =
  1000 KiB, as /proc counts), the single process's ratio to the floor, and the load average.
  --repo: a built checkout (dist/) to measure; default this one.
`;

const SETTLE_MS = 8_000;
const sleep = (ms) => new Promise((done) => setTimeout(done, ms));
const megabytes = (kib) => (kib / 1000).toFixed(1);
const rssKb = (pid) => memoryKb(pid)?.rssKb ?? NaN;

/** `node args` in `repo`, SETTLE_MS after its output matched `ready`: its RSS and its children's, then stopped. */
async function idleRss(repo, name, args, ready) {
  const handle = await spawnProcess({ name, command: process.execPath, args, cwd: repo, readyPattern: ready, startTimeoutMs: 60_000 });
  try {
    await sleep(SETTLE_MS);
    return { ownKb: rssKb(handle.pid), childrenKb: childPids(handle.pid).map(rssKb) };
  } finally {
    await handle.stop();
  }
}

export async function run(argv) {
  const { values } = parseArgs({ args: argv, options: { rounds: { type: 'string', default: '3' }, repo: { type: 'string', default: resolve(import.meta.dirname, '..', '..') }, 'redis-url': { type: 'string', default: 'redis://127.0.0.1:6379' } } });
  const repo = resolve(values.repo);
  const clusterConfig = join(mkdtempSync(join(tmpdir(), 'agentgw-idle-rss-')), 'cluster.yaml');
  writeFileSync(clusterConfig, `listen: { port: 0 }\nadmin: { port: 0 }\nredis: { url: ${JSON.stringify(values['redis-url'])}, prefix: "idle-rss:" }\nagents:\n  support: { upstream: http://127.0.0.1:9/api/v1 }\nplans:\n  free: { windows: [{ requests: 60, per: 1m }] }\n`);
  for (let round = 1; round <= Number(values.rounds); round++) {
    const floor = await idleRss(repo, 'floor', ['bench/reference/bare-undici-proxy.mjs', '--upstream', 'http://127.0.0.1:9', '--port', '0'], /listening \d+/);
    const single = await idleRss(repo, 'serve-demo', ['dist/cli/main.js', 'serve', '--demo'], /gateway listening/);
    const cluster = await idleRss(repo, 'serve-workers', ['dist/cli/main.js', 'serve', '--config', clusterConfig, '--workers', '2'], /listening/);
    const load = readFileSync('/proc/loadavg', 'utf8').split(' ')[0];
    process.stdout.write(`round ${round}: floor ${megabytes(floor.ownKb)} MB; serve --demo ${megabytes(single.ownKb)} MB (×${(single.ownKb / floor.ownKb).toFixed(2)} the floor); --workers 2: primary ${megabytes(cluster.ownKb)} MB, workers ${cluster.childrenKb.map(megabytes).join(', ')} MB; load ${load}\n`);
  }
}
