// One destination for audit records (docs/design.md, "Usage audit records"). The batching log
// owns queuing, spooling and retries; a sink only knows how to write one batch and says so by
// throwing.
import type { AuditLine } from './audit-record.js';

/** Sink names double as metric labels (`agentgw_audit_records_total{sink}`) and spool file suffixes. */
export type AuditSinkName = 'redis' | 'file' | (string & {});

export interface AuditSink {
  readonly name: AuditSinkName;
  /**
   * Writes the batch (each record as its JSON line) in order. Throws when the batch may not
   * have been written in full; the caller then spools the whole batch, so a partly written
   * batch is written again later (delivery is at-least-once, consumers drop duplicates by
   * `id`). A sink whose destination refuses some records for their data (not for being
   * down) may set those aside where an operator can read them and resolve, so they never
   * hold the records behind them (the PostgreSQL sink does: docs/audit.md "Records
   * PostgreSQL refuses").
   */
  write(lines: readonly AuditLine[]): Promise<void>;
  /** Releases what the sink opened itself (not clients it was handed). */
  close(): Promise<void>;
}
