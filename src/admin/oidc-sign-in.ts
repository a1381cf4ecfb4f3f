// Dashboard sign-in through the operator's identity provider (docs/identity.md "Dashboard
// sign-in"), with openid-client: the authorization code flow with PKCE (S256), `state` and
// `nonce`. GET /dashboard/oidc/login sends the browser to the provider; the provider sends it
// back to /dashboard/oidc/callback, where openid-client redeems the code and checks the ID
// token (signature, issuer, audience, nonce); the role comes from the configured claim, and
// the person gets the same HttpOnly session cookie an admin token's sign-in gives.
//
// A login in progress is kept here (by `state`, for ten minutes, a bounded number) with its
// PKCE verifier and nonce, and bound to the browser that started it by a cookie holding the
// state, so a callback URL planted in another browser (login CSRF) signs nobody in.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import * as client from 'openid-client';
import type { Clock } from '../clock.js';
import type { AdminOidcConfig } from '../config/admin-oidc-schema.js';
import { GatewayError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { AdminRole } from './admin-auth.js';
import type { DashboardSessions, SessionLimits, SignedInPerson } from './dashboard-sessions.js';
import { OIDC_CALLBACK_PATH, OIDC_LOGIN_PATH } from './oidc-paths.js';
import { readCookie, servedOverTls, sessionCookie } from './session-cookie.js';

export { OIDC_CALLBACK_PATH, OIDC_LOGIN_PATH };
const STATE_COOKIE = 'agentgw_oidc_state';
const LOGIN_TTL_MS = 10 * 60_000;
/** Logins in progress at most; past it the oldest is forgotten (its callback then fails cleanly). */
const MAX_PENDING_LOGINS = 1_000;

interface PendingLogin {
  verifier: string;
  nonce: string;
  redirectUri: string;
  startedAtMs: number;
}

/** The role the person's claims give: admin when any value is in roles.admin, else viewer when any is in roles.viewer. */
export function roleFromClaims(claims: Record<string, unknown>, roles: AdminOidcConfig['roles']): AdminRole | undefined {
  const value = claims[roles.claim];
  const values = typeof value === 'string' ? [value] : Array.isArray(value) ? value.filter((entry): entry is string => typeof entry === 'string') : [];
  if (values.some((entry) => roles.admin.includes(entry))) return 'admin';
  if (values.some((entry) => roles.viewer.includes(entry))) return 'viewer';
  return undefined;
}

function sameText(a: string, b: string): boolean {
  const x = createHash('sha256').update(a).digest();
  const y = createHash('sha256').update(b).digest();
  return timingSafeEqual(x, y);
}

export class OidcSignIn {
  private discovered: Promise<client.Configuration> | undefined = undefined;
  private discoveredFor: AdminOidcConfig | undefined = undefined;
  private readonly pending = new Map<string, PendingLogin>();

  constructor(
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {}

  /** The provider's configuration, read once per admin.oidc (a reload that changes it reads again; a failed read is tried again next time). */
  private configuration(oidc: AdminOidcConfig): Promise<client.Configuration> {
    if (this.discovered === undefined || this.discoveredFor !== oidc) {
      this.discoveredFor = oidc;
      const issuer = new URL(oidc.issuer);
      this.discovered = client.discovery(issuer, oidc.clientId, undefined, client.ClientSecretBasic(oidc.clientSecret), issuer.protocol === 'http:' ? { execute: [client.allowInsecureRequests] } : {});
      this.discovered.catch(() => (this.discovered = undefined));
    }
    return this.discovered;
  }

  /** GET /dashboard/oidc/login: a new login, and the browser sent to the provider. */
  async login(req: IncomingMessage, res: ServerResponse, oidc: AdminOidcConfig): Promise<void> {
    const configuration = await this.configuration(oidc).catch((error: unknown) => {
      this.logger.warn({ issuer: oidc.issuer, err: (error as Error).message }, 'the identity provider could not be read for dashboard sign-in');
      throw new GatewayError('store_unavailable', { retryAfterSeconds: 5, message: 'The identity provider cannot be reached right now; sign in with an admin token, or retry.' });
    });
    const nowMs = this.clock.now();
    this.sweep(nowMs);
    const state = client.randomState();
    const verifier = client.randomPKCECodeVerifier();
    const nonce = client.randomNonce();
    const redirectUri = oidc.redirectUri ?? `${servedOverTls(req) ? 'https' : 'http'}://${req.headers.host}${OIDC_CALLBACK_PATH}`;
    this.pending.set(state, { verifier, nonce, redirectUri, startedAtMs: nowMs });
    const target = client.buildAuthorizationUrl(configuration, {
      redirect_uri: redirectUri,
      scope: oidc.scopes.join(' '),
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    });
    // SameSite=Lax: the provider's redirect back is a cross-site navigation, which a Strict cookie would not follow.
    res.setHeader('Set-Cookie', `${STATE_COOKIE}=${state}; Max-Age=${LOGIN_TTL_MS / 1000}; Path=${OIDC_CALLBACK_PATH}; HttpOnly; SameSite=Lax${servedOverTls(req) ? '; Secure' : ''}`);
    res.writeHead(302, { Location: target.href, 'Cache-Control': 'no-store', 'Content-Length': 0 });
    res.end();
  }

  /** GET /dashboard/oidc/callback: the code redeemed, the person's role decided, a session opened. */
  async callback(req: IncomingMessage, res: ServerResponse, url: URL, oidc: AdminOidcConfig, sessions: DashboardSessions, limits: SessionLimits): Promise<void> {
    const state = url.searchParams.get('state') ?? '';
    const browserState = readCookie(req.headers.cookie, STATE_COOKIE) ?? '';
    const login = this.pending.get(state);
    if (login === undefined || browserState === '' || !sameText(state, browserState) || this.clock.now() - login.startedAtMs > LOGIN_TTL_MS) {
      throw new GatewayError('invalid_admin_token', { message: 'This sign-in was not started in this browser, or took too long; start again from the dashboard.' });
    }
    this.pending.delete(state);
    const configuration = await this.configuration(oidc);
    const current = new URL(`${login.redirectUri}${url.search}`);
    let claims: Record<string, unknown>;
    try {
      const tokens = await client.authorizationCodeGrant(configuration, current, { pkceCodeVerifier: login.verifier, expectedState: state, expectedNonce: login.nonce, idTokenExpected: true });
      claims = (tokens.claims() ?? {}) as Record<string, unknown>;
    } catch (error) {
      // The provider's error or a failed check: never the code or a token in the log.
      this.logger.warn({ event: 'dashboard_oidc_refused', reason: (error as Error).name, code: (error as { code?: unknown }).code }, 'dashboard sign-in through the identity provider failed');
      throw new GatewayError('invalid_admin_token', { message: 'The identity provider did not sign you in; start again from the dashboard.' });
    }
    const role = roleFromClaims(claims, oidc.roles);
    const sub = typeof claims.sub === 'string' ? claims.sub : '';
    if (role === undefined || sub === '') {
      this.logger.warn({ event: 'dashboard_oidc_no_role', sub }, 'dashboard sign-in refused: the person has no gateway role');
      throw new GatewayError('insufficient_role', { message: `Your account has no role for this gateway (the "${oidc.roles.claim}" claim names neither an admin nor a viewer group).` });
    }
    const person: SignedInPerson = { sub, email: typeof claims.email === 'string' ? claims.email : null, role };
    const created = sessions.createForPerson(person, limits);
    res.setHeader('Set-Cookie', [sessionCookie(req, created.sessionId, limits.maxAgeMs), `${STATE_COOKIE}=; Max-Age=0; Path=${OIDC_CALLBACK_PATH}; HttpOnly; SameSite=Lax`]);
    this.logger.info({ event: 'dashboard_sign_in', actor: `oidc:${person.email ?? sub}`, sub, role }, 'dashboard sign-in through the identity provider');
    res.writeHead(303, { Location: '/dashboard/', 'Cache-Control': 'no-store', 'Content-Length': 0 });
    res.end();
  }

  private sweep(nowMs: number): void {
    for (const [state, login] of this.pending) if (nowMs - login.startedAtMs > LOGIN_TTL_MS) this.pending.delete(state);
    while (this.pending.size >= MAX_PENDING_LOGINS) this.pending.delete(this.pending.keys().next().value!);
  }
}
