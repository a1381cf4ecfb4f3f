// Who is calling the admin API: an `Authorization: Bearer` admin token (admin-auth.ts), or
// else a dashboard session cookie. A browser attaches the cookie by itself, so a write made
// with it must also prove it comes from the dashboard page: the session's CSRF token in
// X-CSRF-Token (which only a page of this origin can read, from GET /dashboard/session) and,
// when the browser sends them, an Origin of this host and Sec-Fetch-Site: same-origin.
// A bearer token is never attached by a browser on its own, so it needs neither.
import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { GatewayConfig } from '../config/schema.js';
import { GatewayError } from '../errors.js';
import { authenticateAdmin, type AdminActor } from './admin-auth.js';
import type { ActiveSession, DashboardSessions } from './dashboard-sessions.js';
import { sessionIdOf } from './session-cookie.js';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export function isSafeMethod(method: string | undefined): boolean {
  return SAFE_METHODS.has(method ?? 'GET');
}

export function sessionLimitsOf(config: GatewayConfig): { idleTimeoutMs: number; maxAgeMs: number } {
  return { idleTimeoutMs: config.admin.sessionIdleTimeoutMs, maxAgeMs: config.admin.sessionMaxAgeMs };
}

/**
 * Whether the request may come from a page of another site: Sec-Fetch-Site other than
 * same-origin, or an Origin whose host is not the one the request was sent to. Browsers
 * that send neither header leave the check to the CSRF token and SameSite.
 */
export function isCrossSite(req: IncomingMessage): boolean {
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin') return true;
  const origin = req.headers.origin;
  if (origin === undefined) return false;
  try {
    return new URL(origin).host !== req.headers.host;
  } catch {
    // "null" (a sandboxed or privacy-sensitive context) and anything unparsable.
    return true;
  }
}

export function requireSameOrigin(req: IncomingMessage): void {
  if (isCrossSite(req)) throw new GatewayError('csrf_token_invalid', { message: 'This request came from another site (Origin or Sec-Fetch-Site); the dashboard only accepts its own pages.' });
}

function csrfMatches(presented: string | string[] | undefined, expected: string): boolean {
  if (typeof presented !== 'string') return false;
  const a = Buffer.from(presented, 'utf8');
  const b = Buffer.from(expected, 'utf8');
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The caller's live session, or 401 when the cookie is missing or its session ended. */
export function requireSession(req: IncomingMessage, config: GatewayConfig, sessions: DashboardSessions): ActiveSession & { sessionId: string } {
  const sessionId = sessionIdOf(req);
  if (sessionId === undefined) throw new GatewayError('missing_admin_token', { message: 'Sign in to the dashboard, or send an admin token as "Authorization: Bearer <token>".' });
  const session = sessions.use(sessionId, config.admin.tokens, sessionLimitsOf(config), config.admin.oidc !== undefined);
  if (session === undefined) throw new GatewayError('invalid_admin_token', { message: 'The dashboard session has ended (signed out, idle too long, or too old); sign in again.' });
  return { ...session, sessionId };
}

/** A write made with a session: same origin, and the session's CSRF token (403 csrf_token_invalid). */
export function requireCsrf(req: IncomingMessage, session: ActiveSession): void {
  requireSameOrigin(req);
  if (!csrfMatches(req.headers['x-csrf-token'], session.csrfToken)) {
    throw new GatewayError('csrf_token_invalid');
  }
}

/** The admin API's caller: a bearer admin token when one is sent, else a dashboard session. */
export function authenticateAdminRequest(req: IncomingMessage, config: GatewayConfig, sessions: DashboardSessions): AdminActor {
  if (req.headers.authorization !== undefined) return authenticateAdmin(req.headers.authorization, config.admin.tokens);
  const session = requireSession(req, config, sessions);
  if (!isSafeMethod(req.method)) requireCsrf(req, session);
  return session.actor;
}
