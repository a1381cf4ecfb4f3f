// Scenario 6: one agent on three runners (`upstreams:`), POST /chat at a fixed rate, one
// runner SIGKILLed halfway through a measurement (docs/upstreams.md). Reported: the errors
// clients saw (goal 0: a refused connection is retried on another runner, then the dead
// runner is ejected; a request that was on the runner when it died was sent, so it is
// answered 503 and not repeated: a non-2xx here is one of those), and the latency of that run against a run with all three up, with
// the gateway's own retry and ejection counts. A gateway of its own (the built CLI, the
// bench's production config with three upstreams), started after the other scenarios.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { runFixedRate } from '../lib/fixed-rate-client.mjs';
import { BENCH_AGENT, createBenchKey, startGatewayProcess, writeGatewayConfig } from '../lib/gateway.mjs';
import { startStubRunner } from '../lib/processes.mjs';
import { percentiles, round } from '../lib/stats.mjs';
import { fmt, renderTable } from '../lib/table.mjs';

async function counter(adminUrl, name) {
  const text = await (await fetch(`${adminUrl}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n')) if (line.startsWith(`${name}{`) || line.startsWith(`${name} `)) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  return sum;
}

export async function runFailoverScenario({ repoRoot, tmpDir, redis, fdLimit, options, log }) {
  const dir = join(tmpDir, 'failover');
  mkdirSync(dir, { recursive: true });
  const stubs = await Promise.all([0, 1, 2].map((i) => startStubRunner({ tmpDir: dir, fdLimit, name: `failover-stub-${i}` })));
  const upstreamUrls = stubs.map((s) => `${s.url}/api/v1`);
  const configPath = writeGatewayConfig({ tmpDir: dir, redisUrl: redis.url, prefix: `agentgw-bench-failover-${process.pid}:`, upstreamUrls, heartbeat: options.heartbeat });
  const key = await createBenchKey({ repoRoot, configPath });
  const gateway = await startGatewayProcess({ repoRoot, configPath, redisUrl: redis.url, tmpDir: dir, fdLimit, name: 'gateway-failover' });
  const target = { url: gateway.url, chatPath: `/agents/${BENCH_AGENT}/api/v1/chat`, headers: { authorization: `Bearer ${key.rawKey}` } };
  // Long enough that the kill falls well inside the measured part, even with --quick.
  const durationS = Math.max(options.durationS, 4);
  const warmupS = Math.min(options.warmupS, 2) || 0.5;
  const run = async (label, killAtS) => {
    const retriesBefore = await counter(gateway.adminUrl, 'agentgw_upstream_retries_total');
    const ejectionsBefore = await counter(gateway.adminUrl, 'agentgw_upstream_ejections_total');
    const killTimer = killAtS === null ? null : setTimeout(() => void stubs[2].stop(0), killAtS * 1000);
    const r = await runFixedRate(target, { ratePerSec: options.ratePerSec, durationS, warmupS });
    if (killTimer) clearTimeout(killTimer);
    const p = percentiles(r.latenciesMs, [50, 99, 99.9]);
    const row = {
      label,
      sent: r.sent,
      clientErrors: r.errors + r.non2xx,
      non2xx: r.non2xx,
      transportErrors: r.errors,
      p50Ms: p.p50,
      p99Ms: p.p99,
      p999Ms: p.p99_9,
      maxMs: p.max,
      retries: (await counter(gateway.adminUrl, 'agentgw_upstream_retries_total')) - retriesBefore,
      ejections: (await counter(gateway.adminUrl, 'agentgw_upstream_ejections_total')) - ejectionsBefore,
    };
    log(`  s6 ${label.padEnd(34)} sent ${row.sent} client errors ${row.clientErrors} (non-2xx ${row.non2xx}, transport ${row.transportErrors})  p50 ${p.p50?.toFixed(3)} p99 ${p.p99?.toFixed(3)} p99.9 ${p.p99_9?.toFixed(3)} max ${p.max?.toFixed(1)} ms  retries ${row.retries} ejections ${row.ejections}`);
    return row;
  };
  try {
    const healthy = await run('3 runners up', null);
    const failover = await run(`runner 3 SIGKILLed at ${round(warmupS + durationS / 2, 1)} s`, warmupS + durationS / 2);
    return {
      ratePerSec: options.ratePerSec,
      durationS,
      rows: [healthy, failover],
      addedP50Ms: round(failover.p50Ms - healthy.p50Ms, 3),
      addedP99Ms: round(failover.p99Ms - healthy.p99Ms, 3),
    };
  } finally {
    await gateway.stop();
    await Promise.all(stubs.map((s) => s.stop()));
  }
}

export function failoverTable(result) {
  const rows = result.rows.map((r) => [r.label, fmt.int(r.sent), String(r.clientErrors), fmt.ms(r.p50Ms, 3), fmt.ms(r.p99Ms, 3), fmt.ms(r.p999Ms, 3), fmt.ms(r.maxMs, 1), String(r.retries), String(r.ejections)]);
  const table = renderTable(['run', 'sent', 'client errors', 'p50', 'p99', 'p99.9', 'max', 'retries', 'ejections'], rows);
  const added = `\nadded by the kill: p50 ${fmt.signedMs(result.addedP50Ms, 3)}, p99 ${fmt.signedMs(result.addedP99Ms, 3)} (goal: 0 client errors)`;
  return {
    text: table.text + added,
    markdown: table.markdown + `\n\n${added.trim()}`,
    title: `Scenario 6 — one agent on 3 runners, POST /chat at ${result.ratePerSec} req/s for ${result.durationS} s, one runner killed mid-run`,
  };
}
