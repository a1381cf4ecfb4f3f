// The public listener's responses: their last write waits for the audit journal (decision
// 0022). When a response ends, its audit record is made first and the end itself (the bytes
// that complete the answer) is handed to the socket only after the turn's journal write, so
// no client holds a whole answer whose record a SIGKILL could still take away. One rule for
// every way a response ends (JSON relay, stream relay, gateway errors) and for both
// protocols: node:http's ServerResponse (HTTP/1.1, also behind TLS) and node:http2's
// compatibility response (h2, decision 0021).
import { ServerResponse } from '../node-http.js';
import { Http2ServerResponse } from 'node:http2';
import type { AuditLog } from '../audit/audit-record.js';

/** Makes the record at end time; returns the log to wait for, or undefined when there is no record. */
export type RecordAtEnd = (context: unknown) => AuditLog | undefined;

/** What the pipeline sets on a response to have its end wait for the record's journal write. */
export interface JournaledEnd {
  /** Set by the pipeline with `endContext`: a method bound once, not a closure per request. */
  recordAtEnd: RecordAtEnd | undefined;
  endContext: unknown;
}

type EndMethod = (this: unknown, chunk: unknown, encoding: unknown, callback: unknown) => unknown;

const http1End = ServerResponse.prototype.end as unknown as EndMethod;
const http2End = Http2ServerResponse.prototype.end as unknown as EndMethod;

function endAfterRecord(res: JournaledEnd, end: EndMethod, chunk: unknown, encoding: unknown, callback: unknown): void {
  const recordAtEnd = res.recordAtEnd;
  if (recordAtEnd === undefined) {
    end.call(res, chunk, encoding, callback);
    return;
  }
  res.recordAtEnd = undefined;
  const log = recordAtEnd(res.endContext);
  res.endContext = undefined;
  if (log?.whenDurable === undefined) end.call(res, chunk, encoding, callback);
  else log.whenDurable(() => end.call(res, chunk, encoding, callback));
}

export class JournaledResponse extends ServerResponse implements JournaledEnd {
  recordAtEnd: RecordAtEnd | undefined = undefined;
  endContext: unknown = undefined;

  override end(chunk?: unknown, encoding?: unknown, callback?: unknown): this {
    endAfterRecord(this, http1End, chunk, encoding, callback);
    return this;
  }
}

export class JournaledHttp2Response extends Http2ServerResponse implements JournaledEnd {
  recordAtEnd: RecordAtEnd | undefined = undefined;
  endContext: unknown = undefined;

  override end(chunk?: unknown, encoding?: unknown, callback?: unknown): this {
    endAfterRecord(this, http2End, chunk, encoding, callback);
    return this;
  }
}

export function isJournaled(res: object): res is JournaledEnd {
  return res instanceof JournaledResponse || res instanceof JournaledHttp2Response;
}
