// What both halves of token revocation share (docs/identity.md "Revocation"): the admin API
// writes through this interface whether or not JWT access tokens are on, and must not load the
// implementation (src/auth/jwt/token-revocations.ts) to do so: a gateway without auth.jwt
// loads nothing of src/auth/jwt/ (decision 0108).

export interface Revocation {
  kind: 'jti' | 'sub';
  value: string;
  /** Tokens it matches are refused until this time (epoch ms). */
  untilMs: number;
}

export interface TokenRevocations {
  /** Whether a token with this `sub` and `jti` (null: none) is refused now. */
  refuses(sub: string, jti: string | null, nowMs: number): boolean;
  /** Records a revocation; resolves once it is stored where every instance reads it. */
  revoke(revocation: Revocation): Promise<void>;
  close(): Promise<void>;
}

/** A revocation refused because too many are live (the admin API answers it 400). */
export class RevocationLimitError extends Error {
  override readonly name = 'RevocationLimitError';
}
