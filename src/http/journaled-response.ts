// The public listener's ServerResponse: its last write waits for the audit journal
// (decision 0022). When a response ends, its audit record is made first and the end itself
// (the bytes that complete the answer) is handed to the socket only after the turn's journal
// write, so no client holds a whole answer whose record a SIGKILL could still take away.
// One class for every way a response ends (JSON relay, stream relay, gateway errors).
import { ServerResponse } from 'node:http';
import type { AuditLog } from '../audit/audit-record.js';

/** Makes the record at end time; returns the log to wait for, or undefined when there is no record. */
export type RecordAtEnd = (context: unknown) => AuditLog | undefined;

export class JournaledResponse extends ServerResponse {
  /** Set by the pipeline with `endContext`: a method bound once, not a closure per request. */
  recordAtEnd: RecordAtEnd | undefined = undefined;
  endContext: unknown = undefined;

  override end(chunk?: unknown, encoding?: unknown, callback?: unknown): this {
    const recordAtEnd = this.recordAtEnd;
    if (recordAtEnd === undefined) return this.endNow(chunk, encoding, callback);
    this.recordAtEnd = undefined;
    const log = recordAtEnd(this.endContext);
    this.endContext = undefined;
    if (log?.whenDurable === undefined) return this.endNow(chunk, encoding, callback);
    log.whenDurable(() => this.endNow(chunk, encoding, callback));
    return this;
  }

  private endNow(chunk: unknown, encoding: unknown, callback: unknown): this {
    return (super.end as (...args: unknown[]) => this)(chunk, encoding, callback);
  }
}
