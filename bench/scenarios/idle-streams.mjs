// Scenario 4: many concurrent streams held open, idle but for the gateway's heartbeats and
// an occasional upstream event. Measures the gateway's peak RSS (VmHWM of a gateway process
// started fresh for this scenario, and RSS sampled every 250 ms), summed over all its
// processes when one process cannot hold them all (each stream takes a descriptor on each
// side, and `ulimit -Hn` caps one process: then `serve --workers N`, or with `--idle-topology
// reuseport` N standalone instances on one port with listen.reuse_port), what the gateway reports
// (agentgw_active_streams), what reached the stub, and every error the client saw.
// First the same client opens the same number of streams at the stub directly, so a limit
// of the client or the machine is not mistaken for one of the gateway. The floor (as many
// bare node:http + undici processes as the gateway has stream-holding ones, same runtime
// settings) holds the same streams just before and just after the gateway: its memory is
// what the verdict divides by, and the two holds' difference is how steady the run was.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { scrapeMetric, startGatewayProcess } from '../lib/gateway.mjs';
import { EVENT_EVERY_MS, holdOnFloor, memoryOf, pssOf, runClient } from '../lib/idle-hold.mjs';
import { childPids, cpuMs, memoryKb, openFds, pssKb } from '../lib/proc-stats.mjs';
import { fmt, renderTable } from '../lib/table.mjs';
/** The gateway needs a socket on each side of a stream, plus its own listeners, Redis, log. */
const GATEWAY_FD_OVERHEAD = 100;

/** The per-origin connection cap of the gateway's upstream pools, read from the build. */
function upstreamPoolConnections(repoRoot) {
  try {
    const text = readFileSync(join(repoRoot, 'dist/proxy/upstream-pools.js'), 'utf8');
    const match = /connections:\s*(\d+)/.exec(text);
    return match ? Number(match[1]) : null;
  } catch {
    return null;
  }
}

async function stubStats(stubUrl) {
  try {
    return await (await fetch(`${stubUrl}/_stats`)).json();
  } catch {
    return null;
  }
}

/** Each process's RSS (and PSS) in KiB, the primary first: where a cluster's memory sits. */
function perProcess(pids, reusePort = false) {
  return pids.map((pid, i) => ({ pid, role: reusePort ? `instance ${i + 1}` : i === 0 && pids.length > 1 ? 'primary' : 'worker', rssKb: memoryKb(pid)?.rssKb ?? null, pssKb: pssKb(pid), cpuMs: cpuMs(pid), fds: openFds(pid) }));
}

/** Processes a `count`-stream gateway needs here: one unless the descriptors run out. */
export function processesFor(count, hardFdLimit) {
  return Math.max(1, Math.ceil((2 * count) / (hardFdLimit - GATEWAY_FD_OVERHEAD)));
}

/** The settings `serve --workers` gives a worker, read from the build measured (src/cli/worker-runtime.ts). */
async function workerRuntime(repoRoot) {
  try {
    const m = await import(pathToFileURL(join(repoRoot, 'dist/cli/worker-runtime.js')).href);
    return { semiSpaceMb: m.WORKER_SEMI_SPACE_MB, mallocArenaMax: m.WORKER_MALLOC_ARENA_MAX };
  } catch {
    // A build from before decision 0028: its values.
    return { semiSpaceMb: 8, mallocArenaMax: '2' };
  }
}

/**
 * Node flags and environment of the gateway's stream-holding processes, which the floor gets
 * too: a worker's settings when streams are spread over processes, else node's defaults;
 * plus --idle-node-args.
 */
async function streamProcessRuntime({ repoRoot, workers, nodeArgs }) {
  if (workers <= 1) return { nodeArgs, env: {} };
  const runtime = await workerRuntime(repoRoot);
  const youngGenerationChosen = nodeArgs.some((arg) => /^--(max-|min-)?semi-space-size|^--max-heap-size/.test(arg));
  return {
    nodeArgs: youngGenerationChosen ? nodeArgs : [`--max-semi-space-size=${runtime.semiSpaceMb}`, ...nodeArgs],
    env: process.env.MALLOC_ARENA_MAX === undefined ? { MALLOC_ARENA_MAX: runtime.mallocArenaMax } : {},
  };
}

/**
 * The gateway processes of one attempt. `workers`: one `serve --workers N` (a primary and N
 * workers; the primary's pid first). `reuseport`: N standalone `serve` instances listening on
 * one port with listen.reuse_port (no primary), each with its own config dir (admin port,
 * audit spool and journal, log) and the runtime settings a cluster worker gets (decision
 * 0028), as docs/operations.md tells an operator to set them.
 */
async function startGateways({ env, count, workers, topology, nodeArgs, repoRoot, fdLimit, tmpDir }) {
  if (topology === 'workers' || workers <= 1) {
    const gateway = await env.startGateway({ name: `gateway-idle-${count}`, serveArgs: workers > 1 ? ['--workers', String(workers)] : [], nodeArgs });
    return { url: gateway.url, adminUrls: [gateway.adminUrl], pids: workers > 1 ? [gateway.pid, ...childPids(gateway.pid)] : [gateway.pid], stop: () => gateway.stop() };
  }
  const { nodeArgs: instanceNodeArgs, env: extraEnv } = await streamProcessRuntime({ repoRoot, workers, nodeArgs });
  const instances = [];
  try {
    for (let i = 1; i <= workers; i += 1) {
      const dir = join(tmpDir, `gateway-idle-${count}-instance-${i}`);
      mkdirSync(dir, { recursive: true });
      const configPath = env.writeGatewayConfig(dir);
      // The first instance takes a free port; the others listen on the same one.
      const port = instances[0] ? Number(new URL(instances[0].url).port) : 0;
      const yaml = readFileSync(configPath, 'utf8').replace('listen: { host: 127.0.0.1, port: 0 }', `listen: { host: 127.0.0.1, port: ${port}, reuse_port: true }`);
      if (!yaml.includes('reuse_port: true')) throw new Error('scenario 4: the bench config has no listen line to add reuse_port to');
      writeFileSync(configPath, yaml);
      instances.push(await startGatewayProcess({ repoRoot, configPath, redisUrl: env.redis.url, tmpDir: dir, fdLimit, name: `gateway-idle-${count}-${i}`, nodeArgs: instanceNodeArgs, extraEnv }));
    }
  } catch (error) {
    await Promise.all(instances.map((g) => g.stop()));
    throw error;
  }
  return { url: instances[0].url, adminUrls: instances.map((g) => g.adminUrl), pids: instances.map((g) => g.pid), stop: () => Promise.all(instances.map((g) => g.stop())) };
}

/** A metric summed over every admin listener (one per standalone instance). */
async function scrapeAll(adminUrls, name) {
  const values = await Promise.all(adminUrls.map((url) => scrapeMetric(url, name)));
  return values.some((v) => v === null) ? null : values.reduce((a, b) => a + b, 0);
}

async function attempt({ env, count, holdS, workers, topology, nodeArgs, repoRoot, tmpDir, fdLimit, log }) {
  const gateway = await startGateways({ env, count, workers, topology, nodeArgs, repoRoot, fdLimit, tmpDir });
  const { pids } = gateway;
  const reusePort = topology === 'reuseport' && workers > 1;
  const target = env.gatewayTarget;
  try {
    const baseline = memoryOf(pids);
    const baselinePssKb = pssOf(pids);
    const baselineProcesses = perProcess(pids, reusePort);
    let peakRssKb = baseline?.rssKb ?? 0;
    let peakFds = 0;
    const sampler = setInterval(() => {
      const m = memoryOf(pids);
      if (m && m.rssKb > peakRssKb) peakRssKb = m.rssKb;
      const fds = pids.reduce((n, p) => n + openFds(p), 0);
      if (fds > peakFds) peakFds = fds;
    }, 250);
    let atHold = null;
    const result = await runClient({
      repoRoot,
      tmpDir,
      fdLimit,
      name: `idle-client-gateway-${count}`,
      url: gateway.url,
      path: target.streamPath,
      headers: { ...target.headers, 'x-bench-stream': `idle=1&eventEveryMs=${EVENT_EVERY_MS}` },
      count,
      holdS,
      openTimeoutS: Math.max(10, count / 500),
      onHolding: async (snapshot) => {
        atHold = {
          clientOpen: snapshot.open,
          gatewayActiveStreams: await scrapeAll(gateway.adminUrls, 'agentgw_active_streams'),
          stub: await stubStats(env.stub.url),
          gatewayRssKb: memoryOf(pids)?.rssKb ?? null,
          gatewayPssKb: pssOf(pids),
          processes: perProcess(pids, reusePort),
          gatewayFds: pids.reduce((n, p) => n + openFds(p), 0),
        };
      },
    }).finally(() => clearInterval(sampler));
    // Closed by the client: the gateway must let go of every stream.
    await new Promise((r) => setTimeout(r, 3_000));
    const activeAfter = await scrapeAll(gateway.adminUrls, 'agentgw_active_streams');
    const end = memoryOf(pids);
    const row = {
      count,
      holdS,
      processes: pids.length,
      workers,
      topology: reusePort ? 'reuseport' : 'workers',
      ...result,
      atHold,
      gatewayActiveStreamsAfterClose: activeAfter,
      gatewayBaselineRssKb: baseline?.rssKb ?? null,
      gatewayBaselinePssKb: baselinePssKb,
      baselineProcesses,
      gatewayPeakRssKb: Math.max(peakRssKb, end?.rssKb ?? 0),
      // The largest process's peak (kept for older readers) and the sum over all processes
      // (each process's own peak, so an upper bound on what they held at once).
      gatewayVmHwmKb: end ? Math.max(...pids.map((p) => memoryKb(p)?.hwmKb ?? 0)) : null,
      gatewayTotalVmHwmKb: end?.hwmKb ?? null,
      /** Memory a held stream costs: RSS while holding over the processes' idle RSS. */
      perStreamKb: atHold?.gatewayRssKb && baseline && result.openAtHoldStart > 0 ? (atHold.gatewayRssKb - baseline.rssKb) / result.openAtHoldStart : null,
      perStreamPssKb: atHold?.gatewayPssKb && baselinePssKb && result.openAtHoldStart > 0 ? (atHold.gatewayPssKb - baselinePssKb) / result.openAtHoldStart : null,
      gatewayPeakFds: peakFds,
      // Every connection the gateway held, streaming or waiting for an upstream connection.
      heldConnections: result.peakOpen + (result.errorKinds.no_headers_in_time ?? 0),
    };
    log(
      `  s4 gateway ${count} streams (${pids.length} process${pids.length > 1 ? `es: ${reusePort ? `${workers} instances, listen.reuse_port` : `--workers ${workers}`}` : ''}): peak open ${result.peakOpen}, open at hold ${result.openAtHoldStart}, errors ${result.errors} ${JSON.stringify(result.errorKinds)}, ` +
        `gateway active ${atHold?.gatewayActiveStreams ?? '?'}, stub open ${atHold?.stub?.openStreams ?? '?'}, heartbeats in hold ${result.heartbeatsDuringHold}, ` +
        `VmHWM ${fmt.mb(row.gatewayTotalVmHwmKb)} MiB in all (baseline ${fmt.mb(row.gatewayBaselineRssKb)} MiB), ${row.perStreamKb?.toFixed(1) ?? '?'} KiB a stream at hold, active after close ${activeAfter}`,
    );
    const mib = (kb) => (kb === null || kb === undefined ? '?' : fmt.mb(kb));
    log(
      `  s4 per process, RSS (PSS) MiB before → at hold: ` +
        baselineProcesses.map((p, i) => `${p.role} ${mib(p.rssKb)} (${mib(p.pssKb)}) → ${mib(atHold?.processes?.[i]?.rssKb)} (${mib(atHold?.processes?.[i]?.pssKb)}), ${atHold?.processes?.[i]?.fds ?? '?'} fds`).join(', ') +
        `; PSS in all ${mib(baselinePssKb)} → ${mib(atHold?.gatewayPssKb)} MiB, ${row.perStreamPssKb?.toFixed(1) ?? '?'} KiB a stream`,
    );
    // Opening is CPU-bound: which process spent it, from the start to the hold.
    const cpu = baselineProcesses.map((p, i) => {
      const at = atHold?.processes?.[i]?.cpuMs;
      return `${p.role} ${p.cpuMs === null || at === null || at === undefined ? '?' : ((at - p.cpuMs) / 1000).toFixed(1)} s`;
    });
    log(`  s4 CPU while opening (start to hold, ${result.allOpenMs === null ? 'not all open' : `all open after ${(result.allOpenMs / 1000).toFixed(1)} s`}): ${cpu.join(', ')}`);
    return row;
  } finally {
    await gateway.stop();
  }
}

export async function runIdleStreamsScenario({ env, options, repoRoot, tmpDir, fdLimit, hardFdLimit, log }) {
  const count = options.idleStreams;
  const notes = [];
  const fdNeed = 2 * count + GATEWAY_FD_OVERHEAD;
  const workers = options.idleWorkers ?? processesFor(count, hardFdLimit);
  if (fdNeed > hardFdLimit) {
    notes.push(
      `${count} streams need about ${fdNeed} file descriptors in the gateway (one socket each side per stream); ` +
        `this machine's hard limit (ulimit -Hn) is ${hardFdLimit}, so at most about ${Math.floor((hardFdLimit - GATEWAY_FD_OVERHEAD) / 2)} can be carried by one process here` +
        (workers > 1
          ? options.idleTopology === 'reuseport'
            ? `: scenario 4 ran ${workers} standalone instances on one port (listen.reuse_port, --idle-topology reuseport) and counts the memory of all of them.`
            : `: scenario 4 ran \`serve --workers ${workers}\` and counts the memory of all its processes.`
          : '.'),
    );
  }

  // Harness check: the client and the stub alone, same count, a short hold.
  const direct = await runClient({
    repoRoot,
    tmpDir,
    fdLimit,
    name: `idle-client-direct-${count}`,
    url: env.stub.url,
    path: '/api/v1/chat/stream',
    headers: { 'x-bench-stream': `idle=1&eventEveryMs=${EVENT_EVERY_MS}` },
    count,
    holdS: 2,
    openTimeoutS: Math.max(10, count / 500),
  });
  log(`  s4 stub-direct ${count} streams (harness check): peak open ${direct.peakOpen}, errors ${direct.errors} ${JSON.stringify(direct.errorKinds)}`);
  await new Promise((r) => setTimeout(r, 2_000));

  const nodeArgs = options.idleNodeArgs ?? [];
  if (nodeArgs.length > 0) notes.push(`scenario 4's gateway ran with node ${nodeArgs.join(' ')} (--idle-node-args).`);
  const runtime = await streamProcessRuntime({ repoRoot, workers, nodeArgs });
  const floor = [];
  const onFloor = async (label) => {
    let row;
    try {
      row = await holdOnFloor({ repoRoot, tmpDir, fdLimit, stubUrl: env.stub.url, count, holdS: options.idleHoldS, processes: workers, runtime, name: `floor-idle-${label}` });
    } catch (error) {
      // The gateway's figures are worth keeping without the floor: the verdict is then n/a.
      const message = String(error.message).split('\n')[0];
      notes.push(`scenario 4: the floor's hold ${label} the gateway did not complete: ${message}`);
      log(`  s4 floor (${label} the gateway) failed: ${message}`);
      return;
    }
    floor.push({ label, ...row });
    log(
      `  s4 floor (${label} the gateway, ${workers} bare undici process${workers > 1 ? 'es' : ''}): open ${row.openAtHoldStart}/${count}, errors ${row.errors}, ` +
        `RSS ${fmt.mb(row.baselineRssKb)} → ${fmt.mb(row.atHold?.rssKb ?? null)} MiB at hold, VmHWM ${fmt.mb(row.hwmKb)} MiB, ${row.perStreamKb?.toFixed(1) ?? '?'} KiB a stream (load ${row.loadBefore} → ${row.loadAfter})`,
    );
    await new Promise((r) => setTimeout(r, 2_000));
  };
  await onFloor('before');
  const attempts = [await attempt({ env, count, holdS: options.idleHoldS, workers, topology: options.idleTopology ?? 'workers', nodeArgs, repoRoot, tmpDir, fdLimit, log })];
  await new Promise((r) => setTimeout(r, 2_000));
  await onFloor('after');
  const first = attempts[0];
  if (first.errors > 0 && first.peakOpen < count) {
    const poolConnections = upstreamPoolConnections(repoRoot);
    const atStub = first.atHold?.stub?.openStreams;
    if (poolConnections !== null && atStub === poolConnections && first.errorKinds.no_headers_in_time) {
      notes.push(
        `Scenario 4: only ${atStub} of ${count} streams reached the stub; the rest waited inside the gateway without response headers. ` +
          `${atStub} is the upstream pool's connection cap (connections: ${poolConnections} in src/proxy/upstream-pools.ts): ` +
          'an SSE stream holds its upstream connection for its whole life, so one agent origin carries at most that many concurrent streams.',
      );
    }
    // Report the largest count that held without errors: the peak reached, rounded down.
    const lower = Math.max(50, Math.floor(first.peakOpen / 50) * 50);
    if (lower < count) {
      log(`  s4 ${count} streams did not all open; trying ${lower}`);
      attempts.push(await attempt({ env, count: lower, holdS: Math.min(options.idleHoldS, 15), workers, topology: options.idleTopology ?? 'workers', nodeArgs, repoRoot, tmpDir, fdLimit, log }));
    }
  }
  const worked = attempts.filter((a) => a.errors === 0).map((a) => a.count);
  return { heartbeat: options.heartbeat, eventEveryMs: EVENT_EVERY_MS, workers, topology: options.idleTopology ?? 'workers', nodeArgs, direct, floor, attempts, largestWithoutErrors: worked.length ? Math.max(...worked) : null, notes };
}

export function idleStreamsTable(result) {
  const rows = [
    ['stub-direct (harness)', fmt.int(result.direct.count), fmt.int(result.direct.peakOpen), String(result.direct.errors), null, null, null, null, null, null, null, null, null, null],
    ...(result.floor ?? []).map((f) => [
      `bare-undici floor, ${f.label} (${f.processes} process${f.processes > 1 ? 'es' : ''})`,
      fmt.int(f.count),
      fmt.int(f.peakOpen),
      String(f.errors),
      null,
      null,
      null,
      fmt.mb(f.baselineRssKb),
      null,
      fmt.mb(f.atHold?.rssKb ?? null),
      fmt.mb(f.hwmKb),
      f.hwmKb === null || f.baselineRssKb === null ? null : fmt.mb(f.hwmKb - f.baselineRssKb),
      f.perStreamKb === null ? null : f.perStreamKb.toFixed(1),
      fmt.mb(f.atHold?.pssKb ?? null),
    ]),
    ...result.attempts.map((a) => [
      a.processes > 1 ? (a.topology === 'reuseport' ? `gateway (${a.processes} instances, reuse_port)` : `gateway (${a.processes} processes)`) : 'gateway',
      fmt.int(a.count),
      fmt.int(a.peakOpen),
      `${a.errors}${a.errors ? ` (${Object.entries(a.errorKinds).map(([k, v]) => `${k} ${v}`).join(', ')})` : ''}`,
      fmt.int(a.atHold?.gatewayActiveStreams),
      fmt.int(a.atHold?.stub?.openStreams),
      fmt.int(a.heartbeatsDuringHold),
      fmt.mb(a.gatewayBaselineRssKb),
      fmt.int(a.heldConnections),
      // Held streams and the peak apart: the peak can come after the clients leave.
      fmt.mb(a.atHold?.gatewayRssKb ?? null),
      fmt.mb(a.gatewayTotalVmHwmKb),
      a.gatewayTotalVmHwmKb === null || a.gatewayBaselineRssKb === null ? null : fmt.mb(a.gatewayTotalVmHwmKb - a.gatewayBaselineRssKb),
      a.perStreamKb === null ? null : a.perStreamKb.toFixed(1),
      fmt.mb(a.atHold?.gatewayPssKb ?? null),
    ]),
  ];
  return {
    title: `Scenario 4 — concurrent idle streams held ${result.attempts[0]?.holdS ?? '?'} s (heartbeat ${result.heartbeat}, one upstream event per ${result.eventEveryMs / 1000} s)`,
    ...renderTable(['target', 'streams', 'peak open', 'errors', 'gw active', 'at stub', 'heartbeats', 'RSS before MiB', 'conns held', 'RSS at hold MiB', 'peak RSS MiB (VmHWM, all)', 'Δ MiB', 'KiB/stream at hold', 'PSS at hold MiB (all)'], rows),
  };
}
