// JWT access tokens from the operator's identity provider (docs/identity.md): `auth.jwt`, one
// entry per issuer. Read at start; the issuer's keys come from its discovery document at run
// time (src/auth/jwt/issuer-keys.ts), so a rotated signing key needs no restart.
import { z } from 'zod';
import { asMapping, positiveDuration } from './schema-primitives.js';

/**
 * Asymmetric algorithms only. `none` is never a choice, and HS* would verify with a shared
 * secret: with a public JWKS that secret would be the public key itself (the classic
 * algorithm-confusion forgery), so the schema cannot express it.
 */
export const JWT_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'] as const;
export type JwtAlgorithm = (typeof JWT_ALGORITHMS)[number];

/** An issuer URL: https, or http only on a loopback host (a provider beside the gateway, or a test's). */
const issuerUrl = z.string().refine(
  (text) => {
    try {
      const url = new URL(text);
      if (url.search !== '' || url.hash !== '') return false;
      return url.protocol === 'https:' || (url.protocol === 'http:' && isLoopbackHost(url.hostname));
    } catch {
      return false;
    }
  },
  { message: 'must be an https:// URL (http:// only on 127.0.0.1, [::1] or localhost), without query or fragment' },
);

export function isLoopbackHost(hostname: string): boolean {
  return hostname === '127.0.0.1' || hostname === '[::1]' || hostname === 'localhost';
}

/** A claim name: a top-level claim of the token ("org_id", "https://example.com/plan"). */
const claimName = z.string().min(1).max(256);

const claimsSchema = z
  .strictObject({
    account: claimName.default('org_id'),
    plan: claimName.default('plan'),
    end_user: claimName.default('sub'),
    agents: claimName.default('agents'),
    mcp: claimName.default('mcp'),
    // A claim holding the token's own limits (the shape of a key's `limits`); absent: the plan's.
    limits: claimName.optional(),
  })
  .prefault({})
  .transform((c) => ({ account: c.account, plan: c.plan, endUser: c.end_user, agents: c.agents, mcp: c.mcp, limits: c.limits }));

export const jwtIssuerSchema = z
  .strictObject({
    issuer: issuerUrl,
    audiences: z.array(z.string().min(1)).min(1),
    algorithms: z.array(z.enum(JWT_ALGORITHMS, { message: `one of ${JWT_ALGORITHMS.join(', ')} (never none, never HS*)` })).min(1).default(['RS256', 'ES256', 'EdDSA']),
    claims: claimsSchema,
    default_plan: z.string().min(1).optional(),
    // An unknown `kid` fetches the JWKS again at most this often (the discovery document too, while it failed).
    jwks_refetch_interval: positiveDuration.default(30_000),
    // The JWKS is read again in the background after this long, whatever kids arrive.
    jwks_max_age: positiveDuration.default(600_000),
  })
  .transform((j) => ({
    issuer: j.issuer,
    audiences: j.audiences,
    algorithms: [...new Set(j.algorithms)],
    claims: j.claims,
    defaultPlan: j.default_plan,
    jwksRefetchIntervalMs: j.jwks_refetch_interval,
    jwksMaxAgeMs: j.jwks_max_age,
  }));

export const authSchema = z
  .strictObject({
    jwt: z
      .array(jwtIssuerSchema)
      .default([])
      .refine((issuers) => new Set(issuers.map((i) => i.issuer)).size === issuers.length, { message: 'each issuer may appear once' }),
  })
  .prefault({});

export type JwtIssuerConfig = z.output<typeof jwtIssuerSchema>;
export type JwtClaimNames = JwtIssuerConfig['claims'];

/**
 * The whole config's check (schema.ts's superRefine): each issuer's default_plan names a
 * configured plan. `auth` is parsed (defaultPlan) when the block was valid, as written
 * (default_plan) when it was not.
 */
export function checkDefaultPlans(auth: unknown, plans: Record<string, unknown>, ctx: z.RefinementCtx): void {
  const issuers = asMapping(auth)?.jwt;
  if (!Array.isArray(issuers)) return;
  issuers.forEach((issuer: unknown, index) => {
    const entry = asMapping(issuer);
    const plan = entry?.defaultPlan ?? entry?.default_plan;
    if (typeof plan === 'string' && !(plan in plans)) ctx.addIssue({ code: 'custom', path: ['auth', 'jwt', index, 'default_plan'], message: `plan "${plan}" is not configured` });
  });
}
