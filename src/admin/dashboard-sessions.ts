// Dashboard sign-in sessions (docs/dashboard.md "Sessions"), kept in this process's memory:
// a restart signs everyone out, and in a cluster the primary (which serves the admin
// listener) holds them all. A session id is 256 random bits; the map is keyed by its SHA-256,
// so how long a lookup takes says nothing about the ids that exist. A session remembers which
// admin token opened it by digest and re-reads that token's name and role from the running
// config on every use: removing the token (or changing its role) on reload takes effect on
// its sessions at once. A session opened through the identity provider (admin.oidc,
// oidc-sign-in.ts) holds the person instead, with the role their ID token gave at sign-in; it
// ends when admin.oidc is removed.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../clock.js';
import type { AdminTokenConfig } from '../config/schema.js';
import type { AdminActor } from './admin-auth.js';

export interface SessionLimits {
  idleTimeoutMs: number;
  maxAgeMs: number;
}

/** Who signed in through the identity provider: their `sub`, email (when the provider gave one) and role. */
export interface SignedInPerson {
  sub: string;
  email: string | null;
  role: AdminActor['role'];
}

interface StoredSession {
  /** The admin token's digest, or for a person the digest of their `sub` (the per-owner session bound). */
  tokenDigest: Buffer;
  person?: SignedInPerson;
  csrfToken: string;
  createdAtMs: number;
  lastSeenAtMs: number;
}

export interface ActiveSession {
  actor: AdminActor;
  csrfToken: string;
  /** When the session ends at the latest (its absolute lifetime), epoch ms. */
  expiresAtMs: number;
}

/**
 * Live sessions per admin token: a sign-in past it pushes out that token's own least recently
 * used session, never another token's, so a viewer signing in in a loop cannot sign an admin
 * out. All sessions together are bounded by this times the configured tokens.
 */
export const MAX_SESSIONS_PER_TOKEN = 100;

function lookupKey(sessionId: string): string {
  return createHash('sha256').update(sessionId, 'utf8').digest('base64url');
}

/** The configured token with this digest, compared with every token in constant time. */
export function tokenByDigest(digest: Buffer, tokens: readonly AdminTokenConfig[]): AdminTokenConfig | undefined {
  let match: AdminTokenConfig | undefined;
  for (const candidate of tokens) if (timingSafeEqual(digest, candidate.sha256) && match === undefined) match = candidate;
  return match;
}

export class DashboardSessions {
  private readonly sessions = new Map<string, StoredSession>();

  constructor(
    private readonly clock: Clock,
    private readonly maxSessionsPerToken = MAX_SESSIONS_PER_TOKEN,
  ) {}

  get size(): number {
    return this.sessions.size;
  }

  /** Opens a session for an admin token already checked by the caller; returns its id. */
  create(tokenDigest: Buffer, limits: SessionLimits, person?: SignedInPerson): { sessionId: string; csrfToken: string; expiresAtMs: number } {
    const nowMs = this.clock.now();
    this.sweep(nowMs, limits);
    this.makeRoomFor(tokenDigest);
    const sessionId = randomBytes(32).toString('base64url');
    const csrfToken = randomBytes(32).toString('base64url');
    const session: StoredSession = { tokenDigest: Buffer.from(tokenDigest), csrfToken, createdAtMs: nowMs, lastSeenAtMs: nowMs };
    if (person !== undefined) session.person = person;
    this.sessions.set(lookupKey(sessionId), session);
    return { sessionId, csrfToken, expiresAtMs: nowMs + limits.maxAgeMs };
  }

  /** Opens a session for a person the identity provider signed in (their role already decided). */
  createForPerson(person: SignedInPerson, limits: SessionLimits): { sessionId: string; csrfToken: string; expiresAtMs: number } {
    return this.create(createHash('sha256').update(`oidc\n${person.sub}`, 'utf8').digest(), limits, person);
  }

  /**
   * The live session with this id, marked as used now; undefined (and forgotten) when it is
   * unknown, idle past the timeout, past its lifetime, or its token is no longer configured.
   */
  use(sessionId: string, tokens: readonly AdminTokenConfig[], limits: SessionLimits, peopleAllowed = false): ActiveSession | undefined {
    const key = lookupKey(sessionId);
    const session = this.sessions.get(key);
    if (session === undefined) return undefined;
    const nowMs = this.clock.now();
    const actor = this.actorOf(session, tokens, peopleAllowed);
    if (actor === undefined || this.expired(session, nowMs, limits)) {
      this.sessions.delete(key);
      return undefined;
    }
    session.lastSeenAtMs = nowMs;
    // Most recently used last, so eviction takes the first entry.
    this.sessions.delete(key);
    this.sessions.set(key, session);
    return { actor, csrfToken: session.csrfToken, expiresAtMs: session.createdAtMs + limits.maxAgeMs };
  }

  /** The session's actor: its token's name and role as configured now, or its person while people may sign in. */
  private actorOf(session: StoredSession, tokens: readonly AdminTokenConfig[], peopleAllowed: boolean): AdminActor | undefined {
    const person = session.person;
    if (person !== undefined) return peopleAllowed ? { name: `oidc:${person.email ?? person.sub}`, role: person.role, sub: person.sub, email: person.email } : undefined;
    const token = tokenByDigest(session.tokenDigest, tokens);
    return token === undefined ? undefined : { name: token.name, role: token.role };
  }

  /** Sign-out. */
  delete(sessionId: string): boolean {
    return this.sessions.delete(lookupKey(sessionId));
  }

  private expired(session: StoredSession, nowMs: number, limits: SessionLimits): boolean {
    return nowMs - session.lastSeenAtMs >= limits.idleTimeoutMs || nowMs - session.createdAtMs >= limits.maxAgeMs;
  }

  private sweep(nowMs: number, limits: SessionLimits): void {
    for (const [key, session] of this.sessions) if (this.expired(session, nowMs, limits)) this.sessions.delete(key);
  }

  /** Pushes out this token's least recently used sessions (the map runs from least to most recently used) until one more fits. */
  private makeRoomFor(tokenDigest: Buffer): void {
    const own: string[] = [];
    for (const [key, session] of this.sessions) if (session.tokenDigest.equals(tokenDigest)) own.push(key);
    for (let i = 0; i <= own.length - this.maxSessionsPerToken; i += 1) this.sessions.delete(own[i]!);
  }
}
