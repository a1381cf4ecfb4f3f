// Dashboard sign-in through the operator's OpenID provider (docs/identity.md "Dashboard
// sign-in"): `admin.oidc`. The role comes from a claim of the person's ID token; a person in
// neither list cannot sign in. Admin tokens keep working beside it (break-glass).
import { z } from 'zod';
import { isLoopbackHost } from './auth-schema.js';

const httpsOrLoopback = (what: string) =>
  z.string().refine(
    (text) => {
      try {
        const url = new URL(text);
        return url.hash === '' && (url.protocol === 'https:' || (url.protocol === 'http:' && isLoopbackHost(url.hostname)));
      } catch {
        return false;
      }
    },
    { message: `${what} must be an https:// URL (http:// only on 127.0.0.1, [::1] or localhost)` },
  );

export const adminOidcSchema = z
  .strictObject({
    issuer: httpsOrLoopback('issuer'),
    client_id: z.string().min(1),
    client_secret: z.string().min(1),
    // The callback URL registered at the provider; default: this listener's own URL as the browser reached it.
    redirect_uri: httpsOrLoopback('redirect_uri').optional(),
    scopes: z.array(z.string().min(1)).default(['openid', 'email', 'profile']),
    roles: z.strictObject({
      claim: z.string().min(1).default('groups'),
      admin: z.array(z.string().min(1)).default([]),
      viewer: z.array(z.string().min(1)).default([]),
    }),
  })
  .refine((oidc) => oidc.roles.admin.length + oidc.roles.viewer.length > 0, { message: 'name at least one value in roles.admin or roles.viewer' })
  .refine((oidc) => oidc.scopes.includes('openid'), { message: 'scopes must include "openid"' })
  .transform((oidc) => ({
    issuer: oidc.issuer,
    clientId: oidc.client_id,
    clientSecret: oidc.client_secret,
    redirectUri: oidc.redirect_uri,
    scopes: oidc.scopes,
    roles: oidc.roles,
  }));

export type AdminOidcConfig = z.output<typeof adminOidcSchema>;
