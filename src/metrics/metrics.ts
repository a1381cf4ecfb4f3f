// Every Prometheus metric of the gateway, defined once (docs/design.md, "Operations"). Labels
// are bounded: agent ids, routes, plans, reasons and kinds come from config or fixed enums,
// never from key ids, accounts or users.
// Over 300 lines on purpose: the one registry (docs/design.md asks for one metrics module), so
// every name and label set is read, and kept unique, in one place.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { HotCounter, HotHistogram, type BoundCounter, type BoundHistogram } from './hot-path-metrics.js';

export const registry = new Registry();
collectDefaultMetrics({ register: registry });

// Gateway overhead is sub-millisecond; streams last seconds to minutes. One bucket set each.
const OVERHEAD_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5];
const REQUEST_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];

export const metrics = {
  // The series every request or stream event updates are hot-path metrics (same exposition).
  requests: new HotCounter({
    name: 'agentgw_requests_total',
    help: 'Requests answered, by agent, route and status class.',
    labelNames: ['agent', 'route', 'status'] as const,
    registers: [registry],
  }),
  requestDuration: new HotHistogram({
    name: 'agentgw_request_duration_seconds',
    help: 'Time from request arrival to the end of the answer.',
    labelNames: ['route'] as const,
    buckets: REQUEST_BUCKETS,
    registers: [registry],
  }),
  upstreamDuration: new HotHistogram({
    name: 'agentgw_upstream_duration_seconds',
    help: 'Time spent waiting on the upstream runner (to its last byte).',
    labelNames: ['agent', 'route'] as const,
    buckets: REQUEST_BUCKETS,
    registers: [registry],
  }),
  overhead: new HotHistogram({
    name: 'agentgw_overhead_seconds',
    help: 'Gateway time: request duration minus upstream duration.',
    labelNames: ['route'] as const,
    buckets: OVERHEAD_BUCKETS,
    registers: [registry],
  }),
  streamFirstToken: new Histogram({
    name: 'agentgw_stream_first_token_seconds',
    help: 'Time from request arrival to the first upstream body byte of a stream.',
    labelNames: ['agent'] as const,
    buckets: REQUEST_BUCKETS,
    registers: [registry],
  }),
  activeStreams: new Gauge({ name: 'agentgw_active_streams', help: 'Streams open right now.', registers: [registry] }),
  streamEvents: new HotCounter({
    name: 'agentgw_stream_events_total',
    help: 'SSE events relayed to clients, by agent.',
    labelNames: ['agent'] as const,
    registers: [registry],
  }),
  tokens: new HotCounter({ name: 'agentgw_tokens_total', help: 'Tokens reported by upstreams.', labelNames: ['agent'] as const, registers: [registry] }),
  rateLimited: new Counter({ name: 'agentgw_rate_limited_total', help: 'Requests answered 429 by the limiter, by plan.', labelNames: ['plan'] as const, registers: [registry] }),
  tokenBudgetExceeded: new Counter({
    name: 'agentgw_token_budget_exceeded_total',
    help: 'Requests answered 429 token_budget_exceeded (a token budget spent, no request window full), by plan.',
    labelNames: ['plan'] as const,
    registers: [registry],
  }),
  endUserLimited: new Counter({
    name: 'agentgw_end_user_limited_total',
    help: 'Requests answered 429 by an end user\'s window or budget while the subject\'s own windows had room, by plan.',
    labelNames: ['plan'] as const,
    registers: [registry],
  }),
  toolCalls: new Counter({
    name: 'agentgw_tool_calls_total',
    help: 'Tool calls the runners\' answers named, by agent, tool (the allow-list\'s names, else "other") and verdict (allowed, or outside_scope: a tool the runner was not given).',
    labelNames: ['agent', 'tool', 'verdict'] as const,
    registers: [registry],
  }),
  // The MCP front door (docs/mcp.md "Metrics"): servers from config; methods from MCP's fixed
  // set, else "other"; tools only those the server listed (bounded), else "other".
  mcpRequests: new Counter({
    name: 'agentgw_mcp_requests_total',
    help: 'Requests to the MCP front door, by server, JSON-RPC method (MCP\'s own, else "other") and outcome.',
    labelNames: ['server', 'method', 'outcome'] as const,
    registers: [registry],
  }),
  mcpToolCalls: new Counter({
    name: 'agentgw_mcp_tool_calls_total',
    help: 'tools/call requests by server, tool (a name the server listed, else "other") and verdict (forwarded, outside_scope, rate_limited, tool_budget_exceeded).',
    labelNames: ['server', 'tool', 'verdict'] as const,
    registers: [registry],
  }),
  mcpSessions: new Gauge({ name: 'agentgw_mcp_sessions', help: 'MCP sessions this instance opened and has not seen end (DELETE) or expire.', labelNames: ['server'] as const, registers: [registry] }),
  costUsd: new Counter({
    name: 'agentgw_cost_usd_total',
    help: 'What the answers cost in US dollars (tokens_used priced by model, the pricing config), by agent.',
    labelNames: ['agent'] as const,
    registers: [registry],
  }),
  concurrencyLimited: new Counter({
    name: 'agentgw_concurrency_limited_total',
    help: 'Stream requests answered 429 concurrency_limit_exceeded (every slot of the concurrency cap held, no request window full), by plan.',
    labelNames: ['plan'] as const,
    registers: [registry],
  }),
  streamSlotsHeld: new Gauge({
    name: 'agentgw_stream_slots_held',
    help: 'Concurrency-cap stream slots this instance holds right now (in Redis, or in memory in embedded mode or during a Redis outage).',
    registers: [registry],
  }),
  authFailures: new Counter({ name: 'agentgw_auth_failures_total', help: 'Rejected authentications, by reason.', labelNames: ['reason'] as const, registers: [registry] }),
  upstreamErrors: new Counter({
    name: 'agentgw_upstream_errors_total',
    help: 'Upstream failures, by agent and kind (connect, headers_timeout, idle_timeout, reset, max_duration, bad_response).',
    labelNames: ['agent', 'kind'] as const,
    registers: [registry],
  }),
  a2aTaskCancels: new Counter({
    name: 'agentgw_agent_task_cancels_total',
    help: 'A2A tasks the gateway asked the agent to cancel (the client left, a deadline, shutdown), by agent and outcome (answered, failed).',
    labelNames: ['agent', 'outcome'] as const,
    registers: [registry],
  }),
  redisErrors: new Counter({ name: 'agentgw_redis_errors_total', help: 'Redis command failures, by operation.', labelNames: ['op'] as const, registers: [registry] }),
  redisCommandDuration: new Histogram({
    name: 'agentgw_redis_command_duration_seconds',
    help: 'Redis round-trip time, by operation.',
    labelNames: ['op'] as const,
    buckets: OVERHEAD_BUCKETS,
    registers: [registry],
  }),
  auditRecords: new Counter({
    name: 'agentgw_audit_records_total',
    help: 'Audit records handled, by sink and result (written, spooled, replayed, failed).',
    labelNames: ['sink', 'result'] as const,
    registers: [registry],
  }),
  auditSetAside: new Counter({
    name: 'agentgw_audit_set_aside_total',
    help: 'Audit records a sink\'s database refused for their data (PostgreSQL SQLSTATE class 22 or 23, 54000; outside_partitions: no day partition may take the record), set aside in the rejected-records file instead of holding the sink, by sink and code.',
    labelNames: ['sink', 'code'] as const,
    registers: [registry],
  }),
  telemetryDropped: new Counter({
    name: 'agentgw_telemetry_dropped_total',
    help: 'Finished trace spans never delivered to the collector, by reason (queue_full: the export queue was full; export_failed: the collector refused or did not answer).',
    labelNames: ['reason'] as const,
    registers: [registry],
  }),
  // Per target of an agent (docs/upstreams.md). `target` is the configured URL's origin, so
  // the label set is bounded by the config.
  upstreamRequests: new HotCounter({
    name: 'agentgw_upstream_requests_total',
    help: 'Requests sent to an upstream target (a retry counts on each target it tried), by agent and target.',
    labelNames: ['agent', 'target'] as const,
    registers: [registry],
  }),
  upstreamTargetErrors: new Counter({
    name: 'agentgw_upstream_target_errors_total',
    help: 'Upstream target failures, by agent, target and kind (connect, reset, status_5xx, headers_timeout, idle_timeout, bad_response, health_check).',
    labelNames: ['agent', 'target', 'kind'] as const,
    registers: [registry],
  }),
  upstreamRetries: new Counter({
    name: 'agentgw_upstream_retries_total',
    help: 'Requests sent again to another target because the first was never sent, by agent.',
    labelNames: ['agent'] as const,
    registers: [registry],
  }),
  upstreamEjections: new Counter({
    name: 'agentgw_upstream_ejections_total',
    help: 'Times a target was ejected by outlier detection, by agent and target.',
    labelNames: ['agent', 'target'] as const,
    registers: [registry],
  }),
  upstreamQueueFull: new Counter({
    name: 'agentgw_upstream_queue_full_total',
    help: 'Requests refused (503) because the agent\'s queue for connections was full, by agent.',
    labelNames: ['agent'] as const,
    registers: [registry],
  }),
  // Read from the targets' own counters when scraped (setUpstreamStateSource): nothing on the request path.
  upstreamTargetUp: new Gauge({
    name: 'agentgw_upstream_target_up',
    help: '1 while a target receives traffic, 0 while it is ejected or failing its health check.',
    labelNames: ['agent', 'target'] as const,
    registers: [registry],
    collect() {
      collectUpstreamGauge(this, (t) => (t.up ? 1 : 0));
    },
  }),
  upstreamOutstanding: new Gauge({
    name: 'agentgw_upstream_outstanding',
    help: 'Requests in flight or waiting for a connection, by agent and target.',
    labelNames: ['agent', 'target'] as const,
    registers: [registry],
    collect() {
      collectUpstreamGauge(this, (t) => t.outstanding);
    },
  }),
  // HTTP/2 on the public listener (docs/security.md, "HTTP/2"): what a client's resets and silence cost.
  adminAuthFailures: new Counter({
    name: 'agentgw_admin_auth_failures_total',
    help: 'Refused admin tokens (admin API bearer tokens and dashboard sign-ins), by reason.',
    labelNames: ['reason'] as const,
    registers: [registry],
  }),
  http2StreamsCancelled: new Counter({
    name: 'agentgw_streams_cancelled_total',
    help: 'HTTP/2 streams the client reset before the gateway answered or called a runner (no audit record is written for them).',
    registers: [registry],
  }),
  http2SessionsRefused: new Counter({
    name: 'agentgw_connections_refused_total',
    help: 'HTTP/2 connections ended with GOAWAY ENHANCE_YOUR_CALM, by reason (stream_resets).',
    labelNames: ['reason'] as const,
    registers: [registry],
  }),
  http2RequestTimeouts: new Counter({
    name: 'agentgw_stream_request_timeouts_total',
    help: 'HTTP/2 streams whose request was not received within listen.request_timeout (answered 408, or reset).',
    registers: [registry],
  }),
  // Webhooks (docs/notifications.md "Metrics"): what the delivery workers did, and the outbox
  // shards this instance owns, read when scraped (setWebhookBacklogSource).
  webhookDeliveries: new Counter({
    name: 'agentgw_webhook_deliveries_total',
    help: 'Webhook delivery attempts, by result (delivered: 2xx; retried: failed, tried again later; failed: given up after retry.give_up_after).',
    labelNames: ['result'] as const,
    registers: [registry],
  }),
  webhookDropped: new Counter({
    name: 'agentgw_webhook_dropped_total',
    help: 'Events never written to the outbox, by reason (queue_full: notifications.max_queue events were waiting).',
    labelNames: ['reason'] as const,
    registers: [registry],
  }),
  webhookOutboxDepth: new Gauge({
    name: 'agentgw_webhook_outbox_depth',
    help: 'Events in the outbox shards this instance delivers that are not yet delivered or failed.',
    registers: [registry],
    collect() {
      this.set(webhookBacklogSource?.().depth ?? 0);
    },
  }),
  webhookOldestUndelivered: new Gauge({
    name: 'agentgw_webhook_oldest_undelivered_seconds',
    help: 'Age of the oldest event in the outbox shards this instance delivers (0 when they are empty).',
    registers: [registry],
    collect() {
      const oldestMs = webhookBacklogSource?.().oldestMs;
      this.set(oldestMs === undefined ? 0 : Math.max(0, (Date.now() - oldestMs) / 1000));
    },
  }),
  // Counted on every request (a hit, mostly): a hot-path counter, bound on first use.
  keyCache: new HotCounter({ name: 'agentgw_key_cache_total', help: 'Key cache lookups, by result (hit, miss, negative_hit, stale_hit).', labelNames: ['result'] as const, registers: [registry] }),
  // JWT access tokens (docs/identity.md). Results and outcomes are fixed enums, never claims.
  // Every token request counts one (the cached path included): a hot-path counter.
  jwtVerifications: new HotCounter({
    name: 'agentgw_jwt_verifications_total',
    help: 'JWT access tokens checked, by result (verified, cached, invalid, revoked).',
    labelNames: ['result'] as const,
    registers: [registry],
  }),
  jwksFetches: new Counter({
    name: 'agentgw_jwks_fetches_total',
    help: "Reads of an issuer's discovery document and JWKS, by outcome (ok, error).",
    labelNames: ['outcome'] as const,
    registers: [registry],
  }),
} as const;

export type Metrics = typeof metrics;

let webhookBacklogSource: (() => { depth: number; oldestMs: number | undefined }) | undefined;
/** The webhook delivery workers register what the outbox gauges read (the latest registration wins). */
export function setWebhookBacklogSource(source: (() => { depth: number; oldestMs: number | undefined }) | undefined): void {
  webhookBacklogSource = source;
}

/** One target's state for the scrape-time gauges. */
export interface UpstreamTargetGaugeValues {
  agent: string;
  target: string;
  up: boolean;
  outstanding: number;
}

let upstreamStateSource: (() => Iterable<UpstreamTargetGaugeValues>) | undefined;

/** The upstream pools register where the per-target gauges read from (the latest registration wins). */
export function setUpstreamStateSource(source: (() => Iterable<UpstreamTargetGaugeValues>) | undefined): void {
  upstreamStateSource = source;
}

function collectUpstreamGauge(gauge: Gauge<'agent' | 'target'>, value: (t: UpstreamTargetGaugeValues) => number): void {
  // Reset first: a target removed by a reload disappears from the scrape.
  gauge.reset();
  if (!upstreamStateSource) return;
  for (const t of upstreamStateSource()) gauge.set({ agent: t.agent, target: t.target }, value(t));
}

/**
 * The per-request series of one agent and route, bound once: looking a labelled child up
 * by label object on every request costs more than the observation itself.
 */
export interface RouteSeries {
  /** Requests by status class: a child per class, made on first use. */
  requests(status: number): BoundCounter;
  requestDuration: BoundHistogram;
  upstreamDuration: BoundHistogram;
  overhead: BoundHistogram;
  tokens: BoundCounter;
}

const STATUS_CLASSES = ['1xx', '2xx', '3xx', '4xx', '5xx'] as const;
// By agent, then route: the agent id and the route are the same strings on every request
// (config, a fixed set), so both look-ups hash nothing; a joined key would be built and
// hashed per request.
const routeSeriesCache = new Map<string, Map<string, RouteSeries>>();

/** Agent ids come from config and routes from a fixed set, so the cache stays bounded. */
export function routeSeries(agent: string, route: string): RouteSeries {
  let byRoute = routeSeriesCache.get(agent);
  if (byRoute === undefined) {
    byRoute = new Map();
    routeSeriesCache.set(agent, byRoute);
  }
  let series = byRoute.get(route);
  if (!series) {
    const byClass: (BoundCounter | undefined)[] = [];
    series = {
      requests(status: number) {
        const index = Math.floor(status / 100) - 1;
        return (byClass[index] ??= metrics.requests.labels({ agent, route, status: STATUS_CLASSES[index] ?? 'other' }));
      },
      requestDuration: metrics.requestDuration.labels({ route }),
      upstreamDuration: metrics.upstreamDuration.labels({ agent, route }),
      overhead: metrics.overhead.labels({ route }),
      tokens: metrics.tokens.labels({ agent }),
    };
    byRoute.set(route, series);
  }
  return series;
}
