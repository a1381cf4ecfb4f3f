// The usage audit record (docs/design.md, "Usage audit records"): the contract billing and
// dashboards read.
import { isPlainJsonText, jsonNumberLiteral, jsonStringLiteral, PlainTextMemo, requestIdPlainMemo } from '../json-text.js';

export type AuditOutcome = 'ok' | 'invalid_request' | 'rate_limited' | 'token_budget_exceeded' | 'cost_budget_exceeded' | 'tool_budget_exceeded' | 'concurrency_limit_exceeded' | 'tool_not_allowed' | 'upstream_error' | 'client_closed' | 'timeout' | 'error';

/**
 * The most tokens one answer may report (docs/rate-limits.md, "Token budgets"): far above any
 * model's context, so a count past it is a runner's mistake or malice, never a real answer.
 */
export const MAX_TOKENS_USED = 10_000_000;

/** A believable `tokens_used`: a finite integer from 0 to MAX_TOKENS_USED. Anything else is unknown. */
export function isTokenCount(tokens: unknown): tokens is number {
  return typeof tokens === 'number' && Number.isInteger(tokens) && tokens >= 0 && tokens <= MAX_TOKENS_USED;
}

export interface AuditRecord {
  /** Made by the gateway, unique per request: the dedupe key. */
  id: string;
  /** The exchange's X-Request-Id (the client's when it sent a sane one; clients can repeat it). */
  request_id: string;
  ts: string;
  key_id: string;
  account: string;
  plan: string;
  agent: string;
  /** `mcp`: a `tools/call` through the MCP front door (docs/mcp.md "What is audited"). */
  route: 'chat' | 'chat/stream' | 'mcp';
  status: number;
  outcome: AuditOutcome;
  tokens_used: number | null;
  latency_ms: number;
  upstream_latency_ms: number | null;
  bytes_in: number;
  bytes_out: number;
  client_ip: string;
  user_id: string | null;
  session_id: string | null;
  /** The model that answered (`metadata.model`, a stream's `done` `model`, else the agent's configured `model`). */
  model: string | null;
  /** tokens_used / 1000 x the model's price (docs/policy.md "Cost in dollars"); null: no count or no price. */
  cost_usd: number | null;
  /** The tools the runner called, by name, in order (never their inputs or outputs); null: none. */
  tool_calls: readonly string[] | null;
  /** Tools left out of the forwarded `tools` because their quota was spent (the Tools-Withheld header); null: none. */
  tools_withheld: readonly string[] | null;
  /** MCP records only (route `mcp`): the server, the tool called, and the result's `isError` (null: no result). */
  mcp_server?: string;
  tool?: string;
  is_error?: boolean | null;
  // Present only for a JWT access token (docs/identity.md); a key's record has none of them.
  /** How the caller authenticated: "jwt". */
  auth?: 'jwt' | undefined;
  /** The token's `iss`, `sub` and `jti` (null: it had none); never the token. */
  token_issuer?: string | undefined;
  token_sub?: string | undefined;
  token_jti?: string | null | undefined;
}

/**
 * One record as the JSON text that every sink and spool stores (no trailing newline;
 * newlines inside strings are escaped, so it is always one line). A record is serialised
 * once, when it is recorded, however many sinks take it, and a spool replays these bytes as
 * they are (decision 0011).
 */
export type AuditLine = string;

const nullableString = (value: string | null): string => (value === null ? 'null' : jsonStringLiteral(value));
const nullableNumber = (value: number | null): string => (value === null ? 'null' : jsonNumberLiteral(value));

/** A list of names as a JSON array, or null. */
function nullableNames(names: readonly string[] | null): string {
  if (names === null) return 'null';
  let text = '[';
  for (let i = 0; i < names.length; i++) text += (i === 0 ? '' : ',') + jsonStringLiteral(names[i]!);
  return text + ']';
}

/**
 * The answer's facts (decision 0066), the same text on both paths of toAuditLine. A record
 * made without them (a caller built against the record before they existed) gets nulls.
 */
function answerFields(r: AuditRecord): string {
  return (
    ',"model":' + nullableString(r.model ?? null) + ',"cost_usd":' + nullableNumber(r.cost_usd ?? null) +
    ',"tool_calls":' + nullableNames(r.tool_calls ?? null) + ',"tools_withheld":' + nullableNames(r.tools_withheld ?? null) + tokenFields(r) +
    (r.mcp_server === undefined ? '}' : mcpFields(r))
  );
}

/** An MCP record's own fields, after the answer's and a token's (never arguments or results). */
function mcpFields(r: AuditRecord): string {
  const isError = r.is_error === undefined || r.is_error === null ? 'null' : String(r.is_error);
  return ',"mcp_server":' + jsonStringLiteral(r.mcp_server!) + ',"tool":' + jsonStringLiteral(r.tool ?? '') + ',"is_error":' + isError + '}';
}

/**
 * A JWT caller's fields (docs/identity.md), after the others; nothing for a key. The last
 * token's text is remembered: a client sends one token for many requests, and its fields are
 * then the same strings (decision 0109), compared rather than scanned and joined again.
 */
const lastToken = { issuer: '', sub: '', jti: null as string | null, text: '' };
function tokenFields(r: AuditRecord): string {
  if (r.auth === undefined) return '';
  const issuer = r.token_issuer ?? '';
  const sub = r.token_sub ?? '';
  const jti = r.token_jti ?? null;
  if (lastToken.text !== '' && issuer === lastToken.issuer && sub === lastToken.sub && jti === lastToken.jti) return lastToken.text;
  const text = ',"auth":"jwt","token_issuer":' + jsonStringLiteral(issuer) + ',"token_sub":' + jsonStringLiteral(sub) + ',"token_jti":' + nullableString(jti);
  lastToken.issuer = issuer;
  lastToken.sub = sub;
  lastToken.jti = jti;
  lastToken.text = text;
  return text;
}

const plainKeyId = new PlainTextMemo();
const plainAccount = new PlainTextMemo();
const plainPlan = new PlainTextMemo();
const plainAgent = new PlainTextMemo();
const plainClientIp = new PlainTextMemo();

/**
 * The record's JSON, field by field in the order above: the same text JSON.stringify gives
 * for a record built in that order (finishRequest's), without its generic walk, which is a
 * large share of a request's instructions (decision 0012 has the count). The fields are the
 * contract's, whatever else the object holds.
 */
export function toAuditLine(r: AuditRecord): AuditLine {
  const userId = r.user_id;
  const sessionId = r.session_id;
  // A gateway's record is all plain strings (ids, names, addresses) but for what a client
  // chose (user_id, session_id): their quotes then go into the constant pieces, which halves
  // the concatenations and skips a call per field.
  // Fields that repeat from request to request are checked through a memo of the last plain one.
  if (
    isPlainJsonText(r.id) &&
    requestIdPlainMemo.isPlain(r.request_id) &&
    isPlainJsonText(r.ts) &&
    plainKeyId.isPlain(r.key_id) &&
    plainAccount.isPlain(r.account) &&
    plainPlan.isPlain(r.plan) &&
    plainAgent.isPlain(r.agent) &&
    isPlainJsonText(r.route) &&
    isPlainJsonText(r.outcome) &&
    plainClientIp.isPlain(r.client_ip)
  ) {
    return (
      '{"id":"' + r.id + '","request_id":"' + r.request_id + '","ts":"' + r.ts + '","key_id":"' + r.key_id + '","account":"' + r.account +
      '","plan":"' + r.plan + '","agent":"' + r.agent + '","route":"' + r.route + '","status":' + jsonNumberLiteral(r.status) +
      ',"outcome":"' + r.outcome + '","tokens_used":' + nullableNumber(r.tokens_used) + ',"latency_ms":' + jsonNumberLiteral(r.latency_ms) +
      ',"upstream_latency_ms":' + nullableNumber(r.upstream_latency_ms) + ',"bytes_in":' + jsonNumberLiteral(r.bytes_in) + ',"bytes_out":' + jsonNumberLiteral(r.bytes_out) +
      ',"client_ip":"' + r.client_ip + '","user_id":' + nullableString(userId) + ',"session_id":' + nullableString(sessionId) + answerFields(r)
    );
  }
  return (
    `{"id":${jsonStringLiteral(r.id)},"request_id":${jsonStringLiteral(r.request_id)},"ts":${jsonStringLiteral(r.ts)},"key_id":${jsonStringLiteral(r.key_id)},"account":${jsonStringLiteral(r.account)}` +
    `,"plan":${jsonStringLiteral(r.plan)},"agent":${jsonStringLiteral(r.agent)},"route":${jsonStringLiteral(r.route)},"status":${jsonNumberLiteral(r.status)}` +
    `,"outcome":${jsonStringLiteral(r.outcome)},"tokens_used":${nullableNumber(r.tokens_used)},"latency_ms":${jsonNumberLiteral(r.latency_ms)}` +
    `,"upstream_latency_ms":${nullableNumber(r.upstream_latency_ms)},"bytes_in":${jsonNumberLiteral(r.bytes_in)},"bytes_out":${jsonNumberLiteral(r.bytes_out)}` +
    `,"client_ip":${jsonStringLiteral(r.client_ip)},"user_id":${nullableString(userId)},"session_id":${nullableString(sessionId)}` +
    answerFields(r)
  );
}

/** The request pipeline's view of the audit log: hand over a record and move on. */
export interface AuditLog {
  /** Never blocks and never throws: the record is queued (or spooled) for delivery. */
  record(record: AuditRecord): void;
  /**
   * Calls `callback` once every record recorded so far is in the OS (the journal's write at
   * the end of this turn); at once when there is no journal. Absent: nothing to wait for.
   */
  whenDurable?(callback: () => void): void;
  /** Flushes everything queued, then releases the sinks. */
  close(): Promise<void>;
}
