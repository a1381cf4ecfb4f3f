// W3C Trace Context: pass a valid `traceparent` through; otherwise start a trace.
import { randomBytes } from 'node:crypto';

const TRACEPARENT = /^[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/;
const ALL_ZERO_TRACE = '0'.repeat(32);
const ALL_ZERO_SPAN = '0'.repeat(16);

export interface TraceContext {
  traceparent: string;
  traceId: string;
}

export function traceContextFor(incoming: string | string[] | undefined, requestId: string): TraceContext {
  if (typeof incoming === 'string') {
    const match = TRACEPARENT.exec(incoming.trim().toLowerCase());
    if (match && !incoming.startsWith('ff') && match[1] !== ALL_ZERO_TRACE && match[2] !== ALL_ZERO_SPAN) {
      return { traceparent: incoming.trim().toLowerCase(), traceId: match[1]! };
    }
  }
  // A generated request id is a UUID: its 32 hex digits make a fine trace id, for free.
  const hex = requestId.replace(/-/g, '').toLowerCase();
  const traceId = /^[0-9a-f]{32}$/.test(hex) && hex !== ALL_ZERO_TRACE ? hex : randomBytes(16).toString('hex');
  return { traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01`, traceId };
}
