// `Authorization: Bearer <key>` → the key. The scheme is case-insensitive (RFC 9110 11.1)
// and whitespace around the header value and between scheme and token is tolerated.

function isSpace(code: number): boolean {
  return code === 32 || code === 9;
}

/**
 * Returns the token, or '' when the header carries no Bearer credential (absent, blank,
 * another scheme, or "Bearer" alone): the caller answers missing_api_key for ''. A token
 * with anything odd in it is returned as is and then fails the key format check.
 */
export function extractBearerToken(header: string | undefined): string {
  if (header === undefined) return '';
  let start = 0;
  let end = header.length;
  while (start < end && isSpace(header.charCodeAt(start))) start++;
  while (end > start && isSpace(header.charCodeAt(end - 1))) end--;
  // "bearer" + at least one space + at least one token character.
  if (end - start < 8) return '';
  const scheme = header.slice(start, start + 6);
  if (scheme !== 'Bearer' && scheme.toLowerCase() !== 'bearer') return '';
  let tokenStart = start + 6;
  if (!isSpace(header.charCodeAt(tokenStart))) return '';
  while (tokenStart < end && isSpace(header.charCodeAt(tokenStart))) tokenStart++;
  return header.slice(tokenStart, end);
}
