// `--node`: the gateway under each runtime, read from the rounds scenarios 1 and 2 already
// ran (every runtime's gateway measured in the same rounds, rotated with the references, by
// the same load generator on the bench's own runtime). CPU per request is the gateway
// process's own (utime + stime over the run / requests answered); p99 is the client's.
import { fmt, renderTable } from '../lib/table.mjs';

/**
 * @param {object} results the bench's results (throughput, fixedRate, machine)
 * @param {{ name: string, version: string }[]} runtimes the `--node` gateways
 * @returns {{ rows: object[] }} one row per gateway: the default one first, then each runtime
 */
export function summariseNodeRuntimes(results, runtimes) {
  const gateways = [{ name: 'gateway', version: `v${results.machine.node.replace(/^v/, '')}` }, ...runtimes];
  const rows = gateways.map(({ name, version }) => ({
    target: name,
    node: version,
    throughput: (results.throughput?.summary ?? []).map(({ tool, connections, byTarget }) => ({
      tool,
      connections,
      reqPerSec: byTarget[name]?.reqPerSec ?? null,
      cpuUsPerReq: byTarget[name]?.cpuUsPerReq ?? null,
      p99Ms: byTarget[name]?.p99Ms ?? null,
    })),
    fixedRate: results.fixedRate?.summary?.[name]
      ? { ratePerSec: results.fixedRate.ratePerSec, p99Ms: results.fixedRate.summary[name].p99Ms, addedP99Ms: results.fixedRate.summary[name].addedP99Ms }
      : null,
  }));
  return { rows };
}

export function nodeRuntimesTable(summary) {
  const first = summary.rows[0];
  const header = ['gateway', 'node'];
  for (const t of first.throughput) header.push(`s1 c=${t.connections} ${t.tool} req/s`, `CPU µs/req`, `p99 ms`);
  if (first.fixedRate) header.push(`s2 ${first.fixedRate.ratePerSec}/s p99 ms`, 'added p99');
  const rows = summary.rows.map((r) => [
    r.target,
    r.node,
    ...r.throughput.flatMap((t) => [fmt.int(t.reqPerSec), t.cpuUsPerReq === null ? null : t.cpuUsPerReq.toFixed(1), fmt.ms(t.p99Ms)]),
    ...(r.fixedRate ? [fmt.ms(r.fixedRate.p99Ms, 3), fmt.signedMs(r.fixedRate.addedP99Ms, 3)] : []),
  ]);
  return { title: 'Node runtimes — the gateway under each, same rounds (medians; CPU is the gateway process only)', ...renderTable(header, rows) };
}
