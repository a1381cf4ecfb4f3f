// The targets of issue 34, checked against this run: each a ratio or a distance to bare
// node:http + undici (the floor) measured in the same rounds, and judged only when the floor
// held still across them (bench/lib/floor-verdicts.mjs). One verdict line each; "n/a" when
// the scenario or the reference a check needs did not run; never a pass by default. The
// peer target (≥ 2× the fastify stack) stays a ratio to the peer, and the Redis round trips a
// count. Issue 26's absolute targets are kept as a footnote (absoluteTargets), not verdicts.
import { floorVerdict, heldBackVerdict, describeStanding, loadRange, resultCell, spread } from './floor-verdicts.mjs';
import { PEER_NAMES } from './peers.mjs';

const FLOOR = 'bare-undici';
const DIRECT = 'stub-direct';
const isNumber = (x) => typeof x === 'number' && Number.isFinite(x);

/** Issue 34's targets: ratios to the floor, distances over it (ms), and the peer ratio. */
export const TARGETS = {
  overBestNodePeer: 2,
  cpuOverFloor: 1.35,
  firstEventOverFloorMs: 0.5,
  eventP99OverFloorMs: 0.5,
  fixedRateP50OverFloorMs: 0.1,
  idleStreams: 10_000,
  idleMemoryOverFloor: 1.15,
  // Issue 46: an MCP tools/call (scenario 7).
  mcpP50OverFloorMs: 0.2,
  mcpCpuOverFloor: 1.5,
};

/** Issue 26's absolute targets: printed in the footnote with what this run measured. */
export const ABSOLUTE_TARGETS = {
  cpuOverBareUndici: 1.5,
  firstEventAddedMs: 1,
  eventAddedP99Ms: 1,
  idleStreamsTotalBytes: 400e6,
  fixedRateAddedP50Ms: 0.3,
  fixedRateAddedP99Ms: 2,
};

/** Per round, the gateway's and the floor's `field`, and the floor's own figure (minus stub direct when `overDirect`). */
function roundsOf(rows, field, { overDirect = false } = {}) {
  const byRound = new Map();
  for (const r of rows) {
    if (!byRound.has(r.round)) byRound.set(r.round, {});
    byRound.get(r.round)[r.target] = r;
  }
  const rounds = [];
  const floorValues = [];
  const loads = [];
  for (const inRound of byRound.values()) {
    const g = inRound.gateway?.[field];
    const f = inRound[FLOOR]?.[field];
    if (inRound.gateway) loads.push(inRound.gateway.loadAvg1m);
    if (inRound[FLOOR]) loads.push(inRound[FLOOR].loadAvg1m);
    rounds.push({ gateway: isNumber(g) ? g : null, floor: isNumber(f) ? f : null });
    const d = inRound[DIRECT]?.[field];
    floorValues.push(!isNumber(f) ? null : overDirect && isNumber(d) ? f - d : f);
  }
  return { rounds, floorValues, load: loadRange(loads) };
}

/** The floor-relative verdict of one target, as a check row (and its numbers, for the result file). */
function floorCheck(scenario, target, spec, { rounds, floorValues, load }, extra = '') {
  const v = floorVerdict({ kind: spec.kind, limit: spec.limit, rounds, floorValues });
  const floorPart = v.floorSpread === null ? '' : `; the floor's spread ${spec.kind === 'ratio' ? `${(v.floorSpread * 100).toFixed(0)} %` : `${v.floorSpread.toFixed(3)} ${spec.unit ?? 'ms'}`} over ${floorValues.filter(isNumber).length} rounds`;
  return {
    scenario,
    target,
    // The load goes in the result cell of an UNJUDGED line, else here: every line says how quiet its rounds were.
    measured: `${describeStanding(v, spec)}${extra}${floorPart}${v.result !== 'UNJUDGED' && load ? `; load ${load}` : ''}`,
    result: resultCell(v, load),
    verdict: v.result,
    standing: v.standing,
    limit: v.limit,
    toSpare: v.toSpare,
    floorSpread: v.floorSpread,
    margin: v.margin,
    load,
  };
}

/** The gateway's per-round ratio to each peer that ran in this group, best peer first. */
function peersInGroup(gw, inGroup) {
  return PEER_NAMES.filter((p) => isNumber(gw.vs[p]))
    .map((p) => {
      const perRound = inGroup
        .filter((r) => r.target === 'gateway')
        .map((r) => {
          const peer = inGroup.find((x) => x.round === r.round && x.target === p);
          return peer && peer.reqPerSec > 0 ? r.reqPerSec / peer.reqPerSec : null;
        });
      return { name: p, times: gw.vs[p], spread: spread(perRound) };
    })
    .sort((a, b) => a.times - b.times);
}

const plain = (scenario, target, measured, ok) => ({ scenario, target, measured, result: ok === null ? 'n/a' : ok ? 'PASS' : 'FAIL', verdict: ok === null ? 'n/a' : ok ? 'PASS' : 'FAIL' });

function throughputChecks(results, checks) {
  for (const group of results.throughput?.summary ?? []) {
    const gw = group.byTarget.gateway;
    if (!gw) continue;
    const label = `${group.tool}, ${group.connections} conns`;
    const inGroup = (results.throughput.rows ?? []).filter((r) => r.tool === group.tool && r.connections === group.connections);
    const peers = peersInGroup(gw, inGroup);
    checks.push(
      plain(
        1,
        `gateway ≥ ${TARGETS.overBestNodePeer}× the best Node peer's req/s (${label})`,
        peers.length === 0 ? 'no peer ran' : peers.map((p) => `×${p.times.toFixed(2)} ${p.name}${p.spread === null ? '' : ` (rounds ±${(p.spread / 2).toFixed(2)})`}`).join(', '),
        peers.length === 0 ? null : peers[0].times >= TARGETS.overBestNodePeer,
      ),
    );
    const series = roundsOf(inGroup, 'cpuUsPerReq');
    const floorCpu = group.byTarget[FLOOR]?.cpuUsPerReq;
    const cpu = floorCheck(1, `gateway CPU/request ≤ ${TARGETS.cpuOverFloor}× the floor's (${label})`, { kind: 'ratio', limit: TARGETS.cpuOverFloor }, series, isNumber(floorCpu) ? ` — ${gw.cpuUsPerReq} vs ${floorCpu} µs` : '');
    checks.push(isNumber(floorCpu) ? cpu : { ...cpu, measured: 'bare undici not run', result: 'n/a', verdict: 'n/a' });
  }
}

function fixedRateChecks(results, checks) {
  const fixed = results.fixedRate;
  if (!fixed?.summary?.gateway) return;
  const rate = fixed.ratePerSec;
  if (fixed.summary.gateway.errors > 0) {
    checks.push(plain(2, `added p50 ≤ the floor's + ${TARGETS.fixedRateP50OverFloorMs} ms at ${rate} req/s`, `${fixed.summary.gateway.errors} errors`, false));
    return;
  }
  checks.push(floorCheck(2, `added p50 ≤ the floor's + ${TARGETS.fixedRateP50OverFloorMs} ms at ${rate} req/s`, { kind: 'distance', limit: TARGETS.fixedRateP50OverFloorMs }, roundsOf(fixed.rows, 'p50Ms', { overDirect: true })));
}

function mcpChecks(results, checks) {
  const mcp = results.mcpCalls;
  const gw = mcp?.summary?.gateway;
  if (!gw) return;
  const latency = `MCP tools/call added p50 ≤ the floor's + ${TARGETS.mcpP50OverFloorMs} ms at ${mcp.ratePerSec} calls/s`;
  const cpuTarget = `MCP tools/call gateway CPU/call ≤ ${TARGETS.mcpCpuOverFloor}× the floor's`;
  if (gw.errors > 0 || mcp.summary['bare-undici']?.errors > 0) {
    checks.push(plain(7, latency, `${gw.errors} errors (floor ${mcp.summary['bare-undici']?.errors ?? '–'})`, false), plain(7, cpuTarget, `${gw.errors} errors`, false));
    return;
  }
  checks.push(floorCheck(7, latency, { kind: 'distance', limit: TARGETS.mcpP50OverFloorMs }, roundsOf(mcp.rows, 'p50Ms', { overDirect: true })));
  const floorCpu = mcp.summary['bare-undici']?.cpuUsPerCall;
  checks.push(floorCheck(7, cpuTarget, { kind: 'ratio', limit: TARGETS.mcpCpuOverFloor }, roundsOf(mcp.rows, 'cpuUsPerCall'), isNumber(floorCpu) ? ` — ${gw.cpuUsPerCall} vs ${floorCpu} µs` : ''));
}

function streamChecks(results, checks) {
  const s3 = results.streamDelay;
  const stream = s3?.summary?.gateway;
  if (!stream) return;
  const n = s3.concurrency;
  const firstTarget = `first event p50 ≤ the floor's + ${TARGETS.firstEventOverFloorMs} ms (${n} concurrent streams)`;
  const eventTarget = `added delay per event p99 ≤ the floor's + ${TARGETS.eventP99OverFloorMs} ms`;
  if (stream.errors > 0) {
    checks.push(plain(3, firstTarget, `${stream.errors} errors`, false), plain(3, eventTarget, `${stream.errors} errors`, false));
  } else {
    checks.push(floorCheck(3, firstTarget, { kind: 'distance', limit: TARGETS.firstEventOverFloorMs }, roundsOf(s3.rows, 'firstEventP50Ms', { overDirect: true })));
    checks.push(floorCheck(3, eventTarget, { kind: 'distance', limit: TARGETS.eventP99OverFloorMs }, roundsOf(s3.rows, 'eventDelayP99Ms', { overDirect: true })));
  }
  const floor = s3.summary[FLOOR] ?? null;
  const held = heldBackVerdict({ gateway: stream, floor });
  checks.push({
    scenario: 3,
    target: 'no event held back behind a later one',
    measured: `${stream.heldBack} held back, ${stream.outOfOrder} out of order, of ${stream.events}${floor ? `; the floor ${floor.heldBack} and ${floor.outOfOrder}` : ''}`,
    result: held.result === 'UNJUDGED' ? `UNJUDGED (noisy: ${held.reason})` : held.result,
    verdict: held.result,
  });
}

function idleChecks(results, checks) {
  const target = `${TARGETS.idleStreams.toLocaleString('en-US')} idle streams, zero errors, peak memory ≤ ${TARGETS.idleMemoryOverFloor}× the floor's (sum of VmHWM)`;
  const idle = results.idleStreams;
  if (!idle) {
    if (results.options?.scenarios?.includes(4)) checks.push(plain(4, target, 'scenario 4 did not complete (see the notes)', null));
    return;
  }
  const first = idle.attempts[0];
  const floor = (idle.floor ?? []).filter((f) => isNumber(f.hwmKb));
  const gwKb = first.gatewayTotalVmHwmKb ?? null;
  const series = {
    rounds: floor.map((f) => ({ gateway: gwKb, floor: f.hwmKb })),
    floorValues: floor.map((f) => f.hwmKb),
    load: loadRange(floor.flatMap((f) => [Number(f.loadBefore?.split(' ')[0]), Number(f.loadAfter?.split(' ')[0])])),
  };
  const mb = (kb) => (isNumber(kb) ? `${((kb * 1024) / 1e6).toFixed(0)} MB` : '–');
  const extra =
    ` — ${first.peakOpen} of ${first.count} open, ${first.errors} errors; ${mb(gwKb)} over ${first.processes ?? 1} process(es) against the floor's ${floor.map((f) => mb(f.hwmKb)).join(' and ')}` +
    `${isNumber(first.perStreamKb) ? `; ${first.perStreamKb.toFixed(1)} KiB a stream (floor ${floor.map((f) => f.perStreamKb?.toFixed(1) ?? '–').join(', ')})` : ''}`;
  const check = floorCheck(4, target, { kind: 'ratio', limit: TARGETS.idleMemoryOverFloor }, series, extra);
  const allOpen = first.peakOpen === first.count && first.errors === 0;
  const floorOpen = floor.length > 0 && floor.every((f) => f.peakOpen === f.count && f.errors === 0);
  // A smaller run (--idle-streams, --quick) cannot speak for 10,000.
  if (first.count < TARGETS.idleStreams || gwKb === null || floor.length === 0) checks.push({ ...check, result: 'n/a', verdict: 'n/a' });
  else if (!allOpen && !floorOpen) checks.push({ ...check, result: 'UNJUDGED (noisy: the floor did not hold every stream either)', verdict: 'UNJUDGED' });
  else if (!allOpen) checks.push({ ...check, result: 'FAIL', verdict: 'FAIL' });
  else checks.push(check);
}

function redisChecks(results, checks) {
  const redis = results.redisCommands;
  if (!redis) return;
  // Limiter and audit both travel as EVALSHA; together at most one command per request
  // means the limiter costs at most one round trip and the audit writes are batched.
  const evalsha = redis.perRequest.find((c) => c.command === 'evalsha')?.perRequest ?? 0;
  const xaddSent = redis.perRequest.find((c) => c.command === 'xadd' && c.sentAs === 'client')?.perRequest ?? 0;
  checks.push(plain(5, '≤ 1 limiter round trip per request; audit writes batched', `${redis.sentPerRequest} commands sent per request (evalsha ${evalsha}), ${xaddSent} XADD sent one by one`, redis.sentPerRequest <= 1.01 && xaddSent === 0));
}

export function checkTargets(results) {
  const checks = [];
  throughputChecks(results, checks);
  fixedRateChecks(results, checks);
  streamChecks(results, checks);
  idleChecks(results, checks);
  redisChecks(results, checks);
  mcpChecks(results, checks);
  return checks;
}

/** Issue 26's absolute targets against this run's medians: the footnote, "met" or "missed", never a verdict. */
export function absoluteTargets(results) {
  const lines = [];
  const ms = (x) => (isNumber(x) ? `${x >= 0 ? '+' : ''}${x.toFixed(3)} ms` : 'no figure');
  const met = (x, limit) => (isNumber(x) ? (x <= limit ? 'met' : 'missed') : 'n/a');
  const floorOf = (summary, field) => (isNumber(summary?.[FLOOR]?.[field]) ? ` (floor ${ms(summary[FLOOR][field])})` : '');
  for (const group of results.throughput?.summary ?? []) {
    const cpu = group.byTarget.gateway?.cpuVsBareUndici;
    if (isNumber(cpu)) lines.push(`CPU/request ≤ ${ABSOLUTE_TARGETS.cpuOverBareUndici}× bare undici (${group.tool}, ${group.connections} conns): ×${cpu.toFixed(2)}, ${met(cpu, ABSOLUTE_TARGETS.cpuOverBareUndici)}`);
  }
  const fixed = results.fixedRate?.summary;
  if (fixed?.gateway) {
    lines.push(`added p50 ≤ ${ABSOLUTE_TARGETS.fixedRateAddedP50Ms} ms at ${results.fixedRate.ratePerSec} req/s: ${ms(fixed.gateway.addedP50Ms)}${floorOf(fixed, 'addedP50Ms')}, ${met(fixed.gateway.addedP50Ms, ABSOLUTE_TARGETS.fixedRateAddedP50Ms)}`);
    lines.push(`added p99 ≤ ${ABSOLUTE_TARGETS.fixedRateAddedP99Ms} ms at ${results.fixedRate.ratePerSec} req/s: ${ms(fixed.gateway.addedP99Ms)}${floorOf(fixed, 'addedP99Ms')}, ${met(fixed.gateway.addedP99Ms, ABSOLUTE_TARGETS.fixedRateAddedP99Ms)}`);
  }
  const s3 = results.streamDelay?.summary;
  if (s3?.gateway) {
    lines.push(`first event added ≤ ${ABSOLUTE_TARGETS.firstEventAddedMs} ms: ${ms(s3.gateway.addedFirstEventP50Ms)}${floorOf(s3, 'addedFirstEventP50Ms')}, ${met(s3.gateway.addedFirstEventP50Ms, ABSOLUTE_TARGETS.firstEventAddedMs)}`);
    lines.push(`added delay per event p99 ≤ ${ABSOLUTE_TARGETS.eventAddedP99Ms} ms: ${ms(s3.gateway.addedDelayP99Ms)}${floorOf(s3, 'addedDelayP99Ms')}, ${met(s3.gateway.addedDelayP99Ms, ABSOLUTE_TARGETS.eventAddedP99Ms)}`);
  }
  const first = results.idleStreams?.attempts?.[0];
  if (isNumber(first?.gatewayTotalVmHwmKb)) {
    const bytes = first.gatewayTotalVmHwmKb * 1024;
    const floorMb = (results.idleStreams.floor ?? []).map((f) => (isNumber(f.hwmKb) ? `${((f.hwmKb * 1024) / 1e6).toFixed(0)}` : '–')).join(', ');
    lines.push(
      `${first.count.toLocaleString('en-US')} idle streams ≤ ${ABSOLUTE_TARGETS.idleStreamsTotalBytes / 1e6} MB in all processes: ${(bytes / 1e6).toFixed(0)} MB${floorMb ? ` (floor ${floorMb} MB)` : ''}, ` +
        `${first.count < TARGETS.idleStreams ? 'n/a (fewer streams)' : bytes <= ABSOLUTE_TARGETS.idleStreamsTotalBytes ? 'met' : 'missed'}`,
    );
  }
  return lines;
}

/** One line: how many verdicts of each kind, and the load the run had. */
export function verdictSummary(checks, machine) {
  const count = (v) => checks.filter((c) => c.verdict === v).length;
  const load = machine ? `; load average ${machine.loadAvgAtStart?.join(' ')} at start, ${machine.loadAvgAtEnd?.join(' ') ?? '?'} at end` : '';
  return `verdicts: ${count('PASS')} PASS, ${count('FAIL')} FAIL, ${count('UNJUDGED')} UNJUDGED (the floor moved more than the margin), ${count('n/a')} n/a${load}`;
}
