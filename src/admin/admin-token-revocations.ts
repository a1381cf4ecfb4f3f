// POST /admin/v1/tokens/revocations (docs/admin-api.md "Token revocations"): refuses JWT
// access tokens by `jti`, or every token of a `sub`, until a time, on every instance within
// a second (src/auth/jwt/token-revocations.ts). Recorded in the admin audit trail.
import { z } from 'zod';
import { RevocationLimitError } from '../auth/token-revocation-types.js';
import { GatewayError } from '../errors.js';
import type { AdminExchange } from './admin-context.js';
import { originOf, sendJson } from './admin-context.js';
import { readJsonBody, validate } from './admin-request-body.js';

/** Without `until`, a revocation lasts this long: past the lifetime of usual access tokens (minutes to hours). */
export const DEFAULT_REVOCATION_MS = 24 * 3_600_000;
/** The furthest `until` accepted. */
const MAX_REVOCATION_MS = 366 * 24 * 3_600_000;

const identifier = z.string().min(1).max(256);
const revocationBody = z
  .strictObject({ jti: identifier.optional(), sub: identifier.optional(), until: z.iso.datetime({ offset: true }).optional() })
  .refine((body) => (body.jti === undefined) !== (body.sub === undefined), { message: 'give exactly one of "jti" and "sub"' });

export async function revokeTokens(x: AdminExchange): Promise<void> {
  const revocations = x.deps.revocations;
  if (revocations === undefined) throw new GatewayError('not_found', { message: 'JWT access tokens are off: no issuer is configured (auth.jwt).' });
  const body = validate(revocationBody, await readJsonBody(x.req));
  const nowMs = x.deps.clock.now();
  const untilMs = body.until === undefined ? nowMs + DEFAULT_REVOCATION_MS : Date.parse(body.until);
  if (untilMs <= nowMs) throw new GatewayError('invalid_request', { param: 'until', message: 'until: must be in the future' });
  if (untilMs > nowMs + MAX_REVOCATION_MS) throw new GatewayError('invalid_request', { param: 'until', message: 'until: must be within a year' });
  const kind = body.jti !== undefined ? 'jti' : 'sub';
  const value = body.jti ?? body.sub!;
  try {
    await revocations.revoke({ kind, value, untilMs });
  } catch (error) {
    if (error instanceof RevocationLimitError) throw new GatewayError('invalid_request', { message: 'Too many revocations are live; wait for some to lapse.' });
    throw new GatewayError('store_unavailable', { retryAfterSeconds: 1 });
  }
  const until = new Date(untilMs).toISOString();
  await x.deps.adminAudit.tokensRevoked(originOf(x), { [kind]: value, until });
  sendJson(x.res, 201, { [kind]: value, until });
}
