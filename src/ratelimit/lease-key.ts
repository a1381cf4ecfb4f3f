// Which lease a request draws on (decision 0074): its subject's, or, for a request counted in
// nested scopes (an end user; decision 0079 for sessions and the account), the lease of that
// (subject, scope instances), whose units were counted in all of their windows together. One
// string per lease, so the lease book, the turn's batches and the charges stay keyed alike; a
// subject never holds "\n" (key-service.ts's ACCOUNT_PATTERN and key ids), so the key reads
// back unambiguously.
import type { ScopeKeys } from './rate-limiter.js';

/** The lease (and batch, and charge) key of a subject and its scope instances, or of the subject alone. */
export function leaseKey(subject: string, scopes: ScopeKeys | undefined): string {
  return scopes === undefined ? subject : `${subject}\n${scopes.id}`;
}

/** The subject and scope instances a lease key names (its refund and renewal are counted for them). */
export function leaseOwner(key: string): { subject: string; scopes: ScopeKeys | undefined } {
  const parts = key.split('\n');
  const subject = parts[0]!;
  if (parts.length === 1) return { subject, scopes: undefined };
  let user: string | undefined;
  let session: string | undefined;
  let keyId: string | undefined;
  for (let i = 1; i < parts.length; i += 1) {
    const part = parts[i]!;
    if (part[0] === 'u') user = part.slice(1);
    else if (part[0] === 's') session = part.slice(1);
    else if (part[0] === 'k') keyId = part.slice(1);
  }
  return { subject, scopes: { user, session, key: keyId, id: key.slice(subject.length + 1) } };
}
