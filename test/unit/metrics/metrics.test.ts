// Pins every metric's name, type and label set (docs/design.md, "Operations": dashboards, alert
// rules and scrapers depend on them) and the default process metrics beside them.
import { describe, expect, it } from 'vitest';
import { metrics, registry } from '../../../src/metrics/metrics.js';
import { parseMetrics, sumSamples } from '../../helpers/metrics-text.js';

interface MetricShape {
  type: string;
  labels: string[];
}

const PINNED: Record<string, MetricShape> = {
  agentgw_requests_total: { type: 'counter', labels: ['agent', 'route', 'status'] },
  agentgw_request_duration_seconds: { type: 'histogram', labels: ['route'] },
  agentgw_upstream_duration_seconds: { type: 'histogram', labels: ['agent', 'route'] },
  agentgw_overhead_seconds: { type: 'histogram', labels: ['route'] },
  agentgw_stream_first_token_seconds: { type: 'histogram', labels: ['agent'] },
  agentgw_active_streams: { type: 'gauge', labels: [] },
  agentgw_stream_events_total: { type: 'counter', labels: ['agent'] },
  agentgw_tokens_total: { type: 'counter', labels: ['agent'] },
  agentgw_rate_limited_total: { type: 'counter', labels: ['plan'] },
  agentgw_auth_failures_total: { type: 'counter', labels: ['reason'] },
  agentgw_upstream_errors_total: { type: 'counter', labels: ['agent', 'kind'] },
  agentgw_agent_task_cancels_total: { type: 'counter', labels: ['agent', 'outcome'] },
  agentgw_redis_errors_total: { type: 'counter', labels: ['op'] },
  agentgw_redis_command_duration_seconds: { type: 'histogram', labels: ['op'] },
  agentgw_audit_records_total: { type: 'counter', labels: ['sink', 'result'] },
  agentgw_audit_set_aside_total: { type: 'counter', labels: ['sink', 'code'] },
  agentgw_webhook_deliveries_total: { type: 'counter', labels: ['result'] },
  agentgw_webhook_dropped_total: { type: 'counter', labels: ['reason'] },
  agentgw_webhook_outbox_depth: { type: 'gauge', labels: [] },
  agentgw_webhook_oldest_undelivered_seconds: { type: 'gauge', labels: [] },
  agentgw_key_cache_total: { type: 'counter', labels: ['result'] },
  agentgw_jwt_verifications_total: { type: 'counter', labels: ['result'] },
  agentgw_jwks_fetches_total: { type: 'counter', labels: ['outcome'] },
  agentgw_streams_cancelled_total: { type: 'counter', labels: [] },
  agentgw_admin_auth_failures_total: { type: 'counter', labels: ['reason'] },
  agentgw_connections_refused_total: { type: 'counter', labels: ['reason'] },
  agentgw_stream_request_timeouts_total: { type: 'counter', labels: [] },
  agentgw_upstream_requests_total: { type: 'counter', labels: ['agent', 'target'] },
  agentgw_upstream_target_errors_total: { type: 'counter', labels: ['agent', 'target', 'kind'] },
  agentgw_upstream_retries_total: { type: 'counter', labels: ['agent'] },
  agentgw_upstream_ejections_total: { type: 'counter', labels: ['agent', 'target'] },
  agentgw_upstream_queue_full_total: { type: 'counter', labels: ['agent'] },
  agentgw_upstream_target_up: { type: 'gauge', labels: ['agent', 'target'] },
  agentgw_upstream_outstanding: { type: 'gauge', labels: ['agent', 'target'] },
  agentgw_token_budget_exceeded_total: { type: 'counter', labels: ['plan'] },
  agentgw_concurrency_limited_total: { type: 'counter', labels: ['plan'] },
  agentgw_end_user_limited_total: { type: 'counter', labels: ['plan'] },
  agentgw_tool_calls_total: { type: 'counter', labels: ['agent', 'tool', 'verdict'] },
  agentgw_cost_usd_total: { type: 'counter', labels: ['agent'] },
  agentgw_mcp_requests_total: { type: 'counter', labels: ['server', 'method', 'outcome'] },
  agentgw_mcp_tool_calls_total: { type: 'counter', labels: ['server', 'tool', 'verdict'] },
  agentgw_mcp_sessions: { type: 'gauge', labels: ['server'] },
  agentgw_stream_slots_held: { type: 'gauge', labels: [] },
  agentgw_telemetry_dropped_total: { type: 'counter', labels: ['reason'] },
};

/** Label names a metric accepts: prom-client keeps them on the metric object. */
function labelNamesOf(name: string): string[] {
  const metric = registry.getSingleMetric(name) as unknown as { labelNames?: string[] } | undefined;
  return [...(metric?.labelNames ?? [])].sort();
}

describe('metric definitions', () => {
  it('defines exactly the pinned agentgw_ metrics, each with its type and label set', async () => {
    const defined = (await registry.getMetricsAsJSON()).filter((m) => m.name.startsWith('agentgw_'));
    expect(defined.map((m) => m.name).sort()).toEqual(Object.keys(PINNED).sort());
    for (const metric of defined) {
      const pinned = PINNED[metric.name]!;
      expect({ name: metric.name, type: String(metric.type) }).toEqual({ name: metric.name, type: pinned.type });
      expect({ name: metric.name, labels: labelNamesOf(metric.name) }).toEqual({ name: metric.name, labels: [...pinned.labels].sort() });
    }
  });

  it('names every metric of the module with the agentgw_ prefix and registers it in the one registry', () => {
    for (const metric of Object.values(metrics)) {
      const name = (metric as unknown as { name: string }).name;
      expect(name).toMatch(/^agentgw_[a-z_]+$/);
      expect(registry.getSingleMetric(name)).toBe(metric);
    }
    expect(Object.keys(metrics)).toHaveLength(Object.keys(PINNED).length);
  });

  it('rejects a label outside the pinned set, so an unbounded label cannot creep in', () => {
    expect(() => metrics.requests.inc({ agent: 'a', route: 'chat', status: '2xx', key_id: 'k1' } as never)).toThrow(/label/i);
    expect(() => metrics.tokens.inc({ account: 'acme' } as never)).toThrow(/label/i);
  });

  it('exposes the default process metrics beside the gateway metrics', async () => {
    const text = await registry.metrics();
    for (const name of [
      'process_cpu_seconds_total',
      'process_resident_memory_bytes',
      'process_start_time_seconds',
      'process_open_fds',
      'nodejs_eventloop_lag_seconds',
      'nodejs_heap_size_used_bytes',
      'nodejs_gc_duration_seconds',
      'nodejs_version_info',
    ]) {
      expect(text).toContain(`# TYPE ${name} `);
    }
    expect(registry.contentType).toMatch(/^text\/plain; version=0\.0\.4/);
  });

  it('renders in the Prometheus text format with HELP and TYPE for each gateway metric', async () => {
    // Its own label values: the test workers share one process's registry across files (vitest.config.ts).
    const before = parseMetrics(await registry.metrics());
    metrics.requests.inc({ agent: 'metrics-unit', route: 'chat', status: '2xx' });
    metrics.requestDuration.observe({ route: 'chat/stream' }, 0.02);
    const text = await registry.metrics();
    for (const name of Object.keys(PINNED)) {
      expect(text).toMatch(new RegExp(`^# HELP ${name} \\S`, 'm'));
      expect(text).toContain(`# TYPE ${name} ${PINNED[name]!.type}`);
    }
    expect(text).toMatch(/^agentgw_requests_total\{agent="metrics-unit",route="chat",status="2xx"\} \d+$/m);
    expect(text).toMatch(/^agentgw_request_duration_seconds_bucket\{le="0\.025",route="chat\/stream"\} \d+$/m);
    const after = parseMetrics(text);
    const grew = (name: string, labels: Record<string, string>) => sumSamples(after, name, labels) - sumSamples(before, name, labels);
    expect(grew('agentgw_requests_total', { agent: 'metrics-unit', route: 'chat', status: '2xx' })).toBe(1);
    expect(grew('agentgw_request_duration_seconds_bucket', { le: '0.025', route: 'chat/stream' })).toBe(1);
    expect(grew('agentgw_request_duration_seconds_bucket', { le: '0.01', route: 'chat/stream' })).toBe(0);
    expect(grew('agentgw_request_duration_seconds_count', { route: 'chat/stream' })).toBe(1);
  });
});
