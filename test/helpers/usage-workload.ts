// A known audit workload for the usage rollup tests (Redis, Redis Cluster, embedded files):
// four keys over two accounts and two agents, three hours on each of two days, every
// outcome, null and random tokens, latencies on and around the histogram's bucket edges;
// and the totals a report must show for it, computed from the records themselves.
import { randomUUID } from 'node:crypto';
import type { AuditRecord } from '../../src/audit/audit-record.js';
import { lcg } from './lcg.js';

export const WORKLOAD_DAYS = ['2026-03-01', '2026-03-02'] as const;
export const WORKLOAD_HOURS = ['10', '11', '12'] as const;

const LATENCIES = [0, 0.5, 1, 1.01, 2, 4, 8, 3.99, 16.01, 1024, 1_000_000_000];
const OUTCOMES = ['ok', 'ok', 'ok', 'invalid_request', 'rate_limited', 'upstream_error', 'client_closed', 'timeout', 'error'] as const;

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
    session_id: null,
    model: null,
    // Fractions of a cent that doubles cannot add exactly; every fourth record without a cost.
    cost_usd: i % 4 === 0 ? null : ((i * 7919) % 100_000) / 10_000_000,
    tool_calls: null,
    tools_withheld: null,
  }));
}

export interface WorkloadTotals {
  requests: number;
  tokens: number;
  /** cost_usd in whole micro-dollars, rounded half up per record (decision 0066). */
  costMicro: number;
  errors: Record<string, number>;
}

/** Per label of `by` (and per day when asked): what the records add up to. */
export function workloadTotals(records: readonly AuditRecord[], by: 'key' | 'account' | 'agent', keep: (r: AuditRecord) => boolean = () => true): Map<string, WorkloadTotals> {
  const out = new Map<string, WorkloadTotals>();
  for (const r of records) {
    if (!keep(r)) continue;
    const label = by === 'key' ? r.key_id : by === 'account' ? r.account : r.agent;
    let t = out.get(label);
    if (t === undefined) out.set(label, (t = { requests: 0, tokens: 0, costMicro: 0, errors: {} }));
    t.requests += 1;
    if (typeof r.tokens_used === 'number' && r.tokens_used > 0) t.tokens += Math.floor(r.tokens_used);
    if (r.cost_usd !== null) t.costMicro += Math.floor(r.cost_usd * 1_000_000 + 0.5);
    if (r.outcome !== 'ok') t.errors[r.outcome] = (t.errors[r.outcome] ?? 0) + 1;
  }
  return out;
}

/** A report's rows added up per group (over their periods). */
export function totalsOfRows(rows: readonly { group: string; requests: number; tokens: number; cost_usd: number; errors: Record<string, number> }[]): Map<string, WorkloadTotals> {
  const out = new Map<string, WorkloadTotals>();
  for (const row of rows) {
    const t = out.get(row.group) ?? { requests: 0, tokens: 0, costMicro: 0, errors: {} };
    t.requests += row.requests;
    t.tokens += row.tokens;
    t.costMicro += Math.round(row.cost_usd * 1_000_000);
    for (const [outcome, n] of Object.entries(row.errors)) t.errors[outcome] = (t.errors[outcome] ?? 0) + n;
    out.set(row.group, t);
  }
  return out;
}
