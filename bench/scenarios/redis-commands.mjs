// Scenario 5: Redis commands per request on the gateway's hot path, from INFO commandstats
// read before and after each of the gateway's scenario-1 runs, divided by the requests it
// answered in that run; the median over runs per command.
// Redis also counts the commands a Lua script runs (HGETALL, HINCRBY, … inside the
// limiter's operations, sent by EVALSHA). Those cost Redis CPU but no network trip, so they are listed
// apart: a command is "inside a script" when the gateway's built Lua scripts call it (a
// command that is also sent directly, like HGETALL for a key lookup on a cache refresh, is
// counted with the script's).
// The limiter and the audit sink both send EVALSHA: the limiter one per subject per
// event-loop turn (coalesced), the audit sink one per batch (its XADDs run inside the script).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { commandStatsDelta } from '../lib/bench-redis.mjs';
import { median, round } from '../lib/stats.mjs';
import { renderTable } from '../lib/table.mjs';

const SCRIPT_SOURCES = ['dist/ratelimit/protocol/lua-windows.js', 'dist/ratelimit/protocol/operations.js', 'dist/audit/audit-stream-operations.js', 'dist/keys/redis-key-store.js'];

/** Lower-case names of every command the gateway's Lua scripts run (`redis.call('x'`). */
export function scriptCommandNames(repoRoot) {
  const names = new Set();
  for (const file of SCRIPT_SOURCES) {
    let text = '';
    try {
      text = readFileSync(join(repoRoot, file), 'utf8');
    } catch {
      continue;
    }
    for (const m of text.matchAll(/redis\.(?:p?call)\(\s*['"]([A-Za-z]+)['"]/g)) names.add(m[1].toLowerCase());
  }
  return names;
}

export function summariseRedisCommands(throughputRows, scriptCommands, target = 'gateway') {
  const runs = throughputRows
    .filter((r) => r.target === target && r.redisBefore && r.redisAfter && r.requests > 0)
    .map((r) => ({ tool: r.tool, connections: r.connections, requests: r.requests, delta: commandStatsDelta(r.redisBefore, r.redisAfter) }));
  if (runs.length === 0) return null;
  const names = [...new Set(runs.flatMap((r) => Object.keys(r.delta)))];
  const perRequest = names
    .map((name) => ({
      command: name,
      perRequest: round(median(runs.map((r) => (r.delta[name] ?? 0) / r.requests)), 4),
      sentAs: scriptCommands.has(name) ? 'script' : 'client',
    }))
    .sort((a, b) => (a.sentAs === b.sentAs ? b.perRequest - a.perRequest : a.sentAs === 'client' ? -1 : 1));
  const totalOf = (filter) => round(median(runs.map((r) => Object.entries(r.delta).filter(([n]) => filter(n)).reduce((s, [, v]) => s + v, 0) / r.requests)), 3);
  return {
    runs: runs.length,
    requestsPerRun: runs.map((r) => r.requests),
    perRequest,
    sentPerRequest: totalOf((n) => !scriptCommands.has(n)),
    scriptCommandsPerRequest: totalOf((n) => scriptCommands.has(n)),
  };
}

export function redisCommandsTable(summary, target = 'gateway') {
  const rows = summary.perRequest.map((c) => [c.command, c.perRequest.toFixed(4), c.sentAs === 'client' ? 'sent by the gateway' : 'run inside a Lua script']);
  rows.push(['all sent by the gateway', summary.sentPerRequest.toFixed(3), '']);
  rows.push(['all run inside scripts', summary.scriptCommandsPerRequest.toFixed(3), '']);
  return {
    title: `Scenario 5 — Redis commands per request, ${target} (INFO commandstats deltas over ${summary.runs} ${target} runs of scenario 1, median per command)`,
    ...renderTable(['command', 'per request', 'how'], rows),
  };
}
