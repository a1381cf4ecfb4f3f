// Which lease a request draws on (decision 0074): its subject's, or, for a request counted for
// an end user, the lease of that (subject, end user), whose units were counted in the subject's
// windows and the end user's together. One string per lease, so the lease book, the turn's
// batches and the charges stay keyed alike; a subject never holds "\n" (key-service.ts's
// ACCOUNT_PATTERN and key ids), so the key reads back unambiguously.
import type { EndUserHash } from './rate-limiter.js';

const END_USER_MARK = '\nu';

/** The lease (and batch, and charge) key of a subject and an end user, or of the subject alone. */
export function leaseKey(subject: string, endUser: EndUserHash | undefined): string {
  return endUser === undefined ? subject : subject + END_USER_MARK + endUser;
}

/** The subject and end user a lease key names (its refund and renewal are counted for them). */
export function leaseOwner(key: string): { subject: string; endUser: EndUserHash | undefined } {
  const at = key.indexOf(END_USER_MARK);
  return at < 0 ? { subject: key, endUser: undefined } : { subject: key.slice(0, at), endUser: key.slice(at + END_USER_MARK.length) };
}
