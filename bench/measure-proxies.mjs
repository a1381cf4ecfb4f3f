// The measurement behind docs/decisions/0001-undici-for-upstream.md: the same load at a
// bare undici proxy, a bare http-proxy proxy (and fastify + @fastify/reply-from when it is
// installed outside the repo), plus two SSE behaviours the decision depends on.
//
//   node bench/measure-proxies.mjs [--duration-s 10] [--runs 3] [--connections 32]
//        [--warmup-s 2] [--no-wrk] [--no-fastify] [--skip-load] [--skip-behaviour]
//        [--timeout-s 900] [--out bench/results/proxies-<date>.json]
//
// The machine this runs on is shared, so absolute numbers drift between runs. Every figure
// is therefore also given as a ratio to the bare undici proxy measured in the same round
// (rounds interleave the targets), and the proxy process's own CPU time per request is
// recorded: it is less sensitive to neighbours than req/s.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { cpuMs } from './lib/proc-stats.mjs';
import os from 'node:os';
import { dirname, join, relative } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { hasFlag, readOption } from './reference/cli-args.mjs';
import { findFastifyReplyFrom } from './reference/fastify-reply-from-proxy.mjs';
import { spawnReference } from './reference/spawn-reference.mjs';
import { CHAT_RESPONSE, startStubRunner } from './reference/stub-runner.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = join(here, '..');
const ref = (name) => join(here, 'reference', name);

const argv = process.argv.slice(2);
const durationS = Number(readOption(argv, 'duration-s', undefined, '10'));
const runs = Number(readOption(argv, 'runs', undefined, '3'));
const connections = Number(readOption(argv, 'connections', undefined, '32'));
const warmupS = Number(readOption(argv, 'warmup-s', undefined, '2'));
const timeoutS = Number(readOption(argv, 'timeout-s', undefined, '900'));
const useWrk = !hasFlag(argv, 'no-wrk');
const useFastify = !hasFlag(argv, 'no-fastify');
const skipLoad = hasFlag(argv, 'skip-load');
const skipBehaviour = hasFlag(argv, 'skip-behaviour');
const startedAt = new Date();
const outPath = readOption(argv, 'out', undefined, freshResultPath(startedAt));

// proxies-<date>.json, or -2, -3, ... when that day already has one: runs on a shared
// machine are only worth comparing side by side, so none overwrites another.
function freshResultPath(date) {
  const base = join(repoRoot, 'bench', 'results', `proxies-${date.toISOString().slice(0, 10)}`);
  let path = `${base}.json`;
  for (let n = 2; existsSync(path); n += 1) path = `${base}-${n}.json`;
  return path;
}

const CHAT_PATH = '/api/v1/chat';
const STREAM_PATH = '/api/v1/chat/stream';
const REQUEST_BODY = JSON.stringify({
  message: 'Hello, what can you do?',
  context: { user_id: 'u-1', session_id: 's-1' },
  temperature: 0.7,
  max_tokens: 256,
});
const BASELINE = 'bare-undici';

const children = new Set();
const notes = [];

// Every child must go, whatever way this process ends.
async function stopAll() {
  await Promise.all([...children].map((c) => c.stop()));
  children.clear();
}
const watchdog = setTimeout(() => {
  process.stderr.write(`measure-proxies: gave up after ${timeoutS} s\n`);
  stopAll().finally(() => process.exit(1));
}, timeoutS * 1000);
watchdog.unref();
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => stopAll().finally(() => process.exit(130)));
}

async function start(name, script, args = []) {
  // An explicit port, so a PORT in the environment (the gateway's override) is not inherited.
  const proc = await spawnReference(ref(script), args.includes('--port') ? args : [...args, '--port', '0']);
  children.add(proc);
  return { name, url: proc.url, pid: proc.child.pid, proc };
}

async function stop(target) {
  if (!target.proc) return;
  children.delete(target.proc);
  await target.proc.stop();
}

function execText(cmd, args, timeoutMs) {
  return new Promise((resolve) => {
    execFile(cmd, args, { timeout: timeoutMs, maxBuffer: 1 << 20 }, (err, stdout, stderr) => {
      resolve({ ok: !err, code: err?.code ?? 0, text: `${stdout}${stderr}` });
    });
  });
}

function median(values) {
  const xs = values.filter((v) => typeof v === 'number' && Number.isFinite(v)).sort((a, b) => a - b);
  if (xs.length === 0) return null;
  const mid = xs.length >> 1;
  return xs.length % 2 ? xs[mid] : (xs[mid - 1] + xs[mid]) / 2;
}

const round1 = (x) => (x === null || x === undefined ? null : Math.round(x * 10) / 10);
const round3 = (x) => (x === null || x === undefined ? null : Math.round(x * 1000) / 1000);

function post(url, path, body = REQUEST_BODY) {
  return new Promise((resolve, reject) => {
    const req = http.request(`${url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      agent: false,
    });
    req.on('error', reject);
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => { text += c; });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, text }));
    });
    req.end(body);
  });
}

// ---------------------------------------------------------------- load

async function runAutocannon(url, seconds) {
  const result = await autocannon({
    url: `${url}${CHAT_PATH}`,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: REQUEST_BODY,
    connections,
    pipelining: 1,
    duration: seconds,
  });
  return {
    reqPerSec: result.requests.average,
    requests: result.requests.total,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    meanMs: result.latency.mean,
    errors: result.errors,
    timeouts: result.timeouts,
    non2xx: result.non2xx,
  };
}

async function runWrk(url, seconds) {
  const args = ['-t1', `-c${connections}`, `-d${seconds}s`, '--timeout', '5s', '-s', ref('wrk-post-chat.lua'), `${url}${CHAT_PATH}`];
  const out = await execText('wrk', args, (seconds + 20) * 1000);
  const line = out.text.split('\n').find((l) => l.startsWith('WRK_JSON '));
  if (!line) throw new Error(`wrk printed no summary:\n${out.text}`);
  const s = JSON.parse(line.slice('WRK_JSON '.length));
  const errors = s.errors.connect + s.errors.read + s.errors.write + s.errors.timeout;
  return {
    reqPerSec: s.requests / (s.duration_us / 1e6),
    requests: s.requests,
    p50Ms: s.p50_us / 1000,
    p99Ms: s.p99_us / 1000,
    meanMs: s.mean_us / 1000,
    errors,
    timeouts: s.errors.timeout,
    non2xx: s.errors.status,
  };
}

const TOOLS = {
  autocannon: runAutocannon,
  wrk: runWrk,
};

async function measureOne(tool, target, round, stubPid) {
  const loadBefore = os.loadavg()[0];
  const proxyCpuBefore = cpuMs(target.pid);
  const stubCpuBefore = cpuMs(stubPid);
  const r = await TOOLS[tool](target.url, durationS);
  const proxyCpu = target.pid ? cpuMs(target.pid) - proxyCpuBefore : null;
  const stubCpu = cpuMs(stubPid) - stubCpuBefore;
  const row = {
    tool, target: target.name, round,
    ...r,
    proxyCpuMsPer1kReq: proxyCpu === null || r.requests === 0 ? null : (proxyCpu / r.requests) * 1000,
    stubCpuMsPer1kReq: r.requests === 0 ? null : (stubCpu / r.requests) * 1000,
    loadAvg1mBefore: loadBefore,
  };
  process.stdout.write(
    `  ${tool.padEnd(10)} round ${round} ${target.name.padEnd(20)} ${row.reqPerSec.toFixed(0).padStart(7)} req/s` +
    `  p50 ${row.p50Ms.toFixed(2)} ms  p99 ${row.p99Ms.toFixed(2)} ms` +
    `${row.proxyCpuMsPer1kReq === null ? '' : `  proxy cpu ${row.proxyCpuMsPer1kReq.toFixed(1)} ms/1k req`}` +
    `  errors ${row.errors} non2xx ${row.non2xx}  (load ${loadBefore.toFixed(2)})\n`,
  );
  return row;
}

function summarise(rows, targets) {
  const summary = {};
  for (const tool of new Set(rows.map((r) => r.tool))) {
    summary[tool] = {};
    for (const t of targets) {
      const mine = rows.filter((r) => r.tool === tool && r.target === t.name);
      if (mine.length === 0) continue;
      const ratio = (field) => median(mine.map((r) => {
        const base = rows.find((b) => b.tool === tool && b.round === r.round && b.target === BASELINE);
        return base && base[field] ? r[field] / base[field] : null;
      }));
      summary[tool][t.name] = {
        runs: mine.length,
        reqPerSec: round1(median(mine.map((r) => r.reqPerSec))),
        reqPerSecVsUndici: round3(ratio('reqPerSec')),
        p50Ms: round3(median(mine.map((r) => r.p50Ms))),
        p50VsUndici: round3(ratio('p50Ms')),
        p99Ms: round3(median(mine.map((r) => r.p99Ms))),
        p99VsUndici: round3(ratio('p99Ms')),
        proxyCpuMsPer1kReq: round1(median(mine.map((r) => r.proxyCpuMsPer1kReq))),
        proxyCpuVsUndici: t.pid ? round3(ratio('proxyCpuMsPer1kReq')) : null,
        errors: mine.reduce((n, r) => n + r.errors + r.timeouts, 0),
        non2xx: mine.reduce((n, r) => n + r.non2xx, 0),
        reqPerSecAllRuns: mine.map((r) => round1(r.reqPerSec)),
      };
    }
  }
  return summary;
}

function printLoadTable(summary) {
  const fmtRatio = (x) => (x === null || x === undefined ? '' : `x${x.toFixed(2)}`);
  const fmt = (x, digits) => (x === null || x === undefined ? '-' : x.toFixed(digits));
  for (const [tool, byTarget] of Object.entries(summary)) {
    process.stdout.write(`\n${tool}: ${connections} connections, ${durationS} s x ${runs} runs, POST ${CHAT_PATH}; medians; "x" = ratio to ${BASELINE} in the same round\n`);
    process.stdout.write(`${'target'.padEnd(20)} ${'req/s'.padStart(9)} ${''.padStart(6)} ${'p50 ms'.padStart(8)} ${''.padStart(6)} ${'p99 ms'.padStart(8)} ${''.padStart(6)} ${'cpu ms/1k'.padStart(10)} ${''.padStart(6)} errors\n`);
    for (const [name, s] of Object.entries(byTarget)) {
      process.stdout.write(
        `${name.padEnd(20)} ${fmt(s.reqPerSec, 0).padStart(9)} ${fmtRatio(s.reqPerSecVsUndici).padStart(6)} ` +
        `${fmt(s.p50Ms, 2).padStart(8)} ${fmtRatio(s.p50VsUndici).padStart(6)} ` +
        `${fmt(s.p99Ms, 2).padStart(8)} ${fmtRatio(s.p99VsUndici).padStart(6)} ` +
        `${fmt(s.proxyCpuMsPer1kReq, 1).padStart(10)} ${fmtRatio(s.proxyCpuVsUndici).padStart(6)} ` +
        `${s.errors + s.non2xx}\n`,
      );
    }
  }
}

async function loadPhase(fastify) {
  const stub = await start('stub-runner', 'stub-runner.mjs');
  const targets = [
    { name: 'stub-direct', url: stub.url, pid: null },
    await start(BASELINE, 'bare-undici-proxy.mjs', ['--upstream', stub.url]),
    await start('bare-http-proxy', 'bare-http-proxy.mjs', ['--upstream', stub.url]),
    // The same undici proxy written with pool.stream() + an AbortController per request:
    // shows what that convenience costs next to the dispatch handler.
    await start('undici-stream-signal', 'bare-undici-proxy.mjs', ['--upstream', stub.url, '--api', 'stream-signal']),
  ];
  if (fastify) targets.push(await start('fastify-reply-from', 'fastify-reply-from-proxy.mjs', ['--upstream', stub.url]));

  // A proxy that answers wrongly fast is not a result: check one exchange first.
  const expected = JSON.stringify(CHAT_RESPONSE);
  for (const t of targets) {
    const r = await post(t.url, CHAT_PATH);
    if (r.status !== 200 || r.text !== expected) throw new Error(`${t.name} answered ${r.status} ${r.text}`);
  }

  const tools = ['autocannon'];
  if (useWrk) {
    const v = await execText('wrk', ['-v'], 5000);
    if (/^wrk /m.test(v.text)) tools.push('wrk');
    else notes.push('wrk not installed: wrk runs skipped (apt-get install -y wrk)');
  }

  process.stdout.write(`warm-up: ${warmupS} s of autocannon per target (not recorded)\n`);
  for (const t of targets) await runAutocannon(t.url, warmupS);

  const rows = [];
  for (const tool of tools) {
    for (let round = 1; round <= runs; round += 1) {
      // Rotating the order spreads slow drift of the shared machine over all targets.
      const shift = (round - 1) % targets.length;
      const order = [...targets.slice(shift), ...targets.slice(0, shift)];
      for (const t of order) rows.push(await measureOne(tool, t, round, stub.pid));
    }
  }
  for (const t of targets) await stop(t);
  await stop(stub);
  const summary = summarise(rows, targets);
  printLoadTable(summary);
  return { tools, targets: targets.map((t) => t.name), rows, summary };
}

// ---------------------------------------------------------------- behaviour

// The stub runs in this process so that "the client aborted" and "the upstream saw its
// request close" are read on one clock; the proxies stay separate processes.
function streamWatcher() {
  const ended = new Map();
  const waiting = new Map();
  return {
    onStreamEnd(event) {
      const probe = new URLSearchParams(event.url.split('?')[1] ?? '').get('probe');
      if (!probe) return;
      const w = waiting.get(probe);
      if (w) { waiting.delete(probe); w(event); } else ended.set(probe, event);
    },
    waitFor(probe, timeoutMs) {
      if (ended.has(probe)) return Promise.resolve(ended.get(probe));
      return new Promise((resolve) => {
        const timer = setTimeout(() => { waiting.delete(probe); resolve(null); }, timeoutMs);
        waiting.set(probe, (e) => { clearTimeout(timer); resolve(e); });
      });
    },
  };
}

let probeSeq = 0;

/** Time from sending the request to the client seeing headers, and to the first body byte. */
function timeToHeaders(url) {
  const probe = `h${probeSeq += 1}`;
  return new Promise((resolve, reject) => {
    const req = http.request(`${url}${STREAM_PATH}?tokens=2&intervalMs=10&firstTokenDelayMs=1000&probe=${probe}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(REQUEST_BODY) },
      agent: false,
    });
    const t0 = performance.now();
    let headersMs = null;
    let firstByteMs = null;
    const timer = setTimeout(() => { req.destroy(); reject(new Error('time-to-headers probe timed out')); }, 10_000);
    req.on('error', (err) => { clearTimeout(timer); reject(err); });
    req.on('response', (res) => {
      headersMs = performance.now() - t0;
      res.on('data', () => { if (firstByteMs === null) firstByteMs = performance.now() - t0; });
      res.on('end', () => {
        clearTimeout(timer);
        resolve({ status: res.statusCode, contentType: res.headers['content-type'], headersMs, firstByteMs });
      });
    });
    req.end(REQUEST_BODY);
  });
}

/**
 * Starts a long stream, aborts the client either after `afterTokens` token events or after
 * `afterMs` (when the upstream has not sent headers yet), then waits for the stub to report
 * how that stream ended.
 */
function abortProbe(url, watcher, { query, afterTokens = null, afterMs = null, waitMs }) {
  const probe = `a${probeSeq += 1}`;
  return new Promise((resolve, reject) => {
    const req = http.request(`${url}${STREAM_PATH}?${query}&probe=${probe}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(REQUEST_BODY) },
      agent: false,
    });
    let abortedAtMs = null;
    let tokensSeen = 0;
    const abort = () => {
      if (abortedAtMs !== null) return;
      abortedAtMs = performance.now();
      req.destroy();
      watcher.waitFor(probe, waitMs).then((end) => {
        if (!end) {
          resolve({ tokensSeenByClient: tokensSeen, upstreamOutcome: `no end within ${waitMs} ms`, upstreamEndMsAfterAbort: null, upstreamTokensSent: null });
          return;
        }
        resolve({
          tokensSeenByClient: tokensSeen,
          upstreamOutcome: end.outcome,
          upstreamEndMsAfterAbort: round1(end.endedAtMs - abortedAtMs),
          upstreamTokensSent: end.tokensSent,
          upstreamTokensPlanned: end.tokens,
        });
      });
    };
    req.on('error', (err) => { if (abortedAtMs === null) reject(err); });
    if (afterMs !== null) setTimeout(abort, afterMs);
    req.on('response', (res) => {
      res.setEncoding('utf8');
      res.on('data', (text) => {
        tokensSeen += text.split('event: token').length - 1;
        if (afterTokens !== null && tokensSeen >= afterTokens) abort();
      });
      res.on('error', () => {});
    });
    req.end(REQUEST_BODY);
  });
}

async function behaviourPhase(fastify) {
  const watcher = streamWatcher();
  const stub = await startStubRunner({ onStreamEnd: (e) => watcher.onStreamEnd(e) });
  const targets = [
    { name: 'stub-direct', url: stub.url },
    await start(BASELINE, 'bare-undici-proxy.mjs', ['--upstream', stub.url]),
    await start('bare-http-proxy', 'bare-http-proxy.mjs', ['--upstream', stub.url]),
    await start('http-proxy+patch', 'bare-http-proxy.mjs', ['--upstream', stub.url, '--patch-streaming']),
  ];
  if (fastify) targets.push(await start('fastify-reply-from', 'fastify-reply-from-proxy.mjs', ['--upstream', stub.url]));

  const sseHeaders = [];
  process.stdout.write('\n(a) SSE: upstream flushes headers, then waits 1000 ms before the first event\n');
  process.stdout.write(`${'target'.padEnd(20)} ${'headers ms (each)'.padEnd(28)} first byte ms (each)\n`);
  for (const t of targets) {
    const tries = [];
    for (let i = 0; i < 3; i += 1) tries.push(await timeToHeaders(t.url));
    const row = {
      target: t.name,
      headersMsMedian: round1(median(tries.map((x) => x.headersMs))),
      firstByteMsMedian: round1(median(tries.map((x) => x.firstByteMs))),
      headersMs: tries.map((x) => round1(x.headersMs)),
      firstByteMs: tries.map((x) => round1(x.firstByteMs)),
      statuses: tries.map((x) => x.status),
    };
    sseHeaders.push(row);
    process.stdout.write(`${t.name.padEnd(20)} ${row.headersMs.join(', ').padEnd(28)} ${row.firstByteMs.join(', ')}\n`);
  }

  const abortMidStream = [];
  process.stdout.write('\n(b) client aborts after 3 token events of a 200-token stream (25 ms apart, ~5 s)\n');
  process.stdout.write(`${'target'.padEnd(20)} upstream saw\n`);
  for (const t of targets) {
    for (let i = 0; i < 2; i += 1) {
      const r = await abortProbe(t.url, watcher, { query: 'tokens=200&intervalMs=25&firstTokenDelayMs=25', afterTokens: 3, waitMs: 8000 });
      abortMidStream.push({ target: t.name, ...r });
      process.stdout.write(`${t.name.padEnd(20)} ${describeAbort(r)}\n`);
    }
  }

  const abortBeforeHeaders = [];
  process.stdout.write('\n(b2) client aborts 300 ms in, while the upstream holds its headers for 2000 ms (3-token stream)\n');
  for (const t of targets) {
    for (let i = 0; i < 2; i += 1) {
      const r = await abortProbe(t.url, watcher, { query: 'tokens=3&intervalMs=25&headersDelayMs=2000', afterMs: 300, waitMs: 5000 });
      abortBeforeHeaders.push({ target: t.name, ...r });
      process.stdout.write(`${t.name.padEnd(20)} ${describeAbort(r)}\n`);
    }
  }

  for (const t of targets) await stop(t);
  await stub.close();
  return { sseHeaders, abortMidStream, abortBeforeHeaders };
}

function describeAbort(r) {
  if (r.upstreamOutcome === 'client_closed') {
    return `request closed ${r.upstreamEndMsAfterAbort} ms after the client abort (${r.upstreamTokensSent}/${r.upstreamTokensPlanned} tokens sent)`;
  }
  if (r.upstreamOutcome === 'completed') {
    return `NO close: stream ran to completion ${r.upstreamEndMsAfterAbort} ms after the client abort (${r.upstreamTokensSent}/${r.upstreamTokensPlanned} tokens sent)`;
  }
  return r.upstreamOutcome;
}

// ---------------------------------------------------------------- main

async function machine() {
  const wrk = useWrk ? await execText('wrk', ['-v'], 5000) : { text: '' };
  const pkgVersion = (name) => {
    try {
      return JSON.parse(readFileSync(join(repoRoot, 'node_modules', name, 'package.json'), 'utf8')).version;
    } catch {
      return null;
    }
  };
  return {
    date: startedAt.toISOString(),
    nproc: os.availableParallelism(),
    cpuModel: os.cpus()[0]?.model ?? null,
    totalMemGiB: round1(os.totalmem() / 2 ** 30),
    node: process.version,
    platform: `${os.platform()} ${os.release()}`,
    loadAvgAtStart: os.loadavg().map(round1),
    versions: {
      undici: pkgVersion('undici'),
      'http-proxy': pkgVersion('http-proxy'),
      autocannon: pkgVersion('autocannon'),
      wrk: /wrk (\S+)/.exec(wrk.text)?.[1] ?? null,
    },
  };
}

async function main() {
  const info = await machine();
  let fastify = null;
  if (useFastify) {
    fastify = findFastifyReplyFrom();
    if (fastify) {
      info.versions.fastify = fastify.fastifyVersion;
      info.versions['@fastify/reply-from'] = fastify.replyFromVersion;
    } else {
      notes.push('fastify + @fastify/reply-from not found in FASTIFY_REF_DIR (default /tmp/fastify-ref): skipped');
    }
  }
  process.stdout.write(`machine: ${info.nproc} cpus (${info.cpuModel}), node ${info.node}, load ${info.loadAvgAtStart.join(' ')}\n`);
  for (const n of notes) process.stdout.write(`note: ${n}\n`);

  const result = {
    machine: info,
    config: { durationS, runs, connections, warmupS, pipelining: 1, body: REQUEST_BODY, path: CHAT_PATH, baseline: BASELINE },
    command: `node ${relative(repoRoot, fileURLToPath(import.meta.url))} ${argv.join(' ')}`.trim(),
    notes,
  };
  if (!skipLoad) result.load = await loadPhase(fastify);
  if (!skipBehaviour) result.behaviour = await behaviourPhase(fastify);
  result.machine.loadAvgAtEnd = os.loadavg().map(round1);
  result.machine.durationS = round1((Date.now() - startedAt.getTime()) / 1000);

  mkdirSync(dirname(outPath), { recursive: true });
  writeFileSync(outPath, `${JSON.stringify(result, null, 2)}\n`);
  process.stdout.write(`\nwrote ${relative(process.cwd(), outPath)} (load avg at end ${result.machine.loadAvgAtEnd.join(' ')})\n`);
}

main()
  .then(() => stopAll())
  .then(() => process.exit(0))
  .catch(async (err) => {
    process.stderr.write(`measure-proxies: ${err.stack ?? err}\n`);
    await stopAll();
    process.exit(1);
  });
