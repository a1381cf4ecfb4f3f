// The targets of issue 26, checked against this run's medians: one verdict line each,
// computed from the measured numbers. "n/a" when the scenario, the peer or the reference a
// check needs did not run; never a pass by default. (Issue 7's ratios to nginx and bare
// http-proxy are retired: the tables still show ×nginx, docs/performance.md explains.)
import { PEER_NAMES } from './peers.mjs';

const verdict = (ok) => (ok === null ? 'n/a' : ok ? 'PASS' : 'FAIL');
const isNumber = (x) => typeof x === 'number' && Number.isFinite(x);
/** A figure and its check; no figure because every request failed is a FAIL, else n/a. */
const msCheck = (x, limit, errors) =>
  isNumber(x) ? [`${x.toFixed(3)} ms`, x <= limit] : errors > 0 ? [`no figure: ${errors} errors`, false] : ['no figure', null];

export const TARGETS = {
  overBestNodePeer: 2,
  cpuOverBareUndici: 1.5,
  firstEventAddedMs: 1,
  eventAddedP99Ms: 1,
  idleStreams: 10_000,
  idleStreamsTotalBytes: 400e6,
  fixedRateAddedP50Ms: 0.3,
  fixedRateAddedP99Ms: 2,
};

/** The gateway's per-round median ratio to each peer that ran in this group, best peer first. */
function peersInGroup(gw) {
  return PEER_NAMES.filter((p) => isNumber(gw.vs[p])).map((p) => ({ name: p, times: gw.vs[p] })).sort((a, b) => a.times - b.times);
}

export function checkTargets(results) {
  const checks = [];
  const add = (scenario, target, measured, ok) => checks.push({ scenario, target, measured, result: verdict(ok) });

  for (const group of results.throughput?.summary ?? []) {
    const gw = group.byTarget.gateway;
    if (!gw) continue;
    const label = `${group.tool}, ${group.connections} conns`;
    const peers = peersInGroup(gw);
    add(
      1,
      `gateway ≥ ${TARGETS.overBestNodePeer}× the best Node peer's req/s (${label})`,
      peers.length === 0 ? 'no peer ran' : peers.map((p) => `×${p.times.toFixed(2)} ${p.name}`).join(', '),
      peers.length === 0 ? null : peers[0].times >= TARGETS.overBestNodePeer,
    );
    const cpu = gw.cpuVsBareUndici ?? null;
    add(
      1,
      `gateway CPU/request ≤ ${TARGETS.cpuOverBareUndici}× bare undici (${label})`,
      !isNumber(cpu) ? 'bare undici not run' : `×${cpu.toFixed(2)} (${gw.cpuUsPerReq} vs ${group.byTarget['bare-undici']?.cpuUsPerReq} µs)`,
      !isNumber(cpu) ? null : cpu <= TARGETS.cpuOverBareUndici,
    );
  }
  const fixed = results.fixedRate?.summary?.gateway;
  if (fixed) {
    const rate = results.fixedRate.ratePerSec;
    add(2, `added latency p50 ≤ ${TARGETS.fixedRateAddedP50Ms} ms at ${rate} req/s`, ...msCheck(fixed.addedP50Ms, TARGETS.fixedRateAddedP50Ms, fixed.errors));
    add(2, `added latency p99 ≤ ${TARGETS.fixedRateAddedP99Ms} ms at ${rate} req/s`, ...msCheck(fixed.addedP99Ms, TARGETS.fixedRateAddedP99Ms, fixed.errors));
  }
  const stream = results.streamDelay?.summary?.gateway;
  if (stream) {
    const n = results.streamDelay.concurrency;
    add(3, `first event added ≤ ${TARGETS.firstEventAddedMs} ms (p50, ${n} concurrent streams)`, ...msCheck(stream.addedFirstEventP50Ms, TARGETS.firstEventAddedMs, stream.errors));
    add(3, `added delay per event p99 ≤ ${TARGETS.eventAddedP99Ms} ms`, ...msCheck(stream.addedDelayP99Ms, TARGETS.eventAddedP99Ms, stream.errors));
    add(3, 'no event held back behind a later one', `${stream.heldBack} held back, ${stream.outOfOrder} out of order, of ${stream.events}`, stream.heldBack === 0 && stream.outOfOrder === 0);
  }
  const idle = results.idleStreams;
  if (!idle && results.options?.scenarios?.includes(4)) {
    add(4, `${TARGETS.idleStreams.toLocaleString('en-US')} concurrent streams, zero errors, ≤ 400 MB in all gateway processes`, 'scenario 4 did not complete (see the notes)', null);
  }
  if (idle) {
    const first = idle.attempts[0];
    const totalKb = first.gatewayTotalVmHwmKb ?? null;
    const all = first.peakOpen === first.count && first.errors === 0;
    add(
      4,
      `${TARGETS.idleStreams.toLocaleString('en-US')} concurrent streams, zero errors, ≤ 400 MB in all gateway processes`,
      `${first.peakOpen} of ${first.count} open, ${first.errors} errors; ${totalKb === null ? '–' : `${((totalKb * 1024) / 1e6).toFixed(0)} MB`} peak (sum of VmHWM over ${first.processes ?? 1} process(es))` +
        `${isNumber(first.perStreamKb) ? `, ${first.perStreamKb.toFixed(1)} KiB a stream` : ''}` +
        // Beside the verdict, not in it: PSS counts the pages the processes share (the node binary) once.
        `${isNumber(first.atHold?.gatewayPssKb) ? `; PSS at hold ${((first.atHold.gatewayPssKb * 1024) / 1e6).toFixed(0)} MB` : ''}`,
      // A smaller run (--idle-streams, --quick) cannot speak for 10,000.
      first.count < TARGETS.idleStreams || totalKb === null ? null : all && totalKb * 1024 <= TARGETS.idleStreamsTotalBytes,
    );
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
