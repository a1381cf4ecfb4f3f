// A request's two ids. The audit record's `id` is always made here, never taken from the
// client, so it is unique and consumers can deduplicate by it. The X-Request-Id is the
// client's own when it sent a sane one (a correlation id only: clients can repeat it), else
// that same made id. They are UUIDv7 (RFC 9562):
// 48 bits of Unix milliseconds, then a per-process sequence within the millisecond, then 62
// random bits. So ids sort by arrival time (strictly, within one process), are unique across
// instances without coordination, and are still UUIDs (a trace id is derived from their hex
// digits, src/proxy/traceparent.ts). Built from lookup tables and the pooled random bytes:
// no crypto call and no number formatting per id.
import { containsApiKey } from '../keys/key-format.js';
import { randomPool, takeRandomBytes } from './random-pool.js';

const SANE_REQUEST_ID = /^[A-Za-z0-9._:@-]{1,128}$/;

/**
 * The client's X-Request-Id when it is sane (so its logs join ours), else undefined. A raw
 * API key sent as the request id would be echoed, logged, audited and forwarded: never take it.
 */
export function saneClientRequestId(fromClient: string | string[] | undefined): string | undefined {
  if (typeof fromClient === 'string' && SANE_REQUEST_ID.test(fromClient) && !containsApiKey(fromClient)) return fromClient;
  return undefined;
}

const HEX = '0123456789abcdef';
const HEX_BYTE: readonly string[] = Array.from({ length: 256 }, (_, byte) => HEX[byte >> 4]! + HEX[byte & 15]!);

/** The last millisecond an id was made for, its "xxxxxxxx-xxxx-" text, and the sequence used in it. */
let lastMs = -1;
let timePrefix = '';
let sequence = 0;

function prefixOf(ms: number): string {
  // 48 bits: the high 16 through division (beyond 32-bit integer arithmetic), the low 32 with bit operations.
  const high = Math.floor(ms / 0x1_0000_0000) & 0xffff;
  const low = ms >>> 0;
  return HEX_BYTE[high >> 8]! + HEX_BYTE[high & 0xff]! + HEX_BYTE[low >>> 24]! + HEX_BYTE[(low >>> 16) & 0xff]! + '-' + HEX_BYTE[(low >>> 8) & 0xff]! + HEX_BYTE[low & 0xff]! + '-';
}

/**
 * A new UUIDv7 for a request that arrived at `nowMs` (Unix ms). Within one process ids are
 * strictly increasing: a clock that stands still or steps back keeps the last millisecond
 * and advances the 12-bit sequence, and a full sequence moves on to the next millisecond
 * (RFC 9562 6.2, methods 1 and 3). Each new millisecond starts its sequence at a random
 * value below 2048, so ids of two instances in one millisecond do not line up.
 */
export function newRequestId(nowMs: number): string {
  const ms = Math.floor(nowMs);
  if (ms > lastMs) {
    lastMs = ms;
    timePrefix = prefixOf(lastMs);
    sequence = randomPool[takeRandomBytes(1)]! << 3;
  } else if (++sequence > 0xfff) {
    lastMs += 1;
    timePrefix = prefixOf(lastMs);
    sequence = 0;
  }
  const at = takeRandomBytes(8);
  const p = randomPool;
  return (
    timePrefix +
    HEX[7]! +
    HEX[sequence >> 8]! +
    HEX_BYTE[sequence & 0xff]! +
    '-' +
    // The variant bits 10 (RFC 9562 4.1) over the first random byte.
    HEX_BYTE[(p[at]! & 0x3f) | 0x80]! +
    HEX_BYTE[p[at + 1]!]! +
    '-' +
    HEX_BYTE[p[at + 2]!]! +
    HEX_BYTE[p[at + 3]!]! +
    HEX_BYTE[p[at + 4]!]! +
    HEX_BYTE[p[at + 5]!]! +
    HEX_BYTE[p[at + 6]!]! +
    HEX_BYTE[p[at + 7]!]!
  );
}
