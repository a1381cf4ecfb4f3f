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

// The id is written as ASCII into one buffer and read out as a string with one call:
// built from 20 concatenated pieces instead, it cost V8 a flattening as large as the rest of
// the id (docs/decisions/0017-hostile-json-checked-around-parse.md has the counts).
const HEX_CODES = Buffer.from('0123456789abcdef', 'latin1');
const ID_LENGTH = 36;
const id = Buffer.from('00000000-0000-7000-8000-000000000000', 'latin1');

/** The text of the last id made: `id` holds its bytes until the next one. */
let lastId: string | undefined;
const hexDigits = Buffer.alloc(32);

/**
 * The 32 hex digits of `requestId` (its text without the dashes) when it is the text of the
 * last id made, else undefined. A request's trace id is derived from its id right after the
 * id is made (src/proxy/traceparent.ts): its digits are copied from the id's bytes, with no
 * character check, no slices and no concatenation of the id's string.
 */
export function hexDigitsOfLastId(requestId: string): string | undefined {
  if (requestId !== lastId) return undefined;
  for (let i = 0; i < 8; i++) hexDigits[i] = id[i]!;
  for (let i = 0; i < 4; i++) {
    hexDigits[8 + i] = id[9 + i]!;
    hexDigits[12 + i] = id[14 + i]!;
    hexDigits[16 + i] = id[19 + i]!;
  }
  for (let i = 0; i < 12; i++) hexDigits[20 + i] = id[24 + i]!;
  return hexDigits.toString('latin1', 0, 32);
}

/** The last millisecond an id was made for (its digits stay in `id` until it changes), and the sequence used in it. */
let lastMs = -1;
let sequence = 0;

function writeHex(at: number, byte: number): void {
  id[at] = HEX_CODES[byte >> 4]!;
  id[at + 1] = HEX_CODES[byte & 15]!;
}

function writeTime(ms: number): void {
  // 48 bits: the high 16 through division (beyond 32-bit integer arithmetic), the low 32 with bit operations.
  const high = Math.floor(ms / 0x1_0000_0000) & 0xffff;
  const low = ms >>> 0;
  writeHex(0, high >> 8);
  writeHex(2, high & 0xff);
  writeHex(4, low >>> 24);
  writeHex(6, (low >>> 16) & 0xff);
  writeHex(9, (low >>> 8) & 0xff);
  writeHex(11, low & 0xff);
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
    writeTime(ms);
    sequence = randomPool[takeRandomBytes(1)]! << 3;
  } else if (++sequence > 0xfff) {
    lastMs += 1;
    writeTime(lastMs);
    sequence = 0;
  }
  // "7sss": the version, then the sequence.
  id[15] = HEX_CODES[sequence >> 8]!;
  writeHex(16, sequence & 0xff);
  // "vrrr-rrrrrrrrrrrr": the variant bits 10 (RFC 9562 4.1), then 62 random bits.
  const at = takeRandomBytes(9);
  const p = randomPool;
  id[19] = HEX_CODES[0x8 | (p[at]! & 0x3)]!;
  writeHex(20, p[at + 1]!);
  id[22] = HEX_CODES[p[at + 2]! & 15]!;
  for (let i = 0; i < 6; i++) writeHex(24 + 2 * i, p[at + 3 + i]!);
  lastId = id.toString('latin1', 0, ID_LENGTH);
  return lastId;
}
