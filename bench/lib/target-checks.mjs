// The targets, checked against this run's medians. "n/a" when the scenario or the
// reference needed for a check did not run; never a pass by default.

const verdict = (ok) => (ok === null ? 'n/a' : ok ? 'PASS' : 'FAIL');

export function checkTargets(results) {
  const checks = [];
  const add = (scenario, target, measured, ok) => checks.push({ scenario, target, measured, result: verdict(ok) });

  for (const group of results.throughput?.summary ?? []) {
    const gw = group.byTarget.gateway;
    if (!gw) continue;
    const label = `${group.tool}, ${group.connections} conns`;
    const vsNginx = gw.vs.nginx ?? null;
    add(1, `gateway ≥ 0.5 × nginx req/s (${label})`, vsNginx === null ? 'nginx not run' : `×${vsNginx.toFixed(2)}`, vsNginx === null ? null : vsNginx >= 0.5);
    const vsHttpProxy = gw.vs['bare-http-proxy'] ?? null;
    add(1, `gateway > bare http-proxy req/s (${label})`, vsHttpProxy === null ? '–' : `×${vsHttpProxy.toFixed(2)}`, vsHttpProxy === null ? null : vsHttpProxy > 1);
  }
  const fixed = results.fixedRate?.summary?.gateway;
  if (fixed) {
    add(2, 'added latency p50 ≤ 0.5 ms', `${fixed.addedP50Ms.toFixed(3)} ms`, fixed.addedP50Ms <= 0.5);
    add(2, 'added latency p99 ≤ 2 ms', `${fixed.addedP99Ms.toFixed(3)} ms`, fixed.addedP99Ms <= 2);
  }
  const stream = results.streamDelay?.summary?.gateway;
  if (stream) {
    add(3, 'added delay per event p99 ≤ 1 ms', `${stream.addedDelayP99Ms.toFixed(3)} ms`, stream.addedDelayP99Ms <= 1);
    add(3, 'no event held back behind a later one', `${stream.heldBack} held back, ${stream.outOfOrder} out of order, of ${stream.events}`, stream.heldBack === 0 && stream.outOfOrder === 0);
  }
  const idle = results.idleStreams;
  if (idle) {
    const first = idle.attempts[0];
    add(4, `${first.count} idle streams open, no errors`, `${first.peakOpen} open, ${first.errors} errors; largest without errors: ${idle.largestWithoutErrors ?? 'none'}`, first.errors === 0 && first.peakOpen === first.count);
    const peakKb = first.gatewayVmHwmKb ?? first.gatewayPeakRssKb;
    add(4, 'gateway peak RSS ≤ 400 MB', peakKb ? `${(peakKb / 1024).toFixed(0)} MiB at ${first.peakOpen} streams` : '–', peakKb ? peakKb * 1024 <= 400e6 : null);
  }
  const redis = results.redisCommands;
  if (redis) {
    // Limiter and audit both travel as EVALSHA; together at most one command per request
    // means the limiter costs at most one round trip and the audit writes are batched.
    const evalsha = redis.perRequest.find((c) => c.command === 'evalsha')?.perRequest ?? 0;
    const xaddSent = redis.perRequest.find((c) => c.command === 'xadd' && c.sentAs === 'client')?.perRequest ?? 0;
    add(5, '≤ 1 limiter round trip per request; audit writes batched', `${redis.sentPerRequest} commands sent per request (evalsha ${evalsha}), ${xaddSent} XADD sent one by one`, redis.sentPerRequest <= 1.01 && xaddSent === 0);
  }
  return checks;
}
