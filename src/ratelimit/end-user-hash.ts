// The end user's part of a Redis key name (docs/design.md, "Agent-aware policy"): `context.user_id` never
// appears in clear. The hash is salted with the subject, so one user id of two accounts
// gives two unrelated names, and the names alone do not tell which accounts share an end
// user (decision 0061). Requests without a user_id share the hash of the empty id: the
// subject's anonymous end user, counted like any other.
import { createHash } from 'node:crypto';
import type { EndUserHash } from './rate-limiter.js';

/** Longest accepted `context.user_id`, in characters (validate-chat-request.ts refuses longer). */
export const MAX_USER_ID_CHARS = 256;

/** 128 bits of SHA-256 over subject and user id, base64url (22 characters). */
export function endUserHash(subject: string, userId: string | null): EndUserHash {
  return createHash('sha256').update(subject).update('\0').update(userId ?? '').digest('base64url').slice(0, 22);
}
