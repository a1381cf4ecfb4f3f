// Instructions per request, counted by valgrind's callgrind: an A/B of gateway builds that
// the machine's noise cannot move. CPU time per request on these shared 2-core machines
// swings by ×1.5 between rounds of the same build (docs/performance.md), which hides any
// change smaller than ~20 %; an instruction count is the same whatever else the machine is
// doing. What it does not see: cache misses, the kernel's share (system calls), and time.
// The one tool beside bench/run.mjs rather than a measurement of it (docs/performance.md,
// "Measurements outside the suite"): it runs builds under valgrind, where nothing else may run.
// One file over 300 lines: every kind of build (variations, references, MCP) is started,
// driven and counted by the same run loop, which reads best in one place.
//
//   node bench/count-instructions.mjs base=/path/to/old-checkout new=.
//   node bench/count-instructions.mjs --runs 3 cur=. cur-nolog=.:no-request-log
//   node bench/count-instructions.mjs n20=. n22=.:node=/opt/node22/bin/node   (a build under another node)
//   node bench/count-instructions.mjs n22=.:node=/opt/node22/bin/node ref:bare-undici:node=/opt/node22/bin/node
//   node bench/count-instructions.mjs mcp=.:mcp ref:bare-undici-mcp      (an MCP tools/call, and its floor)
//
// Each run starts the build's gateway (the bench's production config, one shared stub and
// Redis) under callgrind, sends --warmup requests, zeroes the counters, sends --requests more
// (closed loop, --connections at a time), dumps the counters and stops the gateway. Reported:
// the main thread's instructions per request (JavaScript, node:http, undici, scavenges it
// runs itself) and all threads' (with V8's helper threads: concurrent marking, parallel
// scavenging, compilation), medians over --runs, and each build's ratio to the first.
// Under callgrind a gateway runs ≈ 50× slower, so work driven by time rather than by
// requests (timers, lease renewals, the audit stream's 50 ms batches) weighs ≈ 50× more per
// request than at full speed: compare builds with each other, not with CPU time.
// Flags: --requests N (4000), --warmup N (4000), --connections N (8), --runs N (2),
// --parallel N (2: runs at a time; callgrind runs a process on one core), --start-timeout-s N
// (300: how long a gateway under callgrind may take to start), --idle-s N (0: off).
//
// --idle-s N separates the time-driven work from the requests' own: after the counted
// requests' dump the counters are zeroed again, N seconds pass with no traffic, and a second
// dump gives the main thread's instructions per second at idle. Reported beside the raw
// figure: the counted phase's wall seconds, and the per-request figure net of time-driven
// work, main − idle rate × phase seconds / requests (docs/performance.md, "Measurements
// outside the suite": background work under load is not exactly background work at idle).
//
//
// `ref:bare-undici` and `ref:fastify-stack` in place of a build count the floor
// (bench/reference/bare-undici-proxy.mjs) and the fastify peer (bench/peers, installed by
// `npm run bench`) the same way, so the gateway's ratio to them is free of the machine's
// noise too (issue 26: CPU per request within 1.5× of bare undici). They do less per
// request by design (no audit, no metrics; bare undici: no key, no limit, no log).
//
// A build with the `mcp` variation (bench/lib/build-specs.mjs) counts an MCP `tools/call`
// (issue 46) instead of a chat request: a stub MCP server (bench/reference/stub-mcp-server.mjs)
// behind /mcp/bench-tools, the key scoped to it, one session opened before the warm-up, and
// the same call on it from then on. `ref:bare-undici-mcp` counts the floor forwarding the
// same call to the same server.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { startBenchRedis } from './lib/bench-redis.mjs';
import { applyConfigVariations, benchCertificate, parseBuildSpec, usesJwt, usesTls } from './lib/build-specs.mjs';
import { BENCH_ACCOUNT, BENCH_AGENT, BENCH_PLAN, createBenchKey, gatewayEnvironment, GATEWAY_READY_PATTERN, writeGatewayConfig } from './lib/gateway.mjs';
import { REQUEST_BODY } from './lib/load-tools.mjs';
import { installExitHandlers, spawnProcess, startNodeProgram, startStubRunner, stopAll } from './lib/processes.mjs';
import { ensurePeersInstalled } from './lib/peers.mjs';
import { pathToFileURL } from 'node:url';
import { median } from './lib/stats.mjs';
import { startOtlpSink } from './lib/otlp-sink.mjs';
import { JWT_AUDIENCE, startJwtIssuer } from './lib/jwt-issuer.mjs';
import { GATEWAY_MCP_PATH, MCP_SERVER, openMcpSession, TOOL_CALL_BODY } from './lib/mcp-session.mjs';
import { MCP_PATH } from './reference/stub-mcp-server.mjs';

const repoRoot = resolve(import.meta.dirname, '..');
const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    requests: { type: 'string', default: '4000' },
    warmup: { type: 'string', default: '4000' },
    connections: { type: 'string', default: '8' },
    runs: { type: 'string', default: '2' },
    parallel: { type: 'string', default: '2' },
    // How long a gateway under callgrind may take to start: minutes on a loaded machine.
    'start-timeout-s': { type: 'string', default: '900' },
    'idle-s': { type: 'string', default: '0' },
  },
});
const [requests, warmup, connections, runs, parallel] = ['requests', 'warmup', 'connections', 'runs', 'parallel'].map((name) => {
  const value = Number(values[name]);
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} takes a whole number ≥ 1`);
  return value;
});
const idleSeconds = Number(values['idle-s']);
if (!Number.isFinite(idleSeconds) || idleSeconds < 0) throw new Error('--idle-s takes a number of seconds ≥ 0');
try {
  execFileSync('valgrind', ['--version'], { stdio: 'ignore' });
} catch {
  throw new Error('valgrind is not installed (Debian: apt-get install valgrind)');
}
const REFERENCE_TARGETS = ['bare-undici', 'bare-undici-mcp', 'fastify-stack'];
const builds = (positionals.length > 0 ? positionals : ['current=.']).map((spec) => {
  if (!spec.startsWith('ref:')) return parseBuildSpec(spec);
  // ref:NAME[:node=PATH]: the reference under another node binary, beside a gateway under it.
  const [target, ...parts] = spec.slice('ref:'.length).split(':');
  if (!REFERENCE_TARGETS.includes(target)) throw new Error(`unknown reference ${target} (${REFERENCE_TARGETS.join(', ')})`);
  const nodeBinary = parts.find((p) => p.startsWith('node='))?.slice('node='.length) ?? null;
  const unknown = parts.filter((p) => !p.startsWith('node='));
  if (unknown.length > 0) throw new Error(`a reference takes only node=PATH, not ${unknown.join(':')}`);
  // Named apart from the same reference under the default node, so both can run in one call.
  return { name: nodeBinary === null ? target : `${target}@${nodeBinary.match(/node-v(\d+)/)?.[1] ?? 'node'}`, target, reference: true, nodeArgs: [], nodeBinary };
});
if (builds.some((b) => b.target === 'fastify-stack')) {
  const installed = await ensurePeersInstalled({ repoRoot, log: (line) => console.error(line) });
  if (!installed.ok) throw new Error(installed.reason);
}

// Ctrl-C or a kill stops every gateway under callgrind, the stub and Redis it started.
installExitHandlers();
const tmpDir = mkdtempSync(join(tmpdir(), 'agentgw-instructions-'));
const redis = await startBenchRedis({ tmpDir, fdLimit: 20_000 });
const { url: stubUrl } = await startStubRunner({ tmpDir });
// Builds with a tls- variation: one dev certificate for all of them.
const tlsDir = join(tmpDir, 'tls');
const tlsCa = builds.some(usesTls) ? benchCertificate(tlsDir) : undefined;
const body = Buffer.from(REQUEST_BODY);
// MCP builds (the `mcp` variation, ref:bare-undici-mcp): one stub MCP server for all of them.
const usesMcp = (build) => build.target === 'bare-undici-mcp' || (build.variations ?? []).includes('mcp');
// The session is opened over plain HTTP (fetch); a TLS listener would need the bench CA there too.
for (const build of builds) if (usesMcp(build) && usesTls(build)) throw new Error(`${build.name}: the mcp variation does not combine with a tls- one`);
const mcpServer = builds.some(usesMcp) ? await startNodeProgram({ name: 'stub-mcp', script: join(repoRoot, 'bench/reference/stub-mcp-server.mjs'), args: ['--port', '0'], tmpDir }) : undefined;
const toolCallBody = Buffer.from(TOOL_CALL_BODY);
// The telemetry-on variation exports to a collector stand-in here; audit-postgres writes to a
// table of its own per run on the machine's PostgreSQL (AGENTGW_BENCH_POSTGRES_URL), dropped at the end.
const otlpSink = builds.some((b) => b.variations?.includes('telemetry-on')) ? await startOtlpSink() : undefined;
// The jwt variations: an identity provider stand-in, and one token for the bench account and plan.
const jwtIssuer = builds.some((b) => b.variations?.some((v) => v.startsWith('jwt'))) ? await startJwtIssuer() : undefined;
const jwtToken = jwtIssuer && (await jwtIssuer.token({ sub: 'bench-service', org_id: BENCH_ACCOUNT, plan: BENCH_PLAN, agents: [BENCH_AGENT] }));
const postgresUrl = process.env.AGENTGW_BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const postgresTables = [];

/** Closed loop: `count` requests, `connections` at a time; returns how many were not 200. */
async function send(pool, headers, count, path, requestBody = body) {
  let next = 0;
  let failed = 0;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (next < count) {
        next += 1;
        try {
          const res = await pool.request({ path, method: 'POST', headers, body: requestBody });
          await res.body.dump();
          if (res.statusCode !== 200) failed += 1;
        } catch {
          // A target with node's 5 s keep-alive (bare undici, fastify) can close a pooled
          // connection while callgrind crawls between the warm-up and the count; the
          // request is reported ("not 200"), not fatal.
          failed += 1;
        }
      }
    }),
  );
  return failed;
}

/**
 * `totals:` of each per-thread dump file; thread 01 is the main thread. Each
 * `callgrind_control --dump` writes a numbered part per thread (`callgrind.out.1-01`, then
 * `.2-01`, …): `skip` holds the files of earlier dumps, so a later dump is read alone.
 */
function readDump(dir, prefix, skip = new Set()) {
  let main = 0;
  let all = 0;
  for (const file of readdirSync(dir).filter((f) => f.startsWith(`${prefix}.`) && !skip.has(f))) {
    const match = /^totals: (\d+)/m.exec(readFileSync(join(dir, file), 'utf8'));
    if (!match) continue;
    all += Number(match[1]);
    if (file.endsWith('-01')) main += Number(match[1]);
  }
  return { main, all };
}

/** How to start a reference under callgrind, and what to send it. */
async function referenceLaunch(build, dir, run) {
  if (build.target === 'bare-undici') {
    return { script: [join(repoRoot, 'bench/reference/bare-undici-proxy.mjs'), '--upstream', stubUrl, '--port', '0'], headers: {} };
  }
  if (build.target === 'bare-undici-mcp') {
    return { script: [join(repoRoot, 'bench/reference/bare-undici-proxy.mjs'), '--upstream', mcpServer.url, '--port', '0'], headers: {}, mcp: true };
  }
  const peers = join(repoRoot, 'bench', 'peers');
  const { peerKeyName } = await import(pathToFileURL(join(peers, 'peer-key.mjs')).href);
  const prefix = `instructions-fastify-${run}:`;
  const { Redis } = await import('ioredis');
  const client = new Redis(redis.url);
  await client.set(peerKeyName(prefix, 'bench-token'), JSON.stringify({ account: 'bench-account' }));
  client.disconnect();
  return {
    script: [join(peers, 'fastify-gateway.mjs'), '--upstream', stubUrl, '--redis', redis.url, '--key-prefix', prefix, '--log', join(dir, 'fastify.log'), '--port', '0'],
    headers: { authorization: 'Bearer bench-token' },
  };
}

async function countReference(build, run) {
  const dir = mkdtempSync(join(tmpDir, `${build.name}-${run}-`));
  const launch = await referenceLaunch(build, dir, run);
  const outFile = join(dir, 'callgrind.out');
  const target = await spawnProcess({
    name: `${build.name}-${run}`,
    command: 'valgrind',
    args: ['--tool=callgrind', '--separate-threads=yes', '--smc-check=all-non-file', `--callgrind-out-file=${outFile}`, build.nodeBinary ?? process.execPath, ...launch.script],
    env: { ...process.env, NODE_ENV: 'production' },
    readyPattern: /^listening (\d+)$/m,
    logFile: join(dir, 'target.out'),
    startTimeoutMs: Number(values['start-timeout-s']) * 1000,
    stopGraceMs: 120_000,
  });
  if (launch.mcp) return countRequests(target, dir, await openMcpSession(`http://127.0.0.1:${target.match[1]}`, MCP_PATH), MCP_PATH, false, toolCallBody);
  return countRequests(target, dir, { 'content-type': 'application/json', ...launch.headers }, '/api/v1/chat');
}

/** Warm-up, counters zeroed, the counted requests, the dump read; stops the process after. */
async function countRequests(handle, dir, headers, path, tls = false, requestBody = body) {
  const pool = tls
    ? // A TLS handshake under callgrind takes seconds: undici's 10 s connect timeout is too short.
      new Pool(`https://127.0.0.1:${handle.match[1]}`, { connections, pipelining: 1, connect: { ca: tlsCa, servername: 'localhost', timeout: 300_000 } })
    : new Pool(`http://127.0.0.1:${handle.match[1]}`, { connections, pipelining: 1 });
  try {
    let failed = await send(pool, headers, warmup, path, requestBody);
    // valgrind runs the program in its own process: the pid spawned is the one to control.
    execFileSync('callgrind_control', ['--zero', String(handle.pid)], { stdio: 'ignore' });
    const phaseStarted = performance.now();
    failed += await send(pool, headers, requests, path, requestBody);
    const phaseSeconds = (performance.now() - phaseStarted) / 1000;
    execFileSync('callgrind_control', ['--dump', String(handle.pid)], { stdio: 'ignore' });
    const { main, all } = readDump(dir, 'callgrind.out');
    if (main === 0) throw new Error(`no callgrind dump in ${dir}`);
    const counted = { main: main / requests, all: all / requests, failed, phaseSeconds };
    if (idleSeconds === 0) return counted;
    const firstDump = new Set(readdirSync(dir));
    execFileSync('callgrind_control', ['--zero', String(handle.pid)], { stdio: 'ignore' });
    const idleStarted = performance.now();
    await new Promise((done) => setTimeout(done, idleSeconds * 1000));
    const idleWallSeconds = (performance.now() - idleStarted) / 1000;
    execFileSync('callgrind_control', ['--dump', String(handle.pid)], { stdio: 'ignore' });
    const idle = readDump(dir, 'callgrind.out', firstDump);
    if (idle.main === 0) throw new Error(`no second (idle) callgrind dump in ${dir}`);
    const idlePerSecond = idle.main / idleWallSeconds;
    return { ...counted, idlePerSecond, net: counted.main - (idlePerSecond * phaseSeconds) / requests };
  } finally {
    await pool.close();
    await handle.stop();
  }
}

async function countOnce(build, run) {
  if (build.reference) return countReference(build, run);
  const dir = mkdtempSync(join(tmpDir, `${build.name}-${run}-`));
  // Under callgrind a gateway runs ≈ 50× slower, so the default 100 ms Redis command timeout
  // fires now and then and sends a run down its failover paths (the memory limiter, the audit
  // spool and its replay) at random moments: work no request does at full speed, and a run's
  // count then swings by tens of percent. Every build gets the same 30 s.
  const configPath = writeGatewayConfig({ tmpDir: dir, redisUrl: redis.url, prefix: `instructions-${build.name}-${run}:`, stubUrl, heartbeat: '5s', commandTimeout: '30s' });
  const postgresTable = `agentgw_bench_${process.pid}_${build.name.replace(/[^a-z0-9]/gi, '').toLowerCase().slice(0, 12)}_${run}`;
  if (build.variations.includes('audit-postgres')) postgresTables.push(postgresTable);
  applyConfigVariations(configPath, build.variations, { tlsDir, otlpUrl: otlpSink?.url, postgresUrl, postgresTable, jwtIssuer: jwtIssuer?.issuer, jwtAudience: JWT_AUDIENCE, mcpUrl: mcpServer && `${mcpServer.url}${MCP_PATH}` });
  const key = await createBenchKey({ repoRoot: build.root, configPath, ...(usesMcp(build) ? { mcp: { [MCP_SERVER]: ['*'] } } : {}) });
  const credential = usesJwt(build) ? jwtToken : key.rawKey;
  const outFile = join(dir, 'callgrind.out');
  const gateway = await spawnProcess({
    name: `${build.name}-${run}`,
    command: 'valgrind',
    args: [
      '--tool=callgrind',
      '--separate-threads=yes',
      // V8 writes machine code at run time; valgrind must notice it changing.
      '--smc-check=all-non-file',
      `--callgrind-out-file=${outFile}`,
      build.nodeBinary ?? process.execPath,
      ...build.nodeArgs,
      join(build.root, 'dist/cli/main.js'),
      'serve',
      '--config',
      configPath,
    ],
    env: gatewayEnvironment(redis.url),
    readyPattern: GATEWAY_READY_PATTERN,
    logFile: join(dir, 'gateway.out'),
    startTimeoutMs: Number(values['start-timeout-s']) * 1000,
    stopGraceMs: 120_000,
  });
  if (usesMcp(build)) {
    return countRequests(gateway, dir, await openMcpSession(`http://127.0.0.1:${gateway.match[1]}`, GATEWAY_MCP_PATH, { authorization: `Bearer ${credential}` }), GATEWAY_MCP_PATH, false, toolCallBody);
  }
  return countRequests(gateway, dir, { 'content-type': 'application/json', authorization: `Bearer ${credential}` }, `/agents/${BENCH_AGENT}/api/v1/chat`, usesTls(build));
}

const results = new Map(builds.map((b) => [b.name, []]));
const queue = [];
for (let run = 1; run <= runs; run += 1) for (const build of builds) queue.push({ build, run });
console.error(`${queue.length} runs of ${warmup} + ${requests} requests under callgrind, ${parallel} at a time (minutes each)`);
async function worker() {
  for (let job = queue.shift(); job; job = queue.shift()) {
    const result = await countOnce(job.build, job.run);
    results.get(job.build.name).push(result);
    const idle = result.idlePerSecond === undefined ? '' : `; idle ${Math.round(result.idlePerSecond)} main-thread instructions/s, counted phase ${result.phaseSeconds.toFixed(1)} s, net of idle ${Math.round(result.net)} per request`;
    console.error(`${job.build.name} run ${job.run}: main thread ${Math.round(result.main)}, all threads ${Math.round(result.all)} instructions per request${idle}${result.failed ? `, ${result.failed} not 200` : ''}`);
  }
}
try {
  await Promise.all(Array.from({ length: parallel }, worker));
  const baseline = median(results.get(builds[0].name).map((r) => r.main));
  const netBaseline = idleSeconds > 0 ? median(results.get(builds[0].name).map((r) => r.net ?? r.main)) : baseline;
  for (const build of builds) {
    const rows = results.get(build.name);
    const main = median(rows.map((r) => r.main));
    const all = median(rows.map((r) => r.all));
    console.log(
      `${build.name.padEnd(18)} main thread ${Math.round(main)} instructions per request (runs ${rows.map((r) => Math.round(r.main)).join(', ')}), all threads ${Math.round(all)}, ×${(main / baseline).toFixed(3)} of ${builds[0].name}, not 200: ${rows.reduce((a, r) => a + r.failed, 0)}`,
    );
    if (idleSeconds > 0 && rows.every((r) => r.net !== undefined)) {
      const net = median(rows.map((r) => r.net));
      console.log(
        `${''.padEnd(18)} idle ${Math.round(median(rows.map((r) => r.idlePerSecond)))} main-thread instructions/s over ${idleSeconds} s, counted phase ${median(rows.map((r) => r.phaseSeconds)).toFixed(1)} s, net of idle ${Math.round(net)} per request (runs ${rows.map((r) => Math.round(r.net)).join(', ')}), ×${(net / netBaseline).toFixed(3)} of ${builds[0].name} net, raw ${Math.round(main)} ×${(main / baseline).toFixed(3)}`,
      );
    }
  }
  if (otlpSink) console.log(`telemetry-on: the collector stand-in took ${otlpSink.requests()} export requests, ${otlpSink.bytes()} bytes`);
  if (postgresTables.length > 0) console.log(`audit-postgres: rows written per table: ${(await postgresRowCounts()).join(', ')}`);
} finally {
  await stopAll(120_000);
  await redis.close();
  await otlpSink?.close();
  await jwtIssuer?.close();
  await dropPostgresTables();
}

async function postgresRowCounts() {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: postgresUrl });
  await client.connect();
  try {
    const counts = [];
    for (const table of postgresTables) counts.push(Number((await client.query(`SELECT count(*) AS n FROM "${table}"`)).rows[0].n));
    return counts;
  } finally {
    await client.end();
  }
}

async function dropPostgresTables() {
  if (postgresTables.length === 0) return;
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: postgresUrl });
  await client.connect();
  try {
    for (const table of postgresTables) await client.query(`DROP TABLE IF EXISTS "${table}"`);
  } finally {
    await client.end();
  }
}
