// The end user's part of a Redis key name (docs/design.md, "Agent-aware policy"): `context.user_id` never
// appears in clear. The hash is salted with the subject, so one user id of two accounts
// gives two unrelated names, and the names alone do not tell which accounts share an end
// user (decision 0061). Requests without a user_id share the hash of the empty id: the
// subject's anonymous end user, counted like any other.
//
// Hashes are remembered for the end users seen last (decision 0076): a SHA-256 per request was
// a measurable share of a request's CPU, and an active end user sends many requests.
import { createHash } from 'node:crypto';
import type { EndUserHash } from './rate-limiter.js';

/** Longest accepted `context.user_id`, in characters (validate-chat-request.ts refuses longer). */
export const MAX_USER_ID_CHARS = 256;

/**
 * End users whose hash is remembered, across subjects: at most this many entries of at most
 * a subject, 256 characters of user id and 22 of hash each, whatever the clients send (the
 * oldest entry goes first, so a client cycling through ids only evicts, never grows memory).
 */
export const END_USER_HASHES_KEPT = 10_000;

const remembered = new Map<string, EndUserHash>();

/**
 * Whether a `context.user_id` names an end user: present and not blank. `""` and an id of
 * whitespace only name nobody (`""` hashes as the anonymous end user), so a plan that
 * requires the field refuses them like a missing one (docs/policy.md).
 */
export function namesEndUser(userId: string | null): userId is string {
  return userId !== null && userId.trim() !== '';
}

/** 128 bits of SHA-256 over subject and user id, base64url (22 characters). */
export function endUserHash(subject: string, userId: string | null): EndUserHash {
  const input = `${subject}\0${userId ?? ''}`;
  const known = remembered.get(input);
  if (known !== undefined) return known;
  const hash = createHash('sha256').update(input).digest('base64url').slice(0, 22);
  if (remembered.size >= END_USER_HASHES_KEPT) remembered.delete(remembered.keys().next().value!);
  remembered.set(input, hash);
  return hash;
}

/** How many end users' hashes are remembered now (tests: the bound holds). */
export function endUserHashesRemembered(): number {
  return remembered.size;
}
