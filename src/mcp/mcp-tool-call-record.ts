// The audit record of one `tools/call` (docs/mcp.md "What is audited"): route `mcp`, the
// server and tool, outcome, the result's isError, latency, bytes, key, account, end user
// (a token's end-user claim, else `Agentgw-User-Id`), the gateway session and, for a JWT
// caller, the token's issuer, sub and jti (docs/identity.md). Never the call's arguments or its result.
import type { AuditOutcome, AuditRecord } from '../audit/audit-record.js';
import { newRequestId } from '../request/request-ids.js';
import type { McpExchange } from './mcp-exchange.js';
import type { McpDoor } from './mcp-door.js';

export interface ToolCallFacts {
  tool: string;
  status: number;
  outcome: AuditOutcome;
  bytesIn: number;
  bytesOut: number;
  isError: boolean | null;
  upstreamMs: number | null;
}

const MAX_USER_ID = 256;

/** The call's end user: the token's end-user claim, which wins (docs/identity.md), else `Agentgw-User-Id` (null: none, or not a usable id). */
export function endUserOf(exchange: McpExchange): string | null {
  const claimed = exchange.key.endUser;
  if (claimed != null) return claimed;
  const header = exchange.req.headers['agentgw-user-id'];
  return typeof header === 'string' && header.length > 0 && header.length <= MAX_USER_ID ? header : null;
}

export function recordToolCall(door: McpDoor, exchange: McpExchange, facts: ToolCallFacts): void {
  const { key, server } = exchange;
  const record: AuditRecord = {
    id: newRequestId(door.deps.clock.now()),
    request_id: exchange.requestId,
    ts: new Date(exchange.startedAt).toISOString(),
    key_id: key.keyId,
    account: key.account,
    plan: key.plan,
    agent: `mcp:${server.name}`,
    route: 'mcp',
    status: facts.status,
    outcome: facts.outcome,
    tokens_used: null,
    latency_ms: Math.round((performance.now() - exchange.startedPerf) * 1000) / 1000,
    upstream_latency_ms: facts.upstreamMs === null ? null : Math.round(facts.upstreamMs * 1000) / 1000,
    bytes_in: facts.bytesIn,
    bytes_out: facts.bytesOut,
    client_ip: exchange.clientIp,
    user_id: endUserOf(exchange),
    session_id: exchange.sessionId ?? null,
    model: null,
    cost_usd: null,
    tool_calls: null,
    tools_withheld: null,
    mcp_server: server.name,
    tool: facts.tool.slice(0, 128),
    is_error: facts.isError,
  };
  // A JWT caller's fields, as on the chat routes (src/http/finish-request.ts); a key's record keeps its shape.
  const token = key.token;
  if (token !== undefined) {
    record.auth = 'jwt';
    record.token_issuer = token.issuer;
    record.token_sub = token.sub;
    record.token_jti = token.jti;
  }
  door.deps.auditLog.record(record);
}
