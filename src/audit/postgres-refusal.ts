// Why PostgreSQL refused a statement, by its SQLSTATE (docs/audit.md "Records PostgreSQL
// refuses"). Two kinds matter to the audit sink, and they call for opposite answers:
//   - refused for its DATA (class 22 data exception, class 23 integrity constraint, 54000 a
//     row too large for an index): writing the same rows again fails the same way forever,
//     so those rows are set aside and the rest flow;
//   - anything else (the server down or restarting, class 08 connection, 53 resources, 57
//     operator intervention or a statement timeout, a Node socket error): the batch is
//     spooled and retried, as before — a record is never set aside because the server was away.
// A row no partition takes (23514 from ExecFindPartition) is neither: it means the sink's
// knowledge of the partitions is stale (one was dropped by hand), so it is retried.
import { wellFormedText } from './audit-columns.js';

/** A statement PostgreSQL refused for the data it carried. */
export interface DataRefusal {
  /** The SQLSTATE, e.g. "22P02". */
  code: string;
  /** PostgreSQL's message, well-formed and at most REASON_CHARS long (it may quote a value, never a credential). */
  reason: string;
}

const REASON_CHARS = 200;
const DATA_CLASSES = new Set(['22', '23']);
const DATA_CODES = new Set(['54000']);

interface PgDatabaseError {
  code: string;
  message: string;
  severity: string;
  routine?: string;
}

function isDatabaseError(err: unknown): err is PgDatabaseError {
  if (!(err instanceof Error)) return false;
  const { code, severity } = err as unknown as Record<string, unknown>;
  // A server error carries a five-character SQLSTATE and a severity; a socket error (ECONNRESET) has no severity.
  return typeof code === 'string' && code.length === 5 && typeof severity === 'string';
}

/** The server routed a row to no partition: the partitions are not what the sink believed. */
export function isMissingPartition(err: unknown): boolean {
  return isDatabaseError(err) && err.code === '23514' && (err.routine === 'ExecFindPartition' || err.message.startsWith('no partition of relation'));
}

/** Set when the statement failed for its data (retrying it cannot help); undefined for every other failure. */
export function refusedForItsData(err: unknown): DataRefusal | undefined {
  if (!isDatabaseError(err) || isMissingPartition(err)) return undefined;
  if (!DATA_CLASSES.has(err.code.slice(0, 2)) && !DATA_CODES.has(err.code)) return undefined;
  return { code: err.code, reason: wellFormedText(err.message.slice(0, REASON_CHARS)) };
}
