// Optional (--profile): where the gateway's CPU goes under scenario-1 load. A second gateway
// process, same config, runs under `node --cpu-prof`; autocannon drives it at 32 connections;
// on SIGTERM it drains and exits, and V8 writes the profile, which is then summarised.
import { mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { summariseCpuProfile } from '../lib/cpu-profile-summary.mjs';
import { runAutocannon } from '../lib/load-tools.mjs';
import { renderTable } from '../lib/table.mjs';

export async function runCpuProfile({ env, options, tmpDir, log }) {
  const dir = join(tmpDir, 'cpu-prof');
  mkdirSync(dir, { recursive: true });
  const gateway = await env.startGateway({ name: 'gateway-cpu-prof', cpuProfDir: dir });
  const target = { ...env.gatewayTarget, url: gateway.url };
  let load;
  try {
    await runAutocannon(target, { connections: 32, durationS: 1 });
    load = await runAutocannon(target, { connections: 32, durationS: Math.max(5, options.durationS) });
  } finally {
    await gateway.stop();
  }
  const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
  if (!file) throw new Error(`the profiled gateway wrote no .cpuprofile into ${dir}`);
  const summary = summariseCpuProfile(join(dir, file), { top: 15 });
  log(`  profile: ${Math.round(load.reqPerSec)} req/s under --cpu-prof, ${summary.busyMs} ms busy of ${summary.totalMs} ms; ${join(dir, file)}`);
  return { reqPerSec: Math.round(load.reqPerSec), requests: load.requests, profilePath: join(dir, file), ...summary };
}

export function cpuProfileTables(result) {
  const pct = (rows) => rows.map((r) => [r.name, String(r.ms), `${r.pctOfBusy.toFixed(1)}%`]);
  return [
    {
      title: `CPU profile — busy time charged to the gateway file or dependency that caused it (node internals and native code count for their caller; ${result.requests} requests)`,
      ...renderTable(['caused by', 'ms', '%'], pct(result.byOwner)),
    },
    { title: `CPU profile — self time by module (gateway under scenario-1 load, ${result.requests} requests; % of busy time)`, ...renderTable(['module', 'ms', '%'], pct(result.selfByModule)) },
    { title: 'CPU profile — top functions by self time', ...renderTable(['function', 'ms', '%'], pct(result.topSelf)) },
    { title: "CPU profile — the gateway's own functions by inclusive time (with everything they call)", ...renderTable(['function', 'ms', '%'], pct(result.gatewayInclusive)) },
  ];
}
