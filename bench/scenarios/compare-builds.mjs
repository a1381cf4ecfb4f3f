// Interleaved A/B of gateway builds on one machine, for deciding whether a change pays:
// every build (a checkout with its own dist/) runs as its own gateway process in the bench's
// production config, against one stub runner and one Redis, and each round measures every
// build once in a rotated order, so a noisy neighbour hits them alike. Reports medians and
// each build's per-round ratio to the first one.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { startBenchRedis } from '../lib/bench-redis.mjs';
import { applyConfigVariations, CONFIG_VARIATIONS, parseBuildSpec } from '../lib/build-specs.mjs';
import { runFixedRate } from '../lib/fixed-rate-client.mjs';
import { runTimedStreams } from '../lib/sse-timing-client.mjs';
import { BENCH_AGENT, createBenchKey, startGatewayProcess, writeGatewayConfig } from '../lib/gateway.mjs';
import { runWrk } from '../lib/load-tools.mjs';
import { cpuMs } from '../lib/proc-stats.mjs';
import { installExitHandlers, startNodeProgram, startStubRunner, stopAll } from '../lib/processes.mjs';
import { median, percentileSorted } from '../lib/stats.mjs';

const repoRoot = resolve(import.meta.dirname, '..', '..');

export const USAGE = `node bench/run.mjs compare-builds [flags] name=root[:variation...] ...

  node bench/run.mjs compare-builds base=/path/to/old-checkout new=.
  node bench/run.mjs compare-builds --rate 2000 cur=. cur-nolimits=.:no-limits
  node bench/run.mjs compare-builds --streams --references cur=. cur-stgc=.:--single-threaded-gc

  A build is name=root[:variation...] (default current=.). A variation changes its config only
  (bench/lib/build-specs.mjs), one of:
    ${Object.keys(CONFIG_VARIATIONS).join(', ')}
  or, starting with --, is a node flag for that build's process; node=/path/to/node runs that
  build under another node binary (another LTS line).

  --rounds N        rounds; each measures every build once, in a rotated order (default 6)
  --duration-s N    length of one measurement (default 4)
  --connections N   wrk connections (default 32, wrk -t1): the figure is the gateway's CPU µs per request
  --rate N          fixed-rate latency at N requests a second instead of wrk throughput
  --streams         scenario 3's per-event delay instead: 256 streams, 32 at a time, 20 events 10 ms apart
  --references      bare proxies too (bare-undici, bare-http-proxy), and the stub direct with --streams
  --profile NAME    that build's first process under --cpu-prof (the directory is printed)
  --processes N     N gateway processes per build, taking turns round by round (default 1); at 256
                    connections one process's cost depends on the state it settles into for its
                    whole life, so one process per build can decide an A/B by itself (decision 0009)
`;

export async function run(argv) {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      rounds: { type: 'string', default: '6' },
      'duration-s': { type: 'string', default: '4' },
      connections: { type: 'string', default: '32' },
      rate: { type: 'string', default: '0' },
      streams: { type: 'boolean', default: false },
      references: { type: 'boolean', default: false },
      profile: { type: 'string' },
      processes: { type: 'string', default: '1' },
    },
  });
  const rounds = Number(values.rounds);
  const durationS = Number(values['duration-s']);
  const connections = Number(values.connections);
  const rate = Number(values.rate);
  const streams = values.streams;
  const processesPerBuild = Number(values.processes);
  if (!Number.isInteger(processesPerBuild) || processesPerBuild < 1) throw new Error('--processes takes a whole number ≥ 1');
  const builds = (positionals.length > 0 ? positionals : ['current=.']).map(parseBuildSpec);

  // Ctrl-C or a kill stops every gateway, reference and Redis it started.
  installExitHandlers();
  const tmpDir = mkdtempSync(join(tmpdir(), 'agentgw-compare-'));
  const redis = await startBenchRedis({ tmpDir, fdLimit: 20_000 });
  const stub = await startStubRunner({ tmpDir });
  const stubUrl = stub.url;

  const targets = [];
  for (const build of builds) {
    const dir = mkdtempSync(join(tmpDir, `${build.name}-`));
    const configPath = writeGatewayConfig({ tmpDir: dir, redisUrl: redis.url, prefix: `compare-${build.name}:`, stubUrl, heartbeat: '5s' });
    applyConfigVariations(configPath, build.variations);
    const key = await createBenchKey({ repoRoot: build.root, configPath });
    const instances = [];
    for (let k = 0; k < processesPerBuild; k += 1) {
      // Only the first process of the build named by --profile is profiled.
      const profiled = values.profile === build.name && k === 0;
      const name = processesPerBuild === 1 ? build.name : `${build.name}-${k + 1}`;
      const gateway = await startGatewayProcess({ repoRoot: build.root, configPath, redisUrl: redis.url, tmpDir: dir, fdLimit: 20_000, name, cpuProfDir: profiled ? dir : null, nodeArgs: build.nodeArgs, nodePath: build.nodeBinary ?? process.execPath });
      if (profiled) console.log(`${name}: profile in ${dir} (written when it stops)`);
      instances.push({ name, url: gateway.url, chatPath: `/agents/${BENCH_AGENT}/api/v1/chat`, streamPath: `/agents/${BENCH_AGENT}/api/v1/chat/stream`, headers: { authorization: `Bearer ${key.rawKey}` }, pid: gateway.pid });
    }
    targets.push({ name: build.name, instances });
  }
  if (values.references) {
    for (const [name, script] of [['bare-undici', 'bare-undici-proxy.mjs'], ['bare-http-proxy', 'bare-http-proxy.mjs']]) {
      const proxy = await startNodeProgram({ name, script: join(repoRoot, 'bench/reference', script), args: ['--upstream', stubUrl, '--port', '0'], tmpDir });
      targets.push({ name, instances: [{ name, url: proxy.url, chatPath: '/api/v1/chat', streamPath: '/api/v1/chat/stream', headers: {}, pid: proxy.pid }] });
    }
    if (streams) targets.push({ name: 'stub-direct', instances: [{ name: 'stub-direct', url: stubUrl, chatPath: '/api/v1/chat', streamPath: '/api/v1/chat/stream', headers: {}, pid: stub.pid }] });
  }

  const STREAM_LOAD = { streams: 256, concurrency: 32, tokens: 20, intervalMs: 10 };

  /** One measurement of one process (a target's instance). */
  async function measure(target) {
    if (streams) {
      const before = cpuMs(target.pid);
      const measured = await runTimedStreams(target, STREAM_LOAD);
      const sorted = Float64Array.from(measured.eventDelaysMs).sort();
      const p50Of = (xs) => percentileSorted(Float64Array.from(xs).sort(), 50);
      return { value: percentileSorted(sorted, 99), p50: percentileSorted(sorted, 50), headersP50: p50Of(measured.headersMs), firstEventP50: p50Of(measured.firstEventMs), heldBack: measured.heldBack, cpuPerEventUs: ((cpuMs(target.pid) - before) * 1000) / measured.events, errors: measured.errors };
    }
    if (rate > 0) {
      const measured = await runFixedRate(target, { ratePerSec: rate, durationS, warmupS: 1 });
      const sorted = Float64Array.from(measured.latenciesMs).sort();
      return { value: percentileSorted(sorted, 50), p99: percentileSorted(sorted, 99), errors: measured.errors + measured.non2xx };
    }
    const before = cpuMs(target.pid);
    const measured = await runWrk(target, { connections, durationS, tmpDir });
    return { value: ((cpuMs(target.pid) - before) * 1000) / measured.requests, reqPerSec: measured.reqPerSec, errors: measured.errors + measured.non2xx };
  }

  const results = new Map(targets.map((t) => [t.name, []]));
  const allInstances = targets.flatMap((t) => t.instances);
  if (streams) for (const instance of allInstances) await runTimedStreams(instance, { ...STREAM_LOAD, streams: 64 });
  else if (rate === 0) for (const instance of allInstances) await runWrk(instance, { connections, durationS: 2, tmpDir });
  for (let round = 0; round < rounds; round += 1) {
    for (let i = 0; i < targets.length; i += 1) {
      const target = targets[(i + round) % targets.length];
      // A build's processes take turns: round r measures its process r mod N.
      results.get(target.name).push(await measure(target.instances[round % target.instances.length]));
    }
    const line = targets
      .map((t) => {
        const last = results.get(t.name).at(-1);
        if (streams) return `${t.name} p99 ${last.value.toFixed(3)} 1st ${last.firstEventP50.toFixed(2)} held ${last.heldBack}`;
        return `${t.name} ${last.value.toFixed(rate > 0 ? 3 : 1)}${rate > 0 ? ` (p99 ${last.p99.toFixed(2)})` : ''}`;
      })
      .join(' | ');
    console.error(`round ${round + 1}: ${line}`);
  }

  const unit = streams ? 'ms per-event delay p99' : rate > 0 ? `ms p50 at ${rate}/s` : 'µs CPU per request';
  const first = results.get(targets[0].name);
  for (const target of targets) {
    const rows = results.get(target.name);
    const ratios = rows.map((row, i) => row.value / first[i].value);
    const extra = streams
      ? `p50 median ${median(rows.map((r) => r.p50)).toFixed(3)} ms, headers p50 ${median(rows.map((r) => r.headersP50)).toFixed(2)} ms, first event p50 ${median(rows.map((r) => r.firstEventP50)).toFixed(2)} ms, held back ${rows.reduce((a, r) => a + r.heldBack, 0)}, CPU µs/event median ${median(rows.map((r) => r.cpuPerEventUs)).toFixed(1)}`
      : rate > 0 ? `p99 median ${median(rows.map((r) => r.p99)).toFixed(2)} ms` : `req/s median ${Math.round(median(rows.map((r) => r.reqPerSec)))}`;
    console.log(
      `${target.name.padEnd(18)} median ${median(rows.map((r) => r.value)).toFixed(rate > 0 || streams ? 3 : 1)} ${unit}, ${extra}, ×${median(ratios).toFixed(3)} of ${targets[0].name} (per-round median), errors ${rows.reduce((a, r) => a + r.errors, 0)}`,
    );
  }
  await stopAll();
  await redis.close();
}
