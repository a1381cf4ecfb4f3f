// Scenario 7 (issue 46): MCP `tools/call` at a fixed rate, the latency the gateway adds over
// the MCP server direct and its CPU per call, beside the floor (bare node:http + undici,
// bench/reference/bare-undici-proxy.mjs, forwarding the same POST to the same server). Its
// own processes, started for it and stopped after (docs/decisions/0106): a stub MCP server
// (bench/reference/stub-mcp-server.mjs), a floor in front of it, and the bench gateway with
// the `mcp` variation (bench/lib/build-specs.mjs: /mcp/bench-tools, a tool_calls quota on
// bench-tools__echo), so a call takes the full path: key, scope, plan windows, quota, audit.
// Each target gets one session (initialize once); the calls then carry its Mcp-Session-Id.
// Rounds rotate the order as scenario 2 does; the targets keep scenario 2's role names
// (stub-direct: the MCP server direct; bare-undici: the floor; gateway) so the verdicts
// (bench/lib/target-checks.mjs) pair them round by round the same way.
import { mkdirSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { applyConfigVariations } from '../lib/build-specs.mjs';
import { runFixedRate } from '../lib/fixed-rate-client.mjs';
import { createBenchKey, startGatewayProcess, writeGatewayConfig } from '../lib/gateway.mjs';
import { checkToolCall, GATEWAY_MCP_PATH, MCP_SERVER, openMcpSession, TOOL_CALL_BODY } from '../lib/mcp-session.mjs';
import { cpuMsOf } from '../lib/proc-stats.mjs';
import { startNodeProgram } from '../lib/processes.mjs';
import { median, percentiles, ratio, round } from '../lib/stats.mjs';
import { fmt, renderTable } from '../lib/table.mjs';
import { MCP_PATH } from '../reference/stub-mcp-server.mjs';

/** What the table calls each role. */
const LABELS = { 'stub-direct': 'MCP server direct', 'bare-undici': 'floor (bare undici)', gateway: `gateway ${GATEWAY_MCP_PATH}` };

/** Starts the stub MCP server, the floor and the gateway; each target with its session open and one call checked. */
async function startTargets({ repoRoot, tmpDir, redis, stubUrl, fdLimit, heartbeat }) {
  const dir = join(tmpDir, 'mcp');
  mkdirSync(dir, { recursive: true });
  const ref = (name) => join(repoRoot, 'bench', 'reference', name);
  const handles = [];
  try {
    const server = await startNodeProgram({ name: 'stub-mcp', script: ref('stub-mcp-server.mjs'), args: ['--port', '0'], tmpDir: dir, fdLimit });
    handles.push(server);
    const floor = await startNodeProgram({ name: 'bare-undici-mcp', script: ref('bare-undici-proxy.mjs'), args: ['--upstream', server.url, '--port', '0'], tmpDir: dir, fdLimit });
    handles.push(floor);
    const configPath = writeGatewayConfig({ tmpDir: dir, redisUrl: redis.url, prefix: `agentgw-bench-mcp-${process.pid}:`, stubUrl, heartbeat });
    applyConfigVariations(configPath, ['mcp'], { mcpUrl: `${server.url}${MCP_PATH}` });
    const key = await createBenchKey({ repoRoot, configPath, mcp: { [MCP_SERVER]: ['*'] } });
    const gateway = await startGatewayProcess({ repoRoot, configPath, redisUrl: redis.url, tmpDir: dir, fdLimit, name: 'gateway-mcp' });
    handles.push(gateway);
    const target = async (name, url, path, pids, { credentials = {}, adminUrl } = {}) => {
      const headers = await openMcpSession(url, path, credentials);
      await checkToolCall(url, path, headers);
      return { name, url, chatPath: path, chatBody: TOOL_CALL_BODY, headers, pids, adminUrl };
    };
    const targets = [
      await target('stub-direct', server.url, MCP_PATH, () => []),
      await target('bare-undici', floor.url, MCP_PATH, () => [floor.pid]),
      await target('gateway', gateway.url, GATEWAY_MCP_PATH, () => [gateway.pid], { credentials: { authorization: `Bearer ${key.rawKey}` }, adminUrl: gateway.adminUrl }),
    ];
    return { targets, stop: () => Promise.all(handles.map((h) => h.stop())) };
  } catch (error) {
    await Promise.all(handles.map((h) => h.stop()));
    throw error;
  }
}

/** The calls the gateway forwarded to the server so far (agentgw_mcp_tool_calls_total, verdict forwarded). */
async function forwardedCalls(adminUrl) {
  const text = await (await fetch(`${adminUrl}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n')) if (line.startsWith('agentgw_mcp_tool_calls_total{') && line.includes('verdict="forwarded"')) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  return sum;
}

export async function runMcpCallsScenario({ repoRoot, tmpDir, redis, stubUrl, fdLimit, options, log }) {
  const { targets, stop } = await startTargets({ repoRoot, tmpDir, redis, stubUrl, fdLimit, heartbeat: options.heartbeat });
  const gatewayTarget = targets.find((t) => t.name === 'gateway');
  try {
    const forwardedBefore = await forwardedCalls(gatewayTarget.adminUrl);
    const rows = [];
    for (let roundNo = 1; roundNo <= options.runs; roundNo += 1) {
      const shift = (roundNo - 1) % targets.length;
      for (const target of [...targets.slice(shift), ...targets.slice(0, shift)]) {
        const loadAvg = os.loadavg()[0];
        let cpuBefore = null;
        const r = await runFixedRate(target, {
          ratePerSec: options.ratePerSec,
          durationS: options.durationS,
          warmupS: Math.min(options.warmupS, 2) || 0.5,
          // CPU from the first measured call: the warm-up's calls are not counted.
          onMeasureStart: () => (cpuBefore = target.pids().length ? cpuMsOf(target.pids()) : null),
        });
        const cpu = cpuBefore === null ? null : cpuMsOf(target.pids()) - cpuBefore;
        const p = percentiles(r.latenciesMs, [50, 99, 99.9]);
        const row = {
          round: roundNo,
          target: target.name,
          ok: r.ok,
          errors: r.errors,
          errorKinds: r.errorKinds,
          non2xx: r.non2xx,
          achievedRatePerSec: round(r.achievedRatePerSec),
          p50Ms: p.p50,
          p99Ms: p.p99,
          p999Ms: p.p99_9,
          cpuUsPerCall: cpu === null || r.ok === 0 ? null : (cpu * 1000) / r.ok,
          loadAvg1m: round(loadAvg, 2),
        };
        rows.push(row);
        log(
          `  s7 round ${roundNo} ${target.name.padEnd(12)} p50 ${p.p50?.toFixed(3)} p99 ${p.p99?.toFixed(3)} ms  rate ${r.achievedRatePerSec.toFixed(0)}/s` +
            `${row.cpuUsPerCall === null ? '' : `  cpu ${row.cpuUsPerCall.toFixed(1)} µs/call`}  errors ${r.errors} non2xx ${r.non2xx}  (load ${loadAvg.toFixed(2)})`,
        );
      }
    }
    // The gateway's own count of calls it forwarded: evidence the measured calls took the MCP path (not a refusal).
    const forwarded = (await forwardedCalls(gatewayTarget.adminUrl)) - forwardedBefore;
    return { ratePerSec: options.ratePerSec, rows, gatewayToolCalls: forwarded, summary: summariseMcpCalls(rows, targets) };
  } finally {
    await stop();
  }
}

function summariseMcpCalls(rows, targets) {
  const out = {};
  const inRound = (r, name) => rows.find((x) => x.round === r.round && x.target === name);
  for (const t of targets) {
    const mine = rows.filter((r) => r.target === t.name);
    const added = (field) => median(mine.map((r) => (inRound(r, 'stub-direct') ? r[field] - inRound(r, 'stub-direct')[field] : null)));
    out[t.name] = {
      runs: mine.length,
      p50Ms: round(median(mine.map((r) => r.p50Ms)), 3),
      p99Ms: round(median(mine.map((r) => r.p99Ms)), 3),
      addedP50Ms: round(added('p50Ms'), 3),
      addedP99Ms: round(added('p99Ms'), 3),
      cpuUsPerCall: round(median(mine.map((r) => r.cpuUsPerCall))),
      cpuVsFloor: round(median(mine.map((r) => ratio(r.cpuUsPerCall, inRound(r, 'bare-undici')?.cpuUsPerCall))), 3),
      achievedRatePerSec: round(median(mine.map((r) => r.achievedRatePerSec))),
      errors: mine.reduce((n, r) => n + r.errors + r.non2xx, 0),
    };
  }
  return out;
}

export function mcpCallsTable(result) {
  const rows = Object.entries(result.summary).map(([name, s]) => [
    LABELS[name] ?? name,
    fmt.ms(s.p50Ms, 3),
    fmt.ms(s.p99Ms, 3),
    name === 'stub-direct' ? '' : fmt.signedMs(s.addedP50Ms, 3),
    name === 'stub-direct' ? '' : fmt.signedMs(s.addedP99Ms, 3),
    s.cpuUsPerCall === null ? null : s.cpuUsPerCall.toFixed(1),
    name === 'gateway' ? fmt.ratio(s.cpuVsFloor) : '',
    fmt.int(s.achievedRatePerSec),
    String(s.errors),
  ]);
  const table = renderTable(['target', 'p50', 'p99', 'added p50', 'added p99', 'CPU µs/call', '×floor CPU', 'sent/s', 'errors'], rows);
  const note = `\nthe gateway forwarded ${result.gatewayToolCalls} tools/call (agentgw_mcp_tool_calls_total) during the scenario`;
  return {
    text: table.text + note,
    markdown: `${table.markdown}\n\n${note.trim()}`,
    title: `Scenario 7 — MCP tools/call at ${result.ratePerSec} calls/s: latency in ms (median of ${result.rows.length / Object.keys(result.summary).length} rounds; "added" = minus the MCP server direct in the same round)`,
  };
}
