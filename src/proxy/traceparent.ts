// W3C Trace Context: pass a valid `traceparent` through; otherwise start a trace.
import { randomBytes, randomFillSync } from 'node:crypto';

const TRACEPARENT = /^[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/;
const ALL_ZERO_TRACE = '0'.repeat(32);
const ALL_ZERO_SPAN = '0'.repeat(16);

// Span ids come from a pooled random buffer, refilled once per 512 ids, rather than a
// crypto call per request.
const SPAN_ID_BYTES = 8;
const POOL_IDS = 512;
const spanPool = Buffer.alloc(SPAN_ID_BYTES * POOL_IDS);
let spanPoolOffset = spanPool.length;

function nextSpanId(): string {
  if (spanPoolOffset >= spanPool.length) {
    randomFillSync(spanPool);
    spanPoolOffset = 0;
  }
  const id = spanPool.toString('hex', spanPoolOffset, spanPoolOffset + SPAN_ID_BYTES);
  spanPoolOffset += SPAN_ID_BYTES;
  return id === ALL_ZERO_SPAN ? nextSpanId() : id;
}

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
  return { traceparent: `00-${traceId}-${nextSpanId()}-01`, traceId };
}
