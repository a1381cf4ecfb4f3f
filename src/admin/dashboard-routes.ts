// Everything under /dashboard on the admin listener (docs/dashboard.md): the built page and
// its assets, and the sign-in session API (GET / POST / DELETE /dashboard/session). Every
// answer carries the dashboard's security headers; with no admin token configured every
// path answers 404, as /admin/v1 does.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import { adminTokenDigest } from '../config/schema.js';
import { GatewayError } from '../errors.js';
import type { AdminActor } from './admin-auth.js';
import type { AdminApiDeps } from './admin-context.js';
import { sendJson } from './admin-context.js';
import { readJsonBody, validate } from './admin-request-body.js';
import { authenticateAdminRequest, requireCsrf, requireSameOrigin, requireSession, sessionLimitsOf } from './admin-session-auth.js';
import { DASHBOARD_DIR, loadDashboardAssets, sendAsset, type DashboardAsset } from './dashboard-assets.js';
import { setDashboardSecurityHeaders } from './dashboard-headers.js';
import { DashboardSessions, tokenByDigest } from './dashboard-sessions.js';
import { clearedSessionCookie, sessionCookie, sessionIdOf } from './session-cookie.js';
import { OIDC_CALLBACK_PATH, OIDC_LOGIN_PATH } from './oidc-paths.js';
import type { OidcSignIn } from './oidc-sign-in.js';

const DASHBOARD_ROOT = '/dashboard';
export const SESSION_PATH = '/dashboard/session';
/** Whether sign-in through the identity provider is offered (GET: 200 with the issuer, or 404). */
export const OIDC_PATH = '/dashboard/oidc';

const signInBody = z.strictObject({ token: z.string().min(1, 'the admin token') });

export function isDashboardPath(path: string): boolean {
  return path === DASHBOARD_ROOT || path.startsWith(`${DASHBOARD_ROOT}/`);
}

export interface Dashboard {
  /** Answers a /dashboard path (isDashboardPath); throws GatewayError for the error envelope. */
  handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void>;
  /** The admin API's caller: a bearer admin token, or a dashboard session (with CSRF on writes). */
  authenticate(req: IncomingMessage): AdminActor;
}

export function createDashboard(deps: AdminApiDeps, options: { assetsDir?: string } = {}): Dashboard {
  const sessions = new DashboardSessions(deps.clock);
  // openid-client only with admin.oidc (decision 0108): imported now when it is configured at
  // start, else at the first sign-in after a reload turned it on; never without it.
  let oidcSignIn: Promise<OidcSignIn> | undefined;
  const loadOidcSignIn = (): Promise<OidcSignIn> => {
    if (oidcSignIn === undefined) {
      oidcSignIn = import('./oidc-sign-in.js').then((module) => new module.OidcSignIn(deps.clock, deps.logger));
      // A failed import is tried again at the next sign-in.
      oidcSignIn.catch(() => (oidcSignIn = undefined));
    }
    return oidcSignIn;
  };
  if (deps.config().admin.oidc !== undefined) void loadOidcSignIn().catch((error: unknown) => deps.logger.error({ err: (error as Error).message }, 'the dashboard sign-in module could not be loaded'));
  const assetsDir = options.assetsDir ?? DASHBOARD_DIR;
  let assets: Promise<Map<string, DashboardAsset>> | undefined;
  const loadAssets = (): Promise<Map<string, DashboardAsset>> => {
    assets ??= loadDashboardAssets(assetsDir).then((found) => {
      // Not built yet (or a failed read): look again on the next request.
      if (found.size === 0) assets = undefined;
      return found;
    });
    assets.catch(() => (assets = undefined));
    return assets;
  };

  async function serveSession(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const config = deps.config();
    if (req.method === 'GET' || req.method === 'HEAD') {
      const session = requireSession(req, config, sessions);
      return sendJson(res, 200, sessionView(session.actor, session.csrfToken, session.expiresAtMs));
    }
    if (req.method === 'POST') {
      requireSameOrigin(req);
      const { token } = validate(signInBody, await readJsonBody(req));
      const digest = adminTokenDigest(token);
      const match = tokenByDigest(digest, config.admin.tokens);
      if (match === undefined) {
        deps.logger.warn({ event: 'dashboard_sign_in_refused' }, 'dashboard sign-in refused: unknown admin token');
        throw new GatewayError('invalid_admin_token');
      }
      // A fresh id at every sign-in; a session the browser still carried is ended.
      const previous = sessionIdOf(req);
      if (previous !== undefined) sessions.delete(previous);
      const limits = sessionLimitsOf(config);
      const created = sessions.create(digest, limits);
      res.setHeader('Set-Cookie', sessionCookie(req, created.sessionId, limits.maxAgeMs));
      deps.logger.info({ event: 'dashboard_sign_in', actor: match.name, role: match.role }, 'dashboard sign-in');
      return sendJson(res, 201, sessionView({ name: match.name, role: match.role }, created.csrfToken, created.expiresAtMs));
    }
    if (req.method === 'DELETE') {
      const sessionId = sessionIdOf(req);
      const live = sessionId === undefined ? undefined : sessions.use(sessionId, config.admin.tokens, sessionLimitsOf(config), config.admin.oidc !== undefined);
      if (live !== undefined) {
        requireCsrf(req, live);
        sessions.delete(sessionId!);
        deps.logger.info({ event: 'dashboard_sign_out', actor: live.actor.name }, 'dashboard sign-out');
      }
      res.setHeader('Set-Cookie', clearedSessionCookie(req));
      res.setHeader('Cache-Control', 'no-store');
      res.statusCode = 204;
      res.end();
      return;
    }
    throw new GatewayError('method_not_allowed', { message: 'This route accepts GET, POST and DELETE.', headers: { Allow: 'GET, HEAD, POST, DELETE' } });
  }

  /** Sign-in through the identity provider (oidc-sign-in.ts); 404 without admin.oidc. */
  async function serveOidc(req: IncomingMessage, res: ServerResponse, url: URL, path: string): Promise<void> {
    const config = deps.config();
    const oidc = config.admin.oidc;
    if (oidc === undefined) throw new GatewayError('not_found', { message: 'Sign-in through an identity provider is off (admin.oidc).' });
    if (req.method !== 'GET' && req.method !== 'HEAD') throw new GatewayError('method_not_allowed', { message: 'This route accepts GET.', headers: { Allow: 'GET, HEAD' } });
    if (path === OIDC_PATH) return sendJson(res, 200, { issuer: oidc.issuer, login: OIDC_LOGIN_PATH });
    const signIn = await loadOidcSignIn();
    if (path === OIDC_LOGIN_PATH) return signIn.login(req, res, oidc);
    return signIn.callback(req, res, url, oidc, sessions, sessionLimitsOf(config));
  }

  async function serveAsset(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      throw new GatewayError('method_not_allowed', { message: 'The dashboard pages accept GET and HEAD.', headers: { Allow: 'GET, HEAD' } });
    }
    const files = await loadAssets();
    if (files.size === 0) throw new GatewayError('not_found', { message: 'The dashboard is not built; run `npm run build`.' });
    const name = path === `${DASHBOARD_ROOT}/` ? 'index.html' : path.slice(DASHBOARD_ROOT.length + 1);
    const asset = files.get(name);
    if (asset === undefined) throw new GatewayError('not_found', { message: 'No such dashboard file.' });
    sendAsset(req, res, asset);
  }

  return {
    async handle(req, res, url) {
      setDashboardSecurityHeaders(res);
      const config = deps.config();
      if (config.admin.tokens.length === 0 && config.admin.oidc === undefined) throw new GatewayError('not_found', { message: 'The dashboard is off: no admin token is configured (admin.tokens).' });
      const path = url.pathname;
      if (path === OIDC_PATH || path === OIDC_LOGIN_PATH || path === OIDC_CALLBACK_PATH) return serveOidc(req, res, url, path);
      if (path === DASHBOARD_ROOT) {
        res.writeHead(308, { Location: `${DASHBOARD_ROOT}/`, 'Content-Length': 0, 'Cache-Control': 'no-store' });
        res.end();
        return;
      }
      if (path === SESSION_PATH) return serveSession(req, res);
      return serveAsset(req, res, path);
    },
    authenticate: (req) => authenticateAdminRequest(req, deps.config(), sessions),
  };
}

function sessionView(actor: AdminActor, csrfToken: string, expiresAtMs: number): Record<string, string> {
  return { name: actor.name, role: actor.role, csrf_token: csrfToken, expires_at: new Date(expiresAtMs).toISOString() };
}
