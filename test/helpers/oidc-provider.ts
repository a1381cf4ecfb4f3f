// A real OpenID provider for the identity tests (docs/identity.md): `oidc-provider` in this
// process, on 127.0.0.1, issuing JWT access tokens by the client credentials grant with a
// resource indicator (RFC 8707), as a company's provider would for a service. The HTTP server
// in front of it counts JWKS requests, can answer them 503 (the JWKS endpoint down), and can
// swap in a provider with a rotated signing key behind the same issuer URL.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type JWK, type JWTPayload } from 'jose';
import Provider from 'oidc-provider';

export interface TestClient {
  id: string;
  secret: string;
  /** Claims the provider adds to this client's access tokens (org_id, plan, agents, …). */
  claims: Record<string, unknown>;
}

/** A web client for the dashboard's sign-in (authorization code + PKCE), and the people who may sign in. */
export interface InteractiveSignIn {
  clientId: string;
  clientSecret: string;
  redirectUri: string;
  /** Login name → the claims of that person's ID token (email, groups). */
  people: Record<string, Record<string, unknown>>;
}

export interface SigningKey {
  kid: string;
  privateJwk: JWK;
  privateKey: CryptoKey;
}

export interface TestProvider {
  issuer: string;
  /** GET requests the provider's JWKS endpoint received. */
  readonly jwksRequests: number;
  /** The key the provider signs with now. */
  readonly signingKey: SigningKey;
  /** An access token from the token endpoint (client credentials) for `resource`. */
  token(clientId: string, resource: string): Promise<string>;
  /** Signs `payload` with `key` (default: the current signing key) as the provider would: for tokens the provider will not issue (expired, not yet valid). */
  sign(payload: JWTPayload, options?: { key?: SigningKey; alg?: string; kid?: string }): Promise<string>;
  /** A new signing key; the provider publishes it first (and the old one after it) and signs with it. */
  rotate(): Promise<SigningKey>;
  /** The JWKS endpoint answers 503 while down. */
  setJwksDown(down: boolean): void;
  close(): Promise<void>;
}

export async function newSigningKey(alg = 'RS256'): Promise<SigningKey> {
  const { privateKey } = await generateKeyPair(alg, { extractable: true });
  const kid = `k-${Math.random().toString(36).slice(2, 10)}`;
  const privateJwk = { ...(await exportJWK(privateKey)), kid, alg, use: 'sig' };
  return { kid, privateJwk, privateKey };
}

/**
 * `interactive`: also the provider's own (development) login and consent pages, where any
 * known login name signs in with any password, for the dashboard's sign-in in a browser.
 */
export async function startTestProvider(clients: TestClient[], interactive?: InteractiveSignIn): Promise<TestProvider> {
  let handler: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.end();
  let jwksRequests = 0;
  let jwksDown = false;
  const server: Server = createServer((req, res) => {
    if (req.url?.startsWith('/jwks')) {
      jwksRequests += 1;
      if (jwksDown) {
        res.writeHead(503).end();
        return;
      }
    }
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const byId = new Map(clients.map((client) => [client.id, client]));
  let keys: SigningKey[] = [await newSigningKey()];

  const build = (): void => {
    const webClients = interactive === undefined ? [] : [{ client_id: interactive.clientId, client_secret: interactive.clientSecret, redirect_uris: [interactive.redirectUri], grant_types: ['authorization_code'], response_types: ['code'] }];
    const provider = new Provider(issuer, {
      clients: [...clients.map((client) => ({ client_id: client.id, client_secret: client.secret, grant_types: ['client_credentials'], redirect_uris: [], response_types: [] })), ...webClients],
      jwks: { keys: keys.map((key) => key.privateJwk) },
      ...(interactive === undefined
        ? {}
        : {
            findAccount: (_ctx: unknown, id: string) => {
              const claims = interactive.people[id];
              return claims === undefined ? undefined : { accountId: id, claims: () => ({ sub: id, ...claims }) };
            },
            claims: { openid: ['sub'], email: ['email'], groups: ['groups'] },
            scopes: ['openid', 'email', 'groups'],
            // The role claim in the ID token itself, as the gateway reads it there.
            conformIdTokenClaims: false,
          }),
      features: {
        clientCredentials: { enabled: true },
        introspection: { enabled: false },
        devInteractions: { enabled: interactive !== undefined },
        resourceIndicators: {
          enabled: true,
          defaultResource: () => undefined,
          useGrantedResource: () => true,
          getResourceServerInfo: (_ctx: unknown, resource: string) => ({
            scope: 'chat',
            audience: resource,
            accessTokenTTL: 600,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: 'RS256' } },
          }),
        },
      },
      extraTokenClaims: (_ctx: unknown, token: { clientId?: string }) => byId.get(token.clientId ?? '')?.claims,
    });
    handler = provider.callback();
  };
  build();

  return {
    issuer,
    get jwksRequests() {
      return jwksRequests;
    },
    get signingKey() {
      return keys[0]!;
    },
    async token(clientId, resource) {
      const client = byId.get(clientId)!;
      const response = await fetch(`${issuer}/token`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`${client.id}:${client.secret}`).toString('base64')}`,
        },
        body: new URLSearchParams({ grant_type: 'client_credentials', resource, scope: 'chat' }).toString(),
      });
      const body = (await response.json()) as { access_token?: string; error?: string; error_description?: string };
      if (body.access_token === undefined) throw new Error(`the provider issued no token: ${body.error} ${body.error_description}`);
      return body.access_token;
    },
    async sign(payload, options = {}) {
      const key = options.key ?? keys[0]!;
      return new SignJWT(payload).setProtectedHeader({ alg: options.alg ?? 'RS256', kid: options.kid ?? key.kid, typ: 'at+jwt' }).sign(key.privateKey);
    },
    async rotate() {
      const next = await newSigningKey();
      keys = [next, ...keys];
      build();
      return next;
    },
    setJwksDown(down) {
      jwksDown = down;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
