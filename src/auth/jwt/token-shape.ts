// Which bearer is a JWT (docs/identity.md): three base64url parts whose header is a JSON
// object (so its text starts "eyJ", the encoding of '{"'). Only the shape: jose decides
// everything else. Keys start "ha_" and never have this shape.

/** Longer bearers are refused without being parsed (real access tokens are 1–4 KiB). */
export const MAX_JWT_CHARS = 8_192;

const JWT_SHAPE = /^eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

export function looksLikeJwt(token: string): boolean {
  return token.length <= MAX_JWT_CHARS && JWT_SHAPE.test(token);
}
