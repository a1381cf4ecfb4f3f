/**
 * Splits bytes at the given offsets (each in 0..length; duplicates ignored, any order), as a
 * socket or a parser might receive them. An offset of 0 or `length` yields an empty piece:
 * callers that do not want those leave such offsets out.
 */
export function splitAt(bytes: Buffer, offsets: readonly number[]): Buffer[] {
  const points = [...new Set(offsets)].sort((a, b) => a - b);
  const pieces: Buffer[] = [];
  let start = 0;
  for (const point of points) {
    pieces.push(bytes.subarray(start, point));
    start = point;
  }
  pieces.push(bytes.subarray(start));
  return pieces;
}

/** splitAt with only the offsets strictly inside the bytes (1..length-1): no piece is empty. */
export function splitAtInside(bytes: Buffer, offsets: readonly number[]): Buffer[] {
  return splitAt(bytes, offsets.filter((offset) => offset > 0 && offset < bytes.length));
}
