// JWT access tokens as credentials (docs/identity.md): the token's issuer (one of auth.jwt)
// is read from its unverified payload only to pick which issuer's rules apply; jose's
// jwtVerify then checks the signature with a key of that issuer's JWKS (issuer-keys.ts),
// `iss`, `aud`, `exp` and `nbf` with 60 s of skew, and `alg` against the issuer's list.
// Nothing of JOSE is done here by hand.
//
// A verified token is remembered with the caller its claims give (token-claims.ts) until it
// expires: a client sends the same token for many requests, and a signature check per request
// would cost more than the rest of the request. What can change while a token is remembered
// is checked on every request: its expiry, its revocation (token-revocations.ts), the
// route's audience and the route's scope: the agent scope on the chat routes, the MCP scope
// (the servers its mcp claim names) on an MCP endpoint.
import { decodeJwt, errors, jwtVerify, type JWTPayload } from 'jose';
import type { Clock } from '../../clock.js';
import type { JwtIssuerConfig } from '../../config/auth-schema.js';
import { GatewayError, invalidTokenError } from '../../errors.js';
import type { AuthenticatedKey } from '../../keys/key-record.js';
import { MCP_AGGREGATE_TARGET, mcpTarget } from '../../keys/mcp-scope.js';
import type { Logger } from '../../logger.js';
import { boundOnFirstUse } from '../../metrics/hot-path-metrics.js';
import { metrics } from '../../metrics/metrics.js';
import type { AuthenticateInput } from '../authenticator.js';
import type { FailedAuthThrottle } from '../failed-auth-throttle.js';
import { IssuerKeys, IssuerKeysUnavailable } from './issuer-keys.js';
import { ClaimError, tokenCaller, type AgentScope } from './token-claims.js';
import type { TokenRevocations } from './token-revocations.js';
import { looksLikeJwt } from './token-shape.js';

/** Clock skew allowed on `exp` and `nbf`, in seconds. */
export const CLOCK_SKEW_SECONDS = 60;
/** Verified tokens remembered at most (the oldest goes first); each holds its text and caller. */
export const MAX_CACHED_TOKENS = 10_000;

interface VerifiedToken {
  key: AuthenticatedKey;
  resolved: Promise<AuthenticatedKey>;
  agents: AgentScope;
  /** The MCP servers its mcp claim names, as the authenticator's targets (`mcp:{server}`). */
  mcpTargets: ReadonlySet<string>;
  sub: string;
  jti: string | null;
  /** `exp` plus the skew, epoch ms. */
  usableUntilMs: number;
  /** The token's `aud`, as a list. */
  audiences: readonly string[];
  /** Whether `aud` names one of the issuer's configured audiences (the chat routes'). */
  forChat: boolean;
}

interface Issuer {
  config: JwtIssuerConfig;
  keys: IssuerKeys;
}

export interface JwtAuthenticatorOptions {
  issuers: readonly JwtIssuerConfig[];
  clock: Clock;
  logger: Logger;
  throttle: FailedAuthThrottle;
  revocations: TokenRevocations;
  /** Whether a plan is configured (the running config's plans). */
  hasPlan(plan: string): boolean;
}

/** The last remembered token a connection presented, and what it verified as. */
interface ConnectionToken {
  token: string;
  entry: VerifiedToken;
}

export class JwtAuthenticator {
  private readonly issuers = new Map<string, Issuer>();
  private readonly verified = new Map<string, VerifiedToken>();
  // A client on a keep-alive connection sends the same token on every request: a comparison
  // with the last one the connection sent replaces the lookup in `verified`, whose hash of a
  // 1–4 KiB string is most of a remembered token's cost (decision 0109). Held only while the
  // connection is (a WeakMap on the socket), like the key authenticator's memo; the entry is
  // the one the exact same text verified as, and every check of `usable` still runs.
  private readonly connectionTokens = new WeakMap<object, ConnectionToken>();
  // Series bound once (on first use): a label lookup would otherwise run per request.
  private readonly counters = {
    verified: boundOnFirstUse(metrics.jwtVerifications, 'verified'),
    cached: boundOnFirstUse(metrics.jwtVerifications, 'cached'),
    invalid: boundOnFirstUse(metrics.jwtVerifications, 'invalid'),
    revoked: boundOnFirstUse(metrics.jwtVerifications, 'revoked'),
  };

  constructor(private readonly options: JwtAuthenticatorOptions) {
    for (const config of options.issuers) this.issuers.set(config.issuer, { config, keys: new IssuerKeys(config, options.clock, options.logger) });
  }

  /** The caller of a remembered token that passes every check now; otherwise undefined, nothing counted. */
  acceptedNow(token: string, input: AuthenticateInput): AuthenticatedKey | undefined {
    const entry = this.remembered(token, input.connection);
    if (entry === undefined || !this.usable(entry, input, this.options.clock.now())) return undefined;
    if (this.options.throttle.blockedForMs(input.clientIp) > 0) return undefined;
    this.counters.cached.inc();
    return entry.key;
  }

  authenticate(token: string, input: AuthenticateInput): Promise<AuthenticatedKey> {
    const entry = this.remembered(token, input.connection);
    const now = this.options.clock.now();
    if (entry !== undefined && this.usable(entry, input, now) && this.options.throttle.blockedForMs(input.clientIp) === 0) {
      this.counters.cached.inc();
      return entry.resolved;
    }
    try {
      this.options.throttle.check(input.clientIp);
    } catch (error) {
      metrics.authFailures.labels('rate_limit_exceeded').inc();
      return Promise.reject(error);
    }
    if (entry !== undefined) {
      if (now < entry.usableUntilMs) return this.refuse(entry, input, now);
      this.verified.delete(token);
      if (input.connection !== undefined) this.connectionTokens.delete(input.connection);
    }
    if (!looksLikeJwt(token)) return this.fail(input.clientIp, 'not a JWT');
    return this.verify(token, input);
  }

  /** The verified token this exact text is remembered as: the connection's last one when it is the same text, else the cache's. */
  private remembered(token: string, connection: object | undefined): VerifiedToken | undefined {
    if (connection === undefined) return this.verified.get(token);
    const last = this.connectionTokens.get(connection);
    if (last !== undefined && last.token === token) return last.entry;
    const entry = this.verified.get(token);
    if (entry !== undefined) this.connectionTokens.set(connection, { token, entry });
    return entry;
  }

  private usable(entry: VerifiedToken, input: AuthenticateInput, now: number): boolean {
    return (
      now < entry.usableUntilMs &&
      (input.audience === undefined ? entry.forChat : entry.audiences.includes(input.audience)) &&
      (input.audience === undefined ? entry.agents === 'all' || entry.agents.has(input.agentId) : entry.mcpTargets.has(input.agentId)) &&
      !this.options.revocations.refuses(entry.sub, entry.jti, now)
    );
  }

  /** A remembered, unexpired token that failed a check of this request: which one. */
  private refuse(entry: VerifiedToken, input: AuthenticateInput, now: number): Promise<never> {
    if (this.options.revocations.refuses(entry.sub, entry.jti, now)) {
      this.counters.revoked.inc();
      return this.fail(input.clientIp, 'revoked', 'The access token has been revoked.');
    }
    if (input.audience === undefined ? !entry.forChat : !entry.audiences.includes(input.audience)) {
      return this.fail(input.clientIp, 'audience', 'The access token\'s "aud" claim does not name this resource.');
    }
    metrics.authFailures.labels('agent_not_allowed').inc();
    return Promise.reject(new GatewayError('agent_not_allowed', { message: input.audience === undefined ? 'The access token is not allowed to use this agent.' : 'The access token is not allowed to use this MCP server.' }));
  }

  private async verify(token: string, input: AuthenticateInput): Promise<AuthenticatedKey> {
    await this.options.throttle.checkShared(input.clientIp).catch((error: unknown) => {
      metrics.authFailures.labels('rate_limit_exceeded').inc();
      throw error;
    });
    let payload: JWTPayload;
    let issuer: Issuer;
    try {
      // Unverified, only to find the issuer whose rules apply; jwtVerify checks `iss` again.
      const claimedIssuer = decodeJwt(token).iss;
      const known = claimedIssuer === undefined ? undefined : this.issuers.get(claimedIssuer);
      if (known === undefined) return await this.fail(input.clientIp, 'unknown issuer', 'The access token\'s issuer is not one this gateway accepts.');
      issuer = known;
      ({ payload } = await jwtVerify(token, issuer.keys.resolve, {
        issuer: issuer.config.issuer,
        audience: input.audience ?? issuer.config.audiences,
        algorithms: issuer.config.algorithms,
        clockTolerance: CLOCK_SKEW_SECONDS,
        requiredClaims: ['exp', 'sub'],
        currentDate: new Date(this.options.clock.now()),
      }));
    } catch (error) {
      if (error instanceof GatewayError) throw error;
      return this.fail(input.clientIp, reasonOf(error), messageOf(error));
    }
    let caller;
    try {
      caller = tokenCaller(payload, issuer.config, this.options.hasPlan);
    } catch (error) {
      if (!(error instanceof ClaimError)) throw error;
      return this.fail(input.clientIp, 'claims', `The access token cannot be used: ${error.message}.`);
    }
    this.counters.verified.inc();
    const audiences = typeof payload.aud === 'string' ? [payload.aud] : (payload.aud ?? []);
    const entry: VerifiedToken = {
      key: caller.key,
      resolved: Promise.resolve(caller.key),
      agents: caller.agents,
      mcpTargets: mcpTargetsOf(caller.key.mcp),
      sub: caller.key.token!.sub,
      jti: caller.key.token!.jti,
      usableUntilMs: (payload.exp! + CLOCK_SKEW_SECONDS) * 1000,
      audiences,
      forChat: audiences.some((audience) => issuer.config.audiences.includes(audience)),
    };
    this.remember(token, entry);
    const now = this.options.clock.now();
    if (this.usable(entry, input, now)) return entry.key;
    return this.refuse(entry, input, now);
  }

  /** The oldest entry makes room (O(1) whatever arrives); an expired one is dropped when it is next presented. */
  private remember(token: string, entry: VerifiedToken): void {
    if (this.verified.size >= MAX_CACHED_TOKENS) this.verified.delete(this.verified.keys().next().value!);
    this.verified.set(token, entry);
  }

  private async fail(clientIp: string, reason: string, message?: string): Promise<never> {
    this.counters.invalid.inc();
    // The reason names the check, never the token or a claim's value.
    this.options.logger.debug({ reason }, 'access token refused');
    const refusal = await this.options.throttle.recordFailure(clientIp);
    if (refusal !== undefined) {
      metrics.authFailures.labels('rate_limit_exceeded').inc();
      throw refusal;
    }
    metrics.authFailures.labels('invalid_token').inc();
    throw invalidTokenError(message);
  }
}

/** The servers an mcp claim names as targets (`mcp:{server}`), and the aggregated endpoint's when it names any, as a key's scope gives them (key-cache.ts). */
function mcpTargetsOf(scope: AuthenticatedKey['mcp']): ReadonlySet<string> {
  const servers = Object.keys(scope ?? {});
  const targets = new Set(servers.map(mcpTarget));
  if (servers.length > 0) targets.add(MCP_AGGREGATE_TARGET);
  return targets;
}

function reasonOf(error: unknown): string {
  if (error instanceof IssuerKeysUnavailable) return 'issuer keys unavailable';
  if (error instanceof errors.JOSEError) return error.code;
  return 'malformed';
}

/** What the client is told: which check failed, never more of the token than it sent. */
function messageOf(error: unknown): string {
  if (error instanceof errors.JWTExpired) return 'The access token has expired.';
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.claim === 'nbf') return 'The access token is not valid yet.';
    return `The access token's "${error.claim}" claim is not acceptable.`;
  }
  if (error instanceof IssuerKeysUnavailable) return "The access token's signing keys cannot be read from its issuer right now; it cannot be verified.";
  if (error instanceof errors.JOSEAlgNotAllowed) return "The access token's signing algorithm is not accepted.";
  if (error instanceof errors.JWKSNoMatchingKey) return "The access token is signed with a key its issuer does not publish.";
  if (error instanceof errors.JWSSignatureVerificationFailed) return "The access token's signature is not valid.";
  return 'The access token is not valid.';
}
