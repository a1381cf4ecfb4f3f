// A local identity provider stand-in for the bench's `jwt` variations (docs/identity.md): the
// two documents a resource server reads (the discovery document and the JWKS), and access
// tokens signed with its RS256 key by jose. The gateway reads the JWKS once and then verifies
// from its cache; the bench client sends one token for all its requests, as a service does.
import { createServer } from 'node:http';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';

export const JWT_AUDIENCE = 'https://bench.gateway.test';

/** @returns {Promise<{ issuer: string, token: (claims: Record<string, unknown>) => Promise<string>, jwksRequests: () => number, close: () => Promise<void> }>} */
export async function startJwtIssuer() {
  const { publicKey, privateKey } = await generateKeyPair('RS256');
  const kid = 'bench-1';
  const jwks = JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' }] });
  let jwksRequests = 0;
  let issuer = '';
  const server = createServer((req, res) => {
    if (req.url === '/.well-known/openid-configuration') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ issuer, jwks_uri: `${issuer}/jwks` }));
    } else if (req.url === '/jwks') {
      jwksRequests += 1;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(jwks);
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  issuer = `http://127.0.0.1:${server.address().port}`;
  return {
    issuer,
    token: (claims) =>
      new SignJWT(claims)
        .setProtectedHeader({ alg: 'RS256', kid, typ: 'at+jwt' })
        .setIssuer(issuer)
        .setAudience(JWT_AUDIENCE)
        .setIssuedAt()
        .setExpirationTime('12h')
        .setJti('bench-token')
        .sign(privateKey),
    jwksRequests: () => jwksRequests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
