// Scenario 1: small JSON POST /chat at maximum throughput, 32 and 256 connections, with
// autocannon (and wrk when installed), at every target in turn. Rounds rotate the order of
// the targets so the shared machine's drift spreads over all of them; each figure is also
// the median of per-round ratios to the references measured in the same round.
// While the gateway is under load, INFO commandstats is read before and after: scenario 5.
import os from 'node:os';
import { runAutocannon, runWrk } from '../lib/load-tools.mjs';
import { cpuMsOf } from '../lib/proc-stats.mjs';
import { median, ratio, round } from '../lib/stats.mjs';
import { fmt, renderTable } from '../lib/table.mjs';

const TOOLS = { autocannon: runAutocannon, wrk: runWrk };
/** The columns "×base": the references, and the gateway (the peers' standing against it). */
export const RATIO_BASES = ['stub-direct', 'nginx', 'bare-undici', 'bare-http-proxy', 'gateway'];

export async function runThroughputScenario({ targets, tools, options, tmpDir, redis, stubPid, log }) {
  log(`warm-up: ${options.warmupS} s of autocannon per target`);
  if (options.warmupS > 0) for (const t of targets) await runAutocannon(t, { connections: 32, durationS: options.warmupS });

  const rows = [];
  for (const tool of tools) {
    for (const connections of options.connections) {
      for (let roundNo = 1; roundNo <= options.runs; roundNo += 1) {
        const shift = (roundNo - 1) % targets.length;
        const order = [...targets.slice(shift), ...targets.slice(0, shift)];
        for (const target of order) {
          const loadAvg = os.loadavg()[0];
          const cpuBefore = cpuMsOf(target.pids());
          const stubCpuBefore = cpuMsOf([stubPid]);
          // Every gateway target (the bench's, and --limit-variants'): scenario 5 per target.
          const redisBefore = target.name.startsWith('gateway') ? await redis.commandStats() : null;
          const r = await TOOLS[tool](target, { connections, durationS: options.durationS, tmpDir });
          const cpu = target.pids().length ? cpuMsOf(target.pids()) - cpuBefore : null;
          const stubCpu = cpuMsOf([stubPid]) - stubCpuBefore;
          let redisAfter = null;
          if (redisBefore) {
            // Audit batches (50 ms) and last-used writes (5 s) land after the last answer.
            await new Promise((r) => setTimeout(r, 300));
            redisAfter = await redis.commandStats();
          }
          const row = {
            tool,
            connections,
            round: roundNo,
            target: target.name,
            ...r,
            timeouts: r.timeouts ?? 0,
            cpuUsPerReq: cpu === null || r.requests === 0 ? null : (cpu * 1000) / r.requests,
            stubCpuUsPerReq: r.requests === 0 ? null : (stubCpu * 1000) / r.requests,
            loadAvg1m: round(loadAvg, 2),
            redisBefore,
            redisAfter,
          };
          rows.push(row);
          log(
            `  s1 ${tool} c=${connections} round ${roundNo} ${target.name.padEnd(16)} ${fmt.int(r.reqPerSec).padStart(7)} req/s` +
              `  p50 ${r.p50Ms.toFixed(2)} p99 ${r.p99Ms.toFixed(2)} ms` +
              `${row.cpuUsPerReq === null ? '' : `  cpu ${row.cpuUsPerReq.toFixed(1)} µs/req`}  errors ${r.errors} non2xx ${r.non2xx}  (load ${loadAvg.toFixed(2)})`,
          );
        }
      }
    }
  }
  return { rows, summary: summariseThroughput(rows, targets) };
}

function summariseThroughput(rows, targets) {
  const groups = [];
  for (const tool of new Set(rows.map((r) => r.tool))) {
    for (const connections of new Set(rows.map((r) => r.connections))) {
      const inGroup = rows.filter((r) => r.tool === tool && r.connections === connections);
      const byTarget = {};
      for (const t of targets) {
        const mine = inGroup.filter((r) => r.target === t.name);
        if (mine.length === 0) continue;
        const ratioTo = (base, field) =>
          median(mine.map((r) => ratio(r[field], inGroup.find((b) => b.round === r.round && b.target === base)?.[field])));
        byTarget[t.name] = {
          runs: mine.length,
          reqPerSec: round(median(mine.map((r) => r.reqPerSec))),
          reqPerSecAllRuns: mine.map((r) => round(r.reqPerSec)),
          // To every other target of the same rounds: the verdicts need the gateway against
          // each peer, the tables only the RATIO_BASES columns.
          vs: Object.fromEntries(targets.filter((b) => inGroup.some((r) => r.target === b.name)).map((b) => [b.name, round(ratioTo(b.name, 'reqPerSec'), 3)])),
          p50Ms: round(median(mine.map((r) => r.p50Ms)), 3),
          p99Ms: round(median(mine.map((r) => r.p99Ms)), 3),
          cpuUsPerReq: round(median(mine.map((r) => r.cpuUsPerReq))),
          cpuVsBareUndici: round(ratioTo('bare-undici', 'cpuUsPerReq'), 3),
          errors: mine.reduce((n, r) => n + r.errors, 0),
          non2xx: mine.reduce((n, r) => n + r.non2xx, 0),
        };
      }
      groups.push({ tool, connections, byTarget });
    }
  }
  return groups;
}

export function throughputTables(summary) {
  return summary.map(({ tool, connections, byTarget }) => {
    const bases = RATIO_BASES.filter((b) => byTarget[b]);
    const header = ['target', 'req/s', ...bases.map((b) => `×${b}`), 'p50 ms', 'p99 ms', 'CPU µs/req', 'errors'];
    const rows = Object.entries(byTarget).map(([name, s]) => [
      name,
      fmt.int(s.reqPerSec),
      ...bases.map((b) => fmt.ratio(s.vs[b])),
      fmt.ms(s.p50Ms),
      fmt.ms(s.p99Ms),
      s.cpuUsPerReq === null ? null : s.cpuUsPerReq.toFixed(1),
      String(s.errors + s.non2xx),
    ]);
    return { title: `Scenario 1 — POST /chat max throughput, ${tool}, ${connections} connections (median of ${Object.values(byTarget)[0]?.runs ?? 0})`, ...renderTable(header, rows) };
  });
}
