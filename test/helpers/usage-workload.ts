// A known audit workload for the usage rollup tests (Redis, Redis Cluster, embedded files):
// four keys over two accounts and two agents, three hours on each of two days, every
// outcome, null and random tokens, latencies on and around the histogram's bucket edges,
// agent runs whose ids need escaping in a group name, tool calls;
// and the totals a report must show for it, computed from the records themselves.
import { randomUUID } from 'node:crypto';
import type { AuditRecord } from '../../src/audit/audit-record.js';
import { lcg } from './lcg.js';

export const WORKLOAD_DAYS = ['2026-03-01', '2026-03-02'] as const;
export const WORKLOAD_HOURS = ['10', '11', '12'] as const;

const LATENCIES = [0, 0.5, 1, 1.01, 2, 4, 8, 3.99, 16.01, 1024, 1_000_000_000];
const OUTCOMES = ['ok', 'ok', 'ok', 'invalid_request', 'rate_limited', 'upstream_error', 'client_closed', 'timeout', 'error'] as const;
/** Agent runs, with what a session group must escape (space, tab, "%", a newline) and what it need not. */
const SESSIONS = ['run-1', 'run 2', 'run%3', 'rün-ü', 'tab\tx', 'line\nbreak', '%41'] as const;
/** Tool calls, with names the fast line reader must hand to JSON.parse (a quote, a bracket). */
const TOOL_CALLS = [null, ['web_search'], ['a', 'b'], null, ['x"]y', 'z'], ['p]q']] as const;

export function workloadRecords(count: number, seed = 7): AuditRecord[] {
  const random = lcg(seed);
  return Array.from({ length: count }, (_, i) => ({
    id: randomUUID(),
    request_id: `client-${i}`,
    ts: `${WORKLOAD_DAYS[i % 2]}T${WORKLOAD_HOURS[i % 3]}:15:00.000Z`,
    key_id: `key_${String(i % 4).padStart(16, '0')}`,
    account: i % 4 < 2 ? 'acme:eu' : 'globex',
    plan: 'pro',
    agent: i % 3 === 0 ? 'sales' : 'support',
    route: 'chat',
    status: 200,
    outcome: OUTCOMES[i % OUTCOMES.length]!,
    tokens_used: i % 5 === 0 ? null : Math.floor(random() * 1000),
    latency_ms: i < LATENCIES.length ? LATENCIES[i]! : Math.round(random() * 500_000) / 100,
    upstream_latency_ms: null,
    bytes_in: 10,
    bytes_out: 20,
    client_ip: '127.0.0.1',
    user_id: null,
    // Every fifth record names no run; the others one of seven, across keys and agents.
    session_id: i % 5 === 1 ? null : SESSIONS[i % SESSIONS.length]!,
    model: null,
    // Fractions of a cent that doubles cannot add exactly; every fourth record without a cost.
    cost_usd: i % 4 === 0 ? null : ((i * 7919) % 100_000) / 10_000_000,
    tool_calls: TOOL_CALLS[i % TOOL_CALLS.length] ?? null,
    tools_withheld: null,
  }));
}

export interface WorkloadTotals {
  requests: number;
  tokens: number;
  toolCalls: number;
  /** cost_usd in whole micro-dollars, rounded half up per record (decision 0066). */
  costMicro: number;
  errors: Record<string, number>;
}

/** Per label of `by` (and per day when asked): what the records add up to. */
export function workloadTotals(records: readonly AuditRecord[], by: 'key' | 'account' | 'agent' | 'session', keep: (r: AuditRecord) => boolean = () => true): Map<string, WorkloadTotals> {
  const out = new Map<string, WorkloadTotals>();
  for (const r of records) {
    if (!keep(r)) continue;
    const label = by === 'key' ? r.key_id : by === 'account' ? r.account : by === 'agent' ? r.agent : r.session_id;
    // A record that names no run is in no session's row.
    if (label === null || label === '') continue;
    let t = out.get(label);
    if (t === undefined) out.set(label, (t = { requests: 0, tokens: 0, toolCalls: 0, costMicro: 0, errors: {} }));
    t.requests += 1;
    t.toolCalls += r.tool_calls?.length ?? 0;
    if (typeof r.tokens_used === 'number' && r.tokens_used > 0) t.tokens += Math.floor(r.tokens_used);
    if (r.cost_usd !== null) t.costMicro += Math.floor(r.cost_usd * 1_000_000 + 0.5);
    if (r.outcome !== 'ok') t.errors[r.outcome] = (t.errors[r.outcome] ?? 0) + 1;
  }
  return out;
}

/** A report's rows added up per group (over their periods). */
export function totalsOfRows(rows: readonly { group: string; requests: number; tokens: number; tool_calls: number; cost_usd: number; errors: Record<string, number> }[]): Map<string, WorkloadTotals> {
  const out = new Map<string, WorkloadTotals>();
  for (const row of rows) {
    const t = out.get(row.group) ?? { requests: 0, tokens: 0, toolCalls: 0, costMicro: 0, errors: {} };
    t.requests += row.requests;
    t.toolCalls += row.tool_calls;
    t.tokens += row.tokens;
    t.costMicro += Math.round(row.cost_usd * 1_000_000);
    for (const [outcome, n] of Object.entries(row.errors)) t.errors[outcome] = (t.errors[outcome] ?? 0) + n;
    out.set(row.group, t);
  }
  return out;
}
