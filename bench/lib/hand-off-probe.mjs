// Preloaded instead of stage-timestamps.mjs (which it loads too) by `bench/run.mjs stream-stages
// --probe`: what happens between the hand-off to undici (`undici:request:create`) and the
// request's first byte on the wire (`undici:client:sendHeaders`), in the process under test.
// Counted per request: whether undici wrote it in the same call (before a microtask could
// run), the setImmediate callbacks that ran in between (every global setImmediate is wrapped
// and timed, by the callback's name), and whether any of them was not undici's own. Counted
// for the window: new upstream connections, scavenges and their pauses, the young
// generation's size, CPU time and event-loop utilisation. On SIGUSR2 it writes
// /tmp/agentgw-handoff-<pid>.json and starts over (docs/performance/0031-stream-start-latency.md).
//
// The wrapper adds a closure and two clock reads to every setImmediate of the process: its
// figures compare targets measured with it, not with the plain stage tool.
import dc from 'node:diagnostics_channel';
import { writeFileSync } from 'node:fs';
import { PerformanceObserver } from 'node:perf_hooks';
import v8 from 'node:v8';
import { idOfUndiciRequest } from './stage-timestamps.mjs';

// undici's own deferrals: the idle-socket check before a reused socket's next request, and
// the resume a full loop turn after a response completes (pipelining 1).
const UNDICI_IMMEDIATES = ['socket[kIdleSocketValidationTimeout]', '(sync) => resume'];

let immediateMs = 0;
let foreignImmediates = 0;
const immediatesByName = new Map();
const originalSetImmediate = globalThis.setImmediate;
globalThis.setImmediate = function setImmediate(callback, ...args) {
  const name = callback.name || callback.toString().slice(0, 60).replace(/\s+/g, ' ');
  const foreign = !UNDICI_IMMEDIATES.some((part) => name.includes(part));
  return originalSetImmediate(function timedImmediate() {
    const start = performance.now();
    try {
      return callback.apply(this, args);
    } finally {
      const ms = performance.now() - start;
      immediateMs += ms;
      if (foreign) foreignImmediates += 1;
      const entry = immediatesByName.get(name) ?? { count: 0, ms: 0 };
      entry.count += 1;
      entry.ms += ms;
      immediatesByName.set(name, entry);
    }
  });
};

let rows = new Map();
let connects = 0;
let gc = { count: 0, ms: 0, maxMs: 0 };
let cpuStart = process.cpuUsage();
let eluStart = performance.eventLoopUtilization();

new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    gc.count += 1;
    gc.ms += entry.duration;
    gc.maxMs = Math.max(gc.maxMs, entry.duration);
  }
}).observe({ entryTypes: ['gc'] });

dc.subscribe('undici:client:beforeConnect', () => {
  connects += 1;
});
dc.subscribe('undici:request:create', ({ request }) => {
  const id = idOfUndiciRequest(request);
  if (id === undefined) return;
  const row = { created: performance.now(), immediateMs0: immediateMs, foreign0: foreignImmediates, sameCall: true };
  rows.set(id, row);
  // Runs once the dispatching callback returns: a write before it was made in the same call.
  queueMicrotask(() => {
    row.sameCall = false;
  });
});
dc.subscribe('undici:client:sendHeaders', ({ request }) => {
  const row = rows.get(idOfUndiciRequest(request));
  if (row === undefined || row.sent !== undefined) return;
  row.sent = performance.now();
  row.immediateMsBetween = immediateMs - row.immediateMs0;
  row.foreignBetween = foreignImmediates - row.foreign0;
  row.wroteInSameCall = row.sameCall;
});

const quantile = (values, q) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? null : sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))];
};

process.on('SIGUSR2', () => {
  const sent = [...rows.values()].filter((r) => r.sent !== undefined);
  const cpu = process.cpuUsage(cpuStart);
  const newSpace = v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space');
  const summary = {
    requests: sent.length,
    writtenInSameCall: sent.filter((r) => r.wroteInSameCall).length,
    withOtherImmediateBefore: sent.filter((r) => r.foreignBetween > 0).length,
    newConnections: connects,
    handOffToWriteMs: { p50: quantile(sent.map((r) => r.sent - r.created), 0.5), p90: quantile(sent.map((r) => r.sent - r.created), 0.9) },
    immediatesBeforeWriteMs: { p50: quantile(sent.map((r) => r.immediateMsBetween), 0.5), p90: quantile(sent.map((r) => r.immediateMsBetween), 0.9) },
    immediates: Object.fromEntries([...immediatesByName].map(([name, e]) => [name, { count: e.count, ms: Math.round(e.ms * 100) / 100 }])),
    cpuMs: (cpu.user + cpu.system) / 1000,
    eventLoopUtilization: performance.eventLoopUtilization(eluStart).utilization,
    scavengesAndOtherGc: gc,
    newSpaceKiB: Math.round((newSpace?.space_size ?? 0) / 1024),
  };
  writeFileSync(`/tmp/agentgw-handoff-${process.pid}.json`, JSON.stringify(summary));
  rows = new Map();
  connects = 0;
  immediatesByName.clear();
  gc = { count: 0, ms: 0, maxMs: 0 };
  cpuStart = process.cpuUsage();
  eluStart = performance.eventLoopUtilization();
});
