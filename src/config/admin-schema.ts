// Admin API tokens (docs/admin-api.md "Tokens"): hashed when the config is read, never kept raw.
import { createHash } from 'node:crypto';
import { z } from 'zod';

const ADMIN_TOKEN_NAME = /^[A-Za-z0-9._@-]{1,64}$/;
/** Below this a token could be guessed; generate one with `openssl rand -hex 32`. */
export const MIN_ADMIN_TOKEN_CHARS = 16;

/** SHA-256 of an admin token, the only form the gateway keeps (compared in constant time). */
export function adminTokenDigest(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

export const adminTokenSchema = z
  .strictObject({
    name: z.string().regex(ADMIN_TOKEN_NAME, 'letters, digits, ".", "_", "@" or "-", at most 64'),
    token: z.string().min(MIN_ADMIN_TOKEN_CHARS, `at least ${MIN_ADMIN_TOKEN_CHARS} characters (e.g. openssl rand -hex 32)`).optional(),
    token_sha256: z.string().regex(/^[0-9a-fA-F]{64}$/, 'the lowercase hex SHA-256 of the token (64 characters)').optional(),
    role: z.enum(['admin', 'viewer']),
  })
  .refine((t) => (t.token === undefined) !== (t.token_sha256 === undefined), { message: 'set exactly one of "token" and "token_sha256"' })
  // Hashed here, at load: the raw token is never held past parsing.
  .transform((t) => ({ name: t.name, role: t.role, sha256: t.token !== undefined ? adminTokenDigest(t.token) : Buffer.from(t.token_sha256!, 'hex') }));
