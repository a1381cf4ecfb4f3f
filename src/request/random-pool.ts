// Random bytes for per-request ids (request ids, span ids), drawn from one pooled buffer that
// is refilled with a single crypto call every few hundred ids instead of a call per id.
import { randomFillSync } from 'node:crypto';

const POOL_BYTES = 4096;

/** The pool itself; read `count` bytes at the offset `takeRandomBytes(count)` returns. */
export const randomPool: Buffer = Buffer.alloc(POOL_BYTES);
let nextOffset = POOL_BYTES;

/** Reserves `count` (≤ 4096) unused random bytes and returns their offset in `randomPool`. */
export function takeRandomBytes(count: number): number {
  if (nextOffset + count > POOL_BYTES) {
    randomFillSync(randomPool);
    nextOffset = 0;
  }
  const offset = nextOffset;
  nextOffset += count;
  return offset;
}
