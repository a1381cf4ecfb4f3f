// W3C Trace Context: pass a valid `traceparent` through; otherwise start a trace.
import { randomBytes } from 'node:crypto';
import { randomPool, takeRandomBytes } from '../request/random-pool.js';
import { hexDigitsOfLastId } from '../request/request-ids.js';

const TRACEPARENT = /^[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/;
const ALL_ZERO_TRACE = '0'.repeat(32);
const ALL_ZERO_SPAN = '0'.repeat(16);

// Span ids come from the pooled random bytes rather than a crypto call per request.
const SPAN_ID_BYTES = 8;

function nextSpanId(): string {
  const offset = takeRandomBytes(SPAN_ID_BYTES);
  const id = randomPool.toString('hex', offset, offset + SPAN_ID_BYTES);
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
  const hex = hexDigitsOf(requestId);
  const traceId = hex !== undefined && hex !== ALL_ZERO_TRACE ? hex : randomBytes(16).toString('hex');
  return { traceparent: `00-${traceId}-${nextSpanId()}-01`, traceId };
}

const LOWER_HEX_32 = /^[0-9a-f]{32}$/;

/**
 * A request id that is 32 hex digits once its dashes are dropped (a generated one is a
 * UUID) makes a fine trace id, for free: those digits, lower-cased. A lower-case UUID, which
 * every generated id is, is checked character by character and cut at its four dashes
 * (no replace, no lower-casing, no regular expression); anything else goes through the
 * general rule. Not LOWER_HEX_32 on the cut, concatenated string either: that test goes
 * through V8's runtime, a costly call per request (decision 0012).
 */
export function hexDigitsOf(requestId: string): string | undefined {
  // The common case: the id the gateway has just made for this request.
  const made = hexDigitsOfLastId(requestId);
  if (made !== undefined) return made;
  if (isLowerCaseUuid(requestId)) return requestId.slice(0, 8) + requestId.slice(9, 13) + requestId.slice(14, 18) + requestId.slice(19, 23) + requestId.slice(24);
  const hex = requestId.replace(/-/g, '').toLowerCase();
  return LOWER_HEX_32.test(hex) ? hex : undefined;
}

function isLowerCaseUuid(text: string): boolean {
  if (text.length !== 36) return false;
  for (let i = 0; i < 36; i += 1) {
    const unit = text.charCodeAt(i);
    if (i === 8 || i === 13 || i === 18 || i === 23) {
      if (unit !== 0x2d) return false;
    } else if (!((unit >= 0x30 && unit <= 0x39) || (unit >= 0x61 && unit <= 0x66))) {
      return false;
    }
  }
  return true;
}
