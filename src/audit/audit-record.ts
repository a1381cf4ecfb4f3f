// The usage audit record (DESIGN.md 5): the contract billing and dashboards read.
export type AuditOutcome = 'ok' | 'invalid_request' | 'rate_limited' | 'upstream_error' | 'client_closed' | 'timeout' | 'error';

export interface AuditRecord {
  id: string;
  ts: string;
  key_id: string;
  account: string;
  plan: string;
  agent: string;
  route: 'chat' | 'chat/stream';
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
}

/**
 * One record as the JSON text that every sink and spool stores (no trailing newline;
 * JSON.stringify escapes newlines inside strings, so it is always one line). A record is
 * serialised once, when it is recorded, however many sinks take it, and a spool replays
 * these bytes as they are (decision 0011).
 */
export type AuditLine = string;

export function toAuditLine(record: AuditRecord): AuditLine {
  return JSON.stringify(record);
}

/** The request pipeline's view of the audit log: hand over a record and move on. */
export interface AuditLog {
  /** Never blocks and never throws: the record is queued (or spooled) for delivery. */
  record(record: AuditRecord): void;
  /** Flushes everything queued, then releases the sinks. */
  close(): Promise<void>;
}
