#!/usr/bin/env node
// `npm start`'s demo with an identity provider (docs/identity.md): a local OpenID provider
// (oidc-provider, a dev dependency of this repository) that issues JWT access tokens to a
// demo service by the client credentials grant and signs people into the dashboard, and the
// gateway (`serve --demo`) configured to accept both. Run from the repository, after `npm run build`:
//
//   node examples/identity/demo.mjs
//
// Environment: PORT (gateway, 8080), ADMIN_PORT (9090), IDP_PORT (provider, 9400),
// DEMO_AGENT_URL (as for npm start). Stops both on Ctrl-C.
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { exportJWK, generateKeyPair } from 'jose';
import Provider from 'oidc-provider';
import { stringify } from 'yaml';
import { parseYamlWithEnv } from '../../dist/config/env-substitution.js';

const gatewayPort = Number(process.env.PORT ?? 8080);
const adminPort = Number(process.env.ADMIN_PORT ?? 9090);
const idpPort = Number(process.env.IDP_PORT ?? 9400);
const issuer = `http://127.0.0.1:${idpPort}`;
// The gateway's public URL: what its tokens name in `aud` (and, + /mcp/{server}, its MCP resources').
const audience = `http://127.0.0.1:${gatewayPort}`;

const { privateKey } = await generateKeyPair('RS256', { extractable: true });
const signingKey = { ...(await exportJWK(privateKey)), kid: 'demo-1', alg: 'RS256', use: 'sig' };
// The people who may sign in to the dashboard (any password), and their groups.
const people = {
  admin: { email: 'admin@example.test', groups: ['gateway-admins'] },
  viewer: { email: 'viewer@example.test', groups: ['gateway-viewers'] },
};

const provider = new Provider(issuer, {
  clients: [
    // A service calling agents and MCP tools: its access tokens carry the account, plan, agents and mcp claims.
    { client_id: 'demo-service', client_secret: 'demo-service-secret', grant_types: ['client_credentials'], redirect_uris: [], response_types: [] },
    // The dashboard's sign-in.
    { client_id: 'agent-gateway', client_secret: 'demo-dashboard-secret', grant_types: ['authorization_code'], response_types: ['code'], redirect_uris: [`http://127.0.0.1:${adminPort}/dashboard/oidc/callback`] },
  ],
  jwks: { keys: [signingKey] },
  findAccount: (_ctx, id) => (people[id] ? { accountId: id, claims: () => ({ sub: id, ...people[id] }) } : undefined),
  claims: { openid: ['sub'], email: ['email'], groups: ['groups'] },
  scopes: ['openid', 'email', 'groups'],
  conformIdTokenClaims: false,
  features: {
    clientCredentials: { enabled: true },
    devInteractions: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => audience,
      useGrantedResource: () => true,
      getResourceServerInfo: (_ctx, resource) => ({ scope: 'chat', audience: resource, accessTokenTTL: 900, accessTokenFormat: 'jwt', jwt: { sign: { alg: 'RS256' } } }),
    },
  },
  // Its MCP scope: two tools of npm start's demo MCP server (docs/identity.md "MCP clients").
  extraTokenClaims: (_ctx, token) => (token.clientId === 'demo-service' ? { org_id: 'demo-org', plan: 'starter', agents: ['demo'], mcp: { 'demo-tools': ['add', 'echo'] } } : undefined),
});
const idp = createServer(provider.callback());
await new Promise((resolve) => idp.listen(idpPort, '127.0.0.1', resolve));

// npm start's config (its ${VAR:-default}s resolved as the gateway resolves them), plus the
// issuer for tokens and the provider for the dashboard.
const env = { ...process.env, PORT: String(gatewayPort), ADMIN_PORT: String(adminPort) };
const config = parseYamlWithEnv(readFileSync('config/gateway.yaml', 'utf8'), env);
config.auth = { jwt: [{ issuer, audiences: [audience], claims: { account: 'org_id', plan: 'plan', end_user: 'sub', agents: 'agents' }, default_plan: 'starter' }] };
config.admin = {
  ...config.admin,
  oidc: { issuer, client_id: 'agent-gateway', client_secret: 'demo-dashboard-secret', scopes: ['openid', 'email', 'groups'], roles: { claim: 'groups', admin: ['gateway-admins'], viewer: ['gateway-viewers'] } },
};
mkdirSync('var/identity', { recursive: true });
const configPath = join('var/identity', 'gateway.yaml');
writeFileSync(configPath, stringify(config));

const gateway = spawn(process.execPath, ['dist/cli/main.js', 'serve', '--demo', '--config', configPath], { stdio: 'inherit', env });
process.stderr.write(
  `identity provider on ${issuer}: tokens for demo-service (secret demo-service-secret) at ${issuer}/token; ` +
    `dashboard sign-in as "admin" or "viewer" (any password) at http://127.0.0.1:${adminPort}/dashboard/\n`,
);
const stop = () => {
  gateway.kill('SIGTERM');
  idp.close();
};
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
gateway.once('exit', (code) => {
  idp.close();
  process.exitCode = code ?? 0;
});
