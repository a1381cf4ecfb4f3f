// The dashboard's sign-in paths through the identity provider (docs/identity.md "Dashboard
// sign-in"), apart from oidc-sign-in.ts so that the dashboard's routes can name them without
// loading openid-client when admin.oidc is off (decision 0108).
export const OIDC_LOGIN_PATH = '/dashboard/oidc/login';
export const OIDC_CALLBACK_PATH = '/dashboard/oidc/callback';
