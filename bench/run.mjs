// `npm run bench` (issue 7): bench/'s one runner. Without a name it runs the suite: on
// loopback, a stub agent runner, a Redis, the built gateway in its full production
// configuration, the references (stub direct, nginx proxy_pass when installed, bare node:http +
// http-proxy, bare node:http + undici) and the peer gateways (bench/peers: a fastify stack and
// Portkey, issue 26); it drives the same load at each in turn, and prints one set of tables
// plus a JSON file (bench/results/<date>.json); scenario 7 (MCP tools/call) brings up its own
// MCP server, floor and gateway beside them. With a name it runs one measurement of
// bench/scenarios on its own (bench/lib/measurements.mjs lists them). See docs/performance.md
// for what the numbers mean and how to run each measurement.
//
//   npm run bench                 full run (~15–17 min on 2 cores)
//   npm run bench -- --quick      smoke test of every scenario (~2–3 min)
//   npm run bench -- --node 22,24,26   the gateway under each Node line too, side by side
//   npm run bench -- --help       flags, and the measurements
//   node bench/run.mjs compare-builds base=../old new=.   one measurement (NAME --help: its flags)
//
// The machine is shared and noisy: runs are short and repeated (medians), targets are
// measured in rotated order within each round, and every figure is also given relative to
// the references measured in the same round.
// First: an unsupported Node.js is refused in one line (`node bench/run.mjs` without npm).
import '../scripts/node-guard.mjs';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startEnvironment } from './lib/environment.mjs';
import { findWrk } from './lib/load-tools.mjs';
import { describeMachine, hardFdLimit } from './lib/machine.mjs';
import { measurementsHelp, runMeasurement } from './lib/measurements.mjs';
import { findNginx } from './lib/nginx.mjs';
import { parseOptions, USAGE } from './lib/options.mjs';
import { resolveNodeRuntimes } from './lib/node-runtimes.mjs';
import { installExitHandlers, stopAll } from './lib/processes.mjs';
import { round } from './lib/stats.mjs';
import { renderTable } from './lib/table.mjs';
import { absoluteTargets, checkTargets, verdictSummary } from './lib/target-checks.mjs';
import { cpuProfileTables, runCpuProfile } from './scenarios/cpu-profile.mjs';
import { failoverTable, runFailoverScenario } from './scenarios/failover.mjs';
import { fixedRateTable, runFixedRateScenario } from './scenarios/fixed-rate.mjs';
import { idleStreamsTable, runIdleStreamsScenario } from './scenarios/idle-streams.mjs';
import { mcpCallsTable, runMcpCallsScenario } from './scenarios/mcp-calls.mjs';
import { redisCommandsTable, scriptCommandNames, summariseRedisCommands } from './scenarios/redis-commands.mjs';
import { nodeRuntimesTable, summariseNodeRuntimes } from './scenarios/node-runtimes.mjs';
import { runStreamDelayScenario, streamDelayTable } from './scenarios/stream-delay.mjs';
import { runThroughputScenario, throughputTables } from './scenarios/throughput.mjs';

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..');
/** stream.heartbeat of the bench gateway: short enough to show in scenario 4's hold. */
const HEARTBEAT = '5s';

const log = (line) => process.stdout.write(`${line}\n`);

function freshResultPath(date) {
  const base = join(repoRoot, 'bench', 'results', date.toISOString().slice(0, 10));
  let path = `${base}.json`;
  for (let n = 2; existsSync(path); n += 1) path = `${base}-${n}.json`;
  return path;
}

async function main() {
  const argv = process.argv.slice(2);
  if (argv[0] !== undefined && !argv[0].startsWith('-')) return runMeasurement(argv[0], argv.slice(1));
  let options;
  try {
    options = parseOptions(argv);
  } catch (error) {
    process.stderr.write(`${error.message}\n`);
    process.exit(2);
  }
  if (options.help) {
    process.stdout.write(`${USAGE}\n${measurementsHelp()}`);
    return;
  }
  if (!existsSync(join(repoRoot, 'dist/cli/main.js'))) throw new Error('dist/ is missing: run `node scripts/build-if-needed.mjs` (npm run bench does)');

  const startedAt = new Date();
  const tmpDir = mkdtempSync(join(os.tmpdir(), 'agentgw-bench-'));
  let keepTmp = options.keepTmp;
  installExitHandlers();
  const watchdog = setTimeout(() => {
    process.stderr.write(`bench: gave up after ${options.timeoutS} s (--timeout-s); stopping everything. Files kept in ${tmpDir}\n`);
    stopAll(2_000).finally(() => process.exit(1));
  }, options.timeoutS * 1000);
  watchdog.unref();

  const fdHard = hardFdLimit();
  // Every child gets the most descriptors the machine allows: scenario 4 needs them.
  const fdLimit = fdHard;
  const notes = [];
  const wrkVersion = options.wrk ? await findWrk() : null;
  if (options.wrk && !wrkVersion) notes.push('wrk is not installed: only autocannon ran (apt-get install -y wrk).');
  const nginx = options.nginx ? await findNginx() : null;
  if (options.nginx && !nginx) notes.push('nginx is not installed: the nginx reference was skipped (apt-get install -y nginx-light).');
  if (!options.nginx) notes.push('--no-nginx: the nginx reference was skipped.');

  const results = { options: { ...options, scenarios: [...options.scenarios] }, notes };
  let env;
  try {
    log(`agent-gateway bench — ${options.quick ? 'quick' : 'full'} run, ${options.runs} run(s) per measurement, temp dir ${tmpDir}`);
    let runtimes = [];
    if (options.nodes.length > 0) {
      log(`node runtimes (--node ${options.nodes.join(',')}):`);
      const resolved = await resolveNodeRuntimes(options.nodes, { log });
      runtimes = resolved.runtimes;
      notes.push(...resolved.notes);
      // Their last-used writes (every 5 s) can land while the default gateway is measured.
      notes.push(`--node: ${runtimes.length} more gateway(s) ran beside the default one; scenario 5 reads Redis over all of them.`);
      results.nodeRuntimes = runtimes;
    }
    env = await startEnvironment({ repoRoot, tmpDir, fdLimit, nginx, peers: options.peers, heartbeat: HEARTBEAT, log, runtimes, usageRollups: options.usageRollups, limitVariants: options.scenarios.has(1) || options.scenarios.has(5) ? options.limitVariants : [] });
    notes.push(...env.notes);
    results.peers = env.peerStatus;
    results.machine = describeMachine({ repoRoot, startedAt, wrkVersion, nginx, redisVersion: env.redis.version, hardFdLimit: fdHard });
    const m = results.machine;
    log(`machine: ${m.nproc} cpus (${m.cpuModel}), ${m.totalMemGiB} GiB, node ${m.node}, load ${m.loadAvgAtStart.join(' ')}, ulimit -Hn ${fdHard}`);
    log(`targets: ${env.targets.map((t) => t.name).join(', ')}`);
    const ctx = { targets: env.targets, options: { ...options, heartbeat: HEARTBEAT }, tmpDir, redis: env.redis, stubPid: env.stub.pid, log };

    if (options.scenarios.has(1) || options.scenarios.has(5)) {
      const tools = ['autocannon', ...(wrkVersion ? ['wrk'] : [])];
      log(`\nscenario 1: POST /chat max throughput (${tools.join(' + ')}, ${options.connections.join(' and ')} connections, ${options.durationS} s × ${options.runs})`);
      results.throughput = await runThroughputScenario({ ...ctx, targets: [...env.targets, ...env.limitTargets], tools });
      results.redisCommands = summariseRedisCommands(results.throughput.rows, scriptCommandNames(repoRoot));
      // The same figures for each --limit-variants gateway, measured in the same rounds.
      results.redisCommandsByVariant = Object.fromEntries(env.limitTargets.map((t) => [t.name, summariseRedisCommands(results.throughput.rows, scriptCommandNames(repoRoot), t.name)]));
    }
    if (options.scenarios.has(2)) {
      log(`\nscenario 2: POST /chat at ${options.ratePerSec} req/s (${options.durationS} s × ${options.runs})`);
      results.fixedRate = await runFixedRateScenario(ctx);
    }
    if (options.scenarios.has(3)) {
      log(`\nscenario 3: POST /chat/stream, per-event delay (${options.streams} streams × ${options.runs}, ${options.streamConcurrency} at a time)`);
      results.streamDelay = await runStreamDelayScenario(ctx);
    }
    if (options.scenarios.has(7)) {
      log(`\nscenario 7: MCP tools/call at ${options.ratePerSec} calls/s (${options.durationS} s × ${options.runs}): MCP server direct, the floor in front of it, the gateway`);
      results.mcpCalls = await runMcpCallsScenario({ repoRoot, tmpDir, redis: env.redis, stubUrl: env.stub.url, fdLimit, options: ctx.options, log });
    }
    if (options.profile) {
      log('\nprofile: gateway under --cpu-prof, scenario-1 load (autocannon, 32 connections)');
      results.cpuProfile = await runCpuProfile({ env, options, tmpDir, log });
    }
    if (options.scenarios.has(4)) {
      // The references and the first gateway are done: scenario 4 gets memory and cores to itself.
      await env.stopReferences();
      await env.gateway.stop();
      log(`\nscenario 4: ${options.idleStreams} concurrent idle streams held ${options.idleHoldS} s`);
      // A scenario that cannot run (a gateway that does not come up on a saturated machine)
      // must not take the other scenarios' figures with it: said in a note, verdict n/a.
      try {
        results.idleStreams = await runIdleStreamsScenario({ env, options: ctx.options, repoRoot, tmpDir, fdLimit, hardFdLimit: fdHard, log });
        notes.push(...results.idleStreams.notes);
      } catch (error) {
        notes.push(`scenario 4 did not complete: ${String(error.message).split('\n')[0]}`);
        log(`  s4 failed: ${String(error.message).split('\n')[0]}`);
      }
    }
    if (options.scenarios.has(6)) {
      log(`\nscenario 6: one agent on 3 runners at ${options.ratePerSec} req/s, one runner killed mid-run`);
      results.failover = await runFailoverScenario({ repoRoot, tmpDir, redis: env.redis, fdLimit, options: ctx.options, log });
    }
  } catch (error) {
    keepTmp = true;
    throw Object.assign(error, { tmpDir });
  } finally {
    await env?.stop().catch(() => {});
    await stopAll();
    if (!keepTmp) rmSync(tmpDir, { recursive: true, force: true });
  }

  results.machine.loadAvgAtEnd = os.loadavg().map((x) => round(x, 2));
  results.machine.durationS = round((Date.now() - startedAt.getTime()) / 1000);
  try {
    results.targets = checkTargets(results);
    results.absoluteTargets = absoluteTargets(results);
  } catch (error) {
    // The measurements are worth more than the verdicts: never lose them to a check.
    results.targets = [];
    notes.push(`the target checks failed: ${error.message}`);
  }
  if (results.nodeRuntimes) results.nodeRuntimeSummary = summariseNodeRuntimes(results, results.nodeRuntimes);
  report(results, options);

  const outPath = options.out ?? freshResultPath(startedAt);
  mkdirSync(dirname(outPath), { recursive: true });
  // Raw commandstats snapshots make the file large and say nothing the deltas do not.
  const forFile = structuredClone(results);
  for (const row of forFile.throughput?.rows ?? []) {
    delete row.redisBefore;
    delete row.redisAfter;
  }
  writeFileSync(outPath, `${JSON.stringify(forFile, null, 2)}\n`);
  log(`\nwrote ${relative(process.cwd(), outPath)} in ${results.machine.durationS} s (load average at end ${results.machine.loadAvgAtEnd.join(' ')})${keepTmp ? `; temp files in ${tmpDir}` : ''}`);
}

function report(results, options) {
  const tables = [];
  if (results.throughput) tables.push(...throughputTables(results.throughput.summary));
  if (results.fixedRate) tables.push(fixedRateTable(results.fixedRate));
  if (results.streamDelay) tables.push(streamDelayTable(results.streamDelay));
  if (results.mcpCalls) tables.push(mcpCallsTable(results.mcpCalls));
  if (results.idleStreams) tables.push(idleStreamsTable(results.idleStreams));
  if (results.failover) tables.push(failoverTable(results.failover));
  if (results.redisCommands) tables.push(redisCommandsTable(results.redisCommands));
  for (const [target, summary] of Object.entries(results.redisCommandsByVariant ?? {})) if (summary) tables.push(redisCommandsTable(summary, target));
  if (results.cpuProfile) tables.push(...cpuProfileTables(results.cpuProfile));
  if (results.nodeRuntimeSummary) tables.push(nodeRuntimesTable(results.nodeRuntimeSummary));
  const targets = renderTable(['scenario', 'target', 'measured', 'result'], results.targets.map((c) => [String(c.scenario), c.target, c.measured, c.result]));
  // Issue 26's absolute targets, as a footnote under the verdicts: what was measured, no verdict.
  const footnote = (results.absoluteTargets ?? []).map((line) => `  ${line}`).join('\n');
  const summary = verdictSummary(results.targets, results.machine);
  tables.push({
    title: "Targets (issue 34): against the floor, bare node:http + undici, in the same rounds; a verdict only where the floor held still",
    text: `${targets.text}\n${summary}${footnote ? `\nfootnote, issue 26's absolute targets (not verdicts):\n${footnote}` : ''}`,
    markdown: `${targets.markdown}\n\n${summary}${footnote ? `\n\nFootnote, issue 26's absolute targets (not verdicts):\n\n${(results.absoluteTargets ?? []).map((line) => `- ${line}`).join('\n')}` : ''}`,
  });

  const m = results.machine;
  log(`\n${'='.repeat(100)}\nmachine: ${m.nproc} × ${m.cpuModel}, ${m.totalMemGiB} GiB, ${m.platform}, node ${m.node}; load average ${m.loadAvgAtStart.join(' ')} at start, ${m.loadAvgAtEnd.join(' ')} at end (shared machine)`);
  for (const p of results.peers ?? []) log(p.ran ? `peer ${p.name}: ran (${p.version ?? 'version ?'})` : `peer ${p.name}: SKIPPED — ${p.reason}`);
  for (const t of tables) log(`\n${t.title}\n${t.text}`);
  for (const n of results.notes) log(`note: ${n}`);
  if (options.markdown) {
    log('\n---- markdown ----');
    for (const t of tables) log(`\n**${t.title}**\n\n${t.markdown}`);
  }
}

main().then(
  () => process.exit(0),
  async (error) => {
    if (error.usage) {
      process.stderr.write(`${error.message}\n`);
      process.exit(2);
    }
    process.stderr.write(`bench: ${error.stack ?? error}\n${error.tmpDir ? `temp files (logs, configs) kept in ${error.tmpDir}\n` : ''}`);
    await stopAll(2_000);
    process.exit(1);
  },
);
