// A verified token's claims as the caller the pipeline knows (docs/identity.md "Claims"):
// the same AuthenticatedKey a key gives, so plans, limits, budgets, audit, metrics and traces
// apply unchanged. Done once per token (the result is cached with it), never per request.
import { createHash } from 'node:crypto';
import type { JWTPayload } from 'jose';
import { keyLimitsSchema, type JwtIssuerConfig, type KeyLimits } from '../../config/schema.js';
import type { AuthenticatedKey } from '../../keys/key-record.js';
import { ACCOUNT_PATTERN } from '../../keys/key-service.js';
import { MAX_USER_ID_CHARS } from '../../ratelimit/end-user-hash.js';

/** What a token may call: every agent ("*" in its claim), or the ones it names. */
export type AgentScope = ReadonlySet<string> | 'all';

export interface TokenCaller {
  key: AuthenticatedKey;
  agents: AgentScope;
}

/** A claim the token lacks or holds in a shape the gateway cannot use: the token is refused (invalid_token). */
export class ClaimError extends Error {
  override readonly name = 'ClaimError';
}

const MAX_NAME_CHARS = 256;
const MAX_SCOPE_ENTRIES = 256;

/**
 * The caller's id in the audit record, the log line and (rate_limits.scope: key) its counters:
 * stable per issuer and subject, made of safe characters whatever the `sub` holds.
 */
export function tokenKeyId(issuer: string, sub: string): string {
  return `jwt_${createHash('sha256').update(`${issuer}\n${sub}`).digest('base64url').slice(0, 22)}`;
}

function stringClaim(payload: JWTPayload, name: string, maxChars = MAX_NAME_CHARS): string | undefined {
  const value = payload[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.length === 0 || value.length > maxChars) throw new ClaimError(`the "${name}" claim must be a non-empty string of at most ${maxChars} characters`);
  return value;
}

/** A list claim: a JSON array of strings, or one space-separated string (as OAuth's `scope`). */
function listClaim(payload: JWTPayload, name: string): string[] | undefined {
  const value = payload[name];
  if (value === undefined) return undefined;
  const list = typeof value === 'string' ? value.split(' ').filter((entry) => entry !== '') : value;
  if (!Array.isArray(list) || list.length > MAX_SCOPE_ENTRIES || !list.every((entry) => typeof entry === 'string' && entry.length > 0 && entry.length <= MAX_NAME_CHARS)) {
    throw new ClaimError(`the "${name}" claim must be a list of names`);
  }
  return list as string[];
}

/** The MCP scope claim, as a key record's `mcp`: { server: [tool, …] } ("*" for all of a server's tools). */
function mcpClaim(payload: JWTPayload, name: string): Record<string, string[]> | null {
  const value = payload[name];
  if (value === undefined) return null;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new ClaimError(`the "${name}" claim must map MCP servers to tool lists`);
  const scope: Record<string, string[]> = {};
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length > MAX_SCOPE_ENTRIES) throw new ClaimError(`the "${name}" claim names too many servers`);
  for (const [server, tools] of entries) {
    if (!Array.isArray(tools) || tools.length > MAX_SCOPE_ENTRIES || !tools.every((tool) => typeof tool === 'string' && tool.length > 0 && tool.length <= MAX_NAME_CHARS)) {
      throw new ClaimError(`the "${name}" claim must map MCP servers to tool lists`);
    }
    scope[server] = tools as string[];
  }
  return scope;
}

// Equal limits claims share one object, so the pipeline's per-(limits, plan) cache
// (src/policy/policy-cache.ts, by limits object and plan) compiles them once, not once per token.
const internedLimits = new Map<string, KeyLimits>();
const MAX_INTERNED_LIMITS = 1_000;

function limitsClaim(payload: JWTPayload, name: string | undefined): KeyLimits | null {
  if (name === undefined || payload[name] === undefined) return null;
  const value = payload[name];
  const text = JSON.stringify(value);
  const known = internedLimits.get(text);
  if (known !== undefined) return known;
  if (!keyLimitsSchema.safeParse(value).success) throw new ClaimError(`the "${name}" claim is not valid limits (the shape of a key's limits)`);
  const limits = value as KeyLimits;
  if (internedLimits.size < MAX_INTERNED_LIMITS) internedLimits.set(text, limits);
  return limits;
}

/** The caller a verified token stands for, or a ClaimError. `hasPlan` says whether a plan is configured. */
export function tokenCaller(payload: JWTPayload, issuer: JwtIssuerConfig, hasPlan: (plan: string) => boolean): TokenCaller {
  const names = issuer.claims;
  const sub = payload.sub;
  if (typeof sub !== 'string' || sub.length === 0 || sub.length > MAX_NAME_CHARS) throw new ClaimError(`the "sub" claim must be a non-empty string of at most ${MAX_NAME_CHARS} characters`);
  const account = stringClaim(payload, names.account);
  if (account === undefined) throw new ClaimError(`the token has no "${names.account}" claim (its account)`);
  // The same names a key's account may have: they go into counter names and usage groups.
  if (!ACCOUNT_PATTERN.test(account)) throw new ClaimError(`the "${names.account}" claim must be 1 to 128 letters, digits or . _ : @ -`);
  const claimedPlan = stringClaim(payload, names.plan);
  const plan = claimedPlan ?? issuer.defaultPlan;
  if (plan === undefined) throw new ClaimError(`the token has no "${names.plan}" claim and the issuer has no default_plan`);
  if (!hasPlan(plan)) throw new ClaimError(`the token's plan "${plan}" is not configured`);
  const endUser = stringClaim(payload, names.endUser, MAX_USER_ID_CHARS) ?? null;
  const agents = listClaim(payload, names.agents);
  const jti = typeof payload.jti === 'string' && payload.jti.length > 0 ? payload.jti : null;
  return {
    key: {
      keyId: tokenKeyId(issuer.issuer, sub),
      account,
      plan,
      limits: limitsClaim(payload, names.limits),
      tools: null,
      endUser,
      mcp: mcpClaim(payload, names.mcp),
      token: { issuer: issuer.issuer, sub, jti },
    },
    agents: agents === undefined ? new Set() : agents.includes('*') ? 'all' : new Set(agents),
  };
}
