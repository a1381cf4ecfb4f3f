// Which answered requests have no audit record after a fault (and which have two): the
// "audit records lost" column of docs/reliability.md.
import type { AuditRecord } from '../../../src/audit/audit-record.js';
import type { Outcome } from './traffic.js';

/** Every request the client got an answer for went past authentication here (valid key, known route). */
export function answered(outcomes: readonly Outcome[]): Outcome[] {
  return outcomes.filter((o) => o.status > 0);
}

export interface AuditCheck {
  /** Answered requests with no record. */
  missing: string[];
  /** Request ids with more than one record (the file sink writes each record once; the test's request ids are unique). */
  duplicated: string[];
  /** Records whose request id the test never sent. */
  strangers: string[];
}

export function checkAudit(records: readonly AuditRecord[], outcomes: readonly Outcome[], idPrefixes: readonly string[]): AuditCheck {
  const counts = new Map<string, number>();
  for (const record of records) counts.set(record.request_id, (counts.get(record.request_id) ?? 0) + 1);
  return {
    missing: answered(outcomes)
      .map((o) => o.id)
      .filter((id) => !counts.has(id)),
    duplicated: [...counts].filter(([, n]) => n > 1).map(([id]) => id),
    strangers: [...counts.keys()].filter((id) => !idPrefixes.some((prefix) => id.startsWith(prefix))),
  };
}
