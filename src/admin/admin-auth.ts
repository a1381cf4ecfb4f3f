// Admin API authentication: `Authorization: Bearer <admin token>` against the configured
// tokens (admin.tokens), which the config keeps only as SHA-256 digests. The presented
// token is hashed and compared with every configured digest in constant time, so neither
// the comparison nor which token matched shows in the timing. Tokens are never logged.
import { timingSafeEqual } from 'node:crypto';
import { extractBearerToken } from '../auth/bearer-token.js';
import { adminTokenDigest, type AdminTokenConfig } from '../config/schema.js';
import { GatewayError } from '../errors.js';

export type AdminRole = AdminTokenConfig['role'];

/** Who made an admin request: the token's configured name (the audit trail's actor) and role. */
export interface AdminActor {
  name: string;
  role: AdminRole;
  /** A person signed in through the identity provider (admin.oidc): their `sub` and email, for the admin audit trail. */
  sub?: string;
  email?: string | null;
}

/** Resolves the caller or throws 401 missing_admin_token / invalid_admin_token. */
export function authenticateAdmin(authorization: string | undefined, tokens: readonly AdminTokenConfig[]): AdminActor {
  const token = extractBearerToken(authorization);
  if (token === '') throw new GatewayError('missing_admin_token');
  const presented = adminTokenDigest(token);
  let match: AdminTokenConfig | undefined;
  for (const candidate of tokens) {
    // No early exit: every digest is compared whatever matched first.
    if (timingSafeEqual(presented, candidate.sha256) && match === undefined) match = candidate;
  }
  if (match === undefined) throw new GatewayError('invalid_admin_token');
  return { name: match.name, role: match.role };
}

/** Reads are open to both roles; anything that writes needs `admin` (403 insufficient_role). */
export function requireRole(actor: AdminActor, needed: AdminRole): void {
  if (needed === 'admin' && actor.role !== 'admin') throw new GatewayError('insufficient_role');
}
