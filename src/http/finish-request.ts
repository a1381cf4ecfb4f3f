// What happens once per request when its response closes: one audit record (if the key was
// accepted), metrics, the end of its trace spans (when traced), and one log line.
import type { ServerResponse } from 'node:http';
import type { AuditLog, AuditRecord } from '../audit/audit-record.js';
import { isoTimestampCache } from '../clock.js';
import { routeSeries } from '../metrics/metrics.js';
import type { RequestLogWriter } from './request-log-line.js';
import { requestOutcome } from './request-outcome.js';
import type { RequestState } from '../request/request-state.js';
import type { RequestTracing } from '../telemetry/request-tracing.js';

/** nginx's convention: the client closed the connection before any answer was sent. */
export const CLIENT_CLOSED_STATUS = 499;

const auditTimestamp = isoTimestampCache();

export function finishRequest(state: RequestState, res: ServerResponse, auditLog: AuditLog, logRequest: RequestLogWriter, tracing?: RequestTracing): void {
  const status = res.headersSent ? res.statusCode : CLIENT_CLOSED_STATUS;
  const outcome = requestOutcome(state, res);
  const key = state.key;
  const latencyMs = performance.now() - state.startedMonoMs;
  const upstreamLatencyMs = state.upstreamLatencyMs();
  const route = state.route ?? 'none';
  const agent = state.agentId ?? 'none';

  const series = routeSeries(agent, route);
  series.requests(status).inc();
  series.requestDuration.observe(latencyMs / 1000);
  if (upstreamLatencyMs !== null && state.route) {
    series.upstreamDuration.observe(upstreamLatencyMs / 1000);
    series.overhead.observe(Math.max(0, latencyMs - upstreamLatencyMs) / 1000);
  }
  if (state.tokensUsed !== null) series.tokens.inc(state.tokensUsed);

  // A sampled request's spans (state.trace is set only by tracing.begin).
  if (state.trace !== undefined) tracing!.end(state, status, outcome);

  if (!state.audited) {
    const record = auditRecordOf(state, res, latencyMs, false);
    if (record) auditLog.record(record);
  }

  logRequest({
    request_id: state.requestId,
    trace_id: state.traceId,
    agent,
    route,
    key_id: key?.keyId,
    status,
    outcome,
    error: state.errorType,
    upstream_failure: state.failureKind,
    latency_ms: Math.round(latencyMs * 100) / 100,
    upstream_latency_ms: upstreamLatencyMs === null ? undefined : Math.round(upstreamLatencyMs * 100) / 100,
    tokens_used: state.tokensUsed,
    client_ip: state.clientIp,
  });
}

/**
 * The request's audit record, if its key was accepted. `ending`: made as the response ends
 * (JournaledResponse), so the status is the one being sent and the answer counts as whole;
 * otherwise when the response has closed (the client may have left first).
 */
export function auditRecordOf(state: RequestState, res: ServerResponse, latencyMs: number, ending: boolean): AuditRecord | undefined {
  const key = state.key;
  if (!key || !state.route) return undefined;
  const upstreamLatencyMs = state.upstreamLatencyMs();
  const record: AuditRecord = {
    id: state.id,
    request_id: state.requestId,
    ts: auditTimestamp(state.startedAtMs),
    key_id: key.keyId,
    account: key.account,
    plan: key.plan,
    agent: state.agentId ?? 'none',
    route: state.route,
    status: ending || res.headersSent ? res.statusCode : CLIENT_CLOSED_STATUS,
    outcome: requestOutcome(state, res, ending),
    tokens_used: state.tokensUsed,
    latency_ms: Math.round(latencyMs),
    upstream_latency_ms: upstreamLatencyMs === null ? null : Math.round(upstreamLatencyMs),
    bytes_in: state.bytesIn,
    bytes_out: state.bytesOut,
    client_ip: state.clientIp,
    user_id: state.userId,
    session_id: state.sessionId,
    model: state.model,
    cost_usd: state.costUsd,
    tool_calls: state.toolCalls,
    tools_withheld: state.toolsWithheld,
  };
  // A JWT caller's fields (docs/identity.md); a key's record keeps its shape.
  const token = key.token;
  if (token !== undefined) {
    record.auth = 'jwt';
    record.token_issuer = token.issuer;
    record.token_sub = token.sub;
    record.token_jti = token.jti;
  }
  return record;
}

/**
 * JournaledResponse's hook: the audit record as the response ends, so its journal write can
 * come before the answer's last bytes. Returns the log to wait for; undefined: no record.
 */
export function recordAtEnd(state: RequestState, res: ServerResponse, auditLog: AuditLog): AuditLog | undefined {
  const record = auditRecordOf(state, res, performance.now() - state.startedMonoMs, true);
  if (!record) return undefined;
  state.audited = true;
  auditLog.record(record);
  return auditLog;
}
