// Scenario 2: POST /chat at a fixed rate (2,000 req/s by default), far below saturation, so
// the latency is the cost of the hop rather than of queueing. Each round measures every
// target back to back (rotated order); "added" is the target's percentile minus the stub
// direct's percentile in the same round, and the table gives the median over rounds.
import os from 'node:os';
import { runFixedRate } from '../lib/fixed-rate-client.mjs';
import { gatewayMetricsBracket } from '../lib/gateway-metrics.mjs';
import { median, percentiles, round } from '../lib/stats.mjs';
import { fmt, renderTable } from '../lib/table.mjs';

export async function runFixedRateScenario({ targets, options, log }) {
  const rows = [];
  for (let roundNo = 1; roundNo <= options.runs; roundNo += 1) {
    const shift = (roundNo - 1) % targets.length;
    const order = [...targets.slice(shift), ...targets.slice(0, shift)];
    for (const target of order) {
      const loadAvg = os.loadavg()[0];
      const gatewayView = target.adminUrl ? gatewayMetricsBracket(target.adminUrl) : null;
      const r = await runFixedRate(target, {
        ratePerSec: options.ratePerSec,
        durationS: options.durationS,
        warmupS: Math.min(options.warmupS, 2) || 0.5,
        onMeasureStart: () => gatewayView?.begin(),
      });
      const p = percentiles(r.latenciesMs, [50, 90, 99, 99.9]);
      const row = {
        round: roundNo,
        target: target.name,
        ok: r.ok,
        errors: r.errors,
        errorKinds: r.errorKinds,
        non2xx: r.non2xx,
        achievedRatePerSec: round(r.achievedRatePerSec),
        maxSendLagMs: round(r.maxLagMs, 2),
        p50Ms: p.p50,
        p90Ms: p.p90,
        p99Ms: p.p99,
        p999Ms: p.p99_9,
        maxMs: p.max,
        loadAvg1m: round(loadAvg, 2),
        gatewayView: gatewayView ? await gatewayView.end() : null,
      };
      rows.push(row);
      log(
        `  s2 round ${roundNo} ${target.name.padEnd(16)} p50 ${p.p50?.toFixed(3)} p99 ${p.p99?.toFixed(3)} p99.9 ${p.p99_9?.toFixed(3)} ms` +
          `  rate ${r.achievedRatePerSec.toFixed(0)}/s  errors ${r.errors} non2xx ${r.non2xx}  max send lag ${r.maxLagMs.toFixed(1)} ms  (load ${loadAvg.toFixed(2)})` +
          (row.gatewayView
            ? `\n      gateway's view (bucket bounds): whole request p50 ≤ ${row.gatewayView.requestP50AtMostMs} p99 ≤ ${row.gatewayView.requestP99AtMostMs} ms,` +
              ` upstream p50 ≤ ${row.gatewayView.upstreamP50AtMostMs} p99 ≤ ${row.gatewayView.upstreamP99AtMostMs} ms,` +
              ` overhead p50 ≤ ${row.gatewayView.overheadP50AtMostMs} p99 ≤ ${row.gatewayView.overheadP99AtMostMs} ms;` +
              ` event-loop delay (beyond the 10 ms sampling timer) p99 ${row.gatewayView.eventLoopDelayP99Ms?.toFixed(1)} ms, max ${row.gatewayView.eventLoopDelayMaxMs?.toFixed(1)} ms`
            : ''),
      );
    }
  }
  return { ratePerSec: options.ratePerSec, rows, summary: summariseFixedRate(rows, targets) };
}

function summariseFixedRate(rows, targets) {
  const out = {};
  for (const t of targets) {
    const mine = rows.filter((r) => r.target === t.name);
    if (mine.length === 0) continue;
    const added = (field) =>
      median(mine.map((r) => {
        const direct = rows.find((d) => d.round === r.round && d.target === 'stub-direct');
        return direct && r[field] !== null && direct[field] !== null ? r[field] - direct[field] : null;
      }));
    out[t.name] = {
      runs: mine.length,
      p50Ms: round(median(mine.map((r) => r.p50Ms)), 3),
      p99Ms: round(median(mine.map((r) => r.p99Ms)), 3),
      p999Ms: round(median(mine.map((r) => r.p999Ms)), 3),
      addedP50Ms: round(added('p50Ms'), 3),
      addedP99Ms: round(added('p99Ms'), 3),
      addedP50MsAllRuns: mine.map((r) => {
        const d = rows.find((x) => x.round === r.round && x.target === 'stub-direct');
        return d ? round(r.p50Ms - d.p50Ms, 3) : null;
      }),
      addedP99MsAllRuns: mine.map((r) => {
        const d = rows.find((x) => x.round === r.round && x.target === 'stub-direct');
        return d ? round(r.p99Ms - d.p99Ms, 3) : null;
      }),
      achievedRatePerSec: round(median(mine.map((r) => r.achievedRatePerSec))),
      errors: mine.reduce((n, r) => n + r.errors + r.non2xx, 0),
      gatewayView: mine[0].gatewayView
        ? {
            requestP50AtMostMs: median(mine.map((r) => r.gatewayView.requestP50AtMostMs)),
            requestP99AtMostMs: median(mine.map((r) => r.gatewayView.requestP99AtMostMs)),
            upstreamP50AtMostMs: median(mine.map((r) => r.gatewayView.upstreamP50AtMostMs)),
            upstreamP99AtMostMs: median(mine.map((r) => r.gatewayView.upstreamP99AtMostMs)),
            overheadP50AtMostMs: median(mine.map((r) => r.gatewayView.overheadP50AtMostMs)),
            overheadP99AtMostMs: median(mine.map((r) => r.gatewayView.overheadP99AtMostMs)),
            eventLoopDelayP99Ms: round(median(mine.map((r) => r.gatewayView.eventLoopDelayP99Ms)), 2),
            eventLoopDelayMaxMs: round(median(mine.map((r) => r.gatewayView.eventLoopDelayMaxMs)), 2),
          }
        : null,
    };
  }
  return out;
}

export function fixedRateTable(result) {
  const rows = Object.entries(result.summary).map(([name, s]) => [
    name,
    fmt.ms(s.p50Ms, 3),
    fmt.ms(s.p99Ms, 3),
    fmt.ms(s.p999Ms, 3),
    name === 'stub-direct' ? '' : fmt.signedMs(s.addedP50Ms, 3),
    name === 'stub-direct' ? '' : fmt.signedMs(s.addedP99Ms, 3),
    fmt.int(s.achievedRatePerSec),
    String(s.errors),
  ]);
  const gw = result.summary.gateway?.gatewayView;
  const view = gw
    ? `\ngateway's own view (admin /metrics histograms, bucket upper bounds, medians of rounds): whole request p50 ≤ ${gw.requestP50AtMostMs} ms, p99 ≤ ${gw.requestP99AtMostMs} ms; ` +
      `upstream exchange p50 ≤ ${gw.upstreamP50AtMostMs} ms, p99 ≤ ${gw.upstreamP99AtMostMs} ms; overhead p50 ≤ ${gw.overheadP50AtMostMs} ms, p99 ≤ ${gw.overheadP99AtMostMs} ms; ` +
      `event-loop delay beyond the 10 ms sampling timer p99 ${gw.eventLoopDelayP99Ms} ms, max ${gw.eventLoopDelayMaxMs} ms`
    : '';
  const table = renderTable(['target', 'p50', 'p99', 'p99.9', 'added p50', 'added p99', 'sent/s', 'errors'], rows);
  return {
    text: table.text + view,
    markdown: table.markdown + (view ? `\n\n${view.trim()}` : ''),
    title: `Scenario 2 — POST /chat at ${result.ratePerSec} req/s: latency in ms (median of ${result.rows.length / Object.keys(result.summary).length} rounds; "added" = minus stub-direct in the same round)`,
  };
}
