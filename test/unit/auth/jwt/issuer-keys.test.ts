// The JWKS cache around jose (src/auth/jwt/issuer-keys.ts) against a real HTTP server and an
// injected clock: one read for many tokens, an unknown kid reads again at most once per
// interval counted from the last attempt (success or not), the keys held keep verifying while
// the provider fails, and with no keys nothing verifies.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { errors, exportJWK, generateKeyPair, jwtVerify, SignJWT, type JWK } from 'jose';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { IssuerKeys, IssuerKeysUnavailable } from '../../../../src/auth/jwt/issuer-keys.js';
import { silentLogger } from '../../../../src/logger.js';

let server: Server;
let issuer: string;
let published: JWK[] = [];
let down = false;
let discoveryIssuer: string | undefined;
const reads = { discovery: 0, jwks: 0 };
let now = 1_000_000;
const clock = { now: () => now };

async function key(kid: string): Promise<{ jwk: JWK; privateKey: CryptoKey }> {
  const { publicKey, privateKey } = await generateKeyPair('ES256');
  return { jwk: { ...(await exportJWK(publicKey)), kid, alg: 'ES256' }, privateKey };
}

beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url === '/.well-known/openid-configuration') {
      reads.discovery += 1;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ issuer: discoveryIssuer ?? issuer, jwks_uri: `${issuer}/jwks` }));
    } else if (req.url === '/jwks') {
      reads.jwks += 1;
      if (down) res.writeHead(503).end();
      else res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: published }));
    } else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

beforeEach(() => {
  reads.discovery = 0;
  reads.jwks = 0;
  down = false;
  discoveryIssuer = undefined;
});

function keysFor(): IssuerKeys {
  return new IssuerKeys({ issuer, jwksRefetchIntervalMs: 30_000, jwksMaxAgeMs: 600_000 }, clock, silentLogger);
}

async function verify(keys: IssuerKeys, signer: { privateKey: CryptoKey }, kid: string): Promise<string> {
  const token = await new SignJWT({ sub: 's' }).setProtectedHeader({ alg: 'ES256', kid }).sign(signer.privateKey);
  try {
    await jwtVerify(token, keys.resolve, { algorithms: ['ES256'] });
    return 'ok';
  } catch (error) {
    return error instanceof IssuerKeysUnavailable ? 'unavailable' : (error as errors.JOSEError).code;
  }
}

describe('IssuerKeys', () => {
  it('reads discovery and JWKS once for many tokens, concurrent ones included', async () => {
    const one = await key('one');
    published = [one.jwk];
    const keys = keysFor();
    expect(await Promise.all(Array.from({ length: 20 }, () => verify(keys, one, 'one')))).toEqual(Array(20).fill('ok'));
    expect(reads).toEqual({ discovery: 1, jwks: 1 });
  });

  it('an unknown kid reads again at most once per interval; a rotated key is then taken', async () => {
    const one = await key('one');
    const two = await key('two');
    published = [one.jwk];
    const keys = keysFor();
    expect(await verify(keys, one, 'one')).toBe('ok');
    published = [two.jwk, one.jwk];
    // Within the interval of the first read: refused without asking the provider.
    for (let i = 0; i < 50; i++) expect(await verify(keys, two, 'two')).toBe('ERR_JWKS_NO_MATCHING_KEY');
    expect(reads.jwks).toBe(1);
    now += 30_000;
    expect(await verify(keys, two, 'two')).toBe('ok');
    expect(reads.jwks).toBe(2);
    for (let i = 0; i < 50; i++) expect(await verify(keys, two, `made-up-${i}`)).toBe('ERR_JWKS_NO_MATCHING_KEY');
    expect(reads.jwks).toBe(2);
  });

  it('while the JWKS fails, held keys verify, unknown kids are refused, and reads stay bounded by the interval', async () => {
    const one = await key('one');
    published = [one.jwk];
    const keys = keysFor();
    expect(await verify(keys, one, 'one')).toBe('ok');
    down = true;
    now += 30_000;
    expect(await verify(keys, one, 'unknown')).toBe('unavailable');
    const after = reads.jwks;
    for (let i = 0; i < 50; i++) expect(await verify(keys, one, `unknown-${i}`)).toBe('ERR_JWKS_NO_MATCHING_KEY');
    expect(await verify(keys, one, 'one')).toBe('ok');
    // Aged past jwks_max_age with the provider still down: the held key still verifies, one read per interval.
    now += 600_000;
    for (let i = 0; i < 10; i++) expect(await verify(keys, one, 'one')).toBe('ok');
    expect(reads.jwks - after).toBeLessThanOrEqual(2);
  });

  it('with no keys ever read nothing verifies, and the next attempt waits for the interval', async () => {
    const one = await key('one');
    published = [one.jwk];
    down = true;
    const keys = keysFor();
    expect(await verify(keys, one, 'one')).toBe('unavailable');
    down = false;
    expect(await verify(keys, one, 'one')).toBe('unavailable');
    now += 30_000;
    expect(await verify(keys, one, 'one')).toBe('ok');
  });

  it("refuses a discovery document that names another issuer", async () => {
    const one = await key('one');
    published = [one.jwk];
    discoveryIssuer = 'https://impostor.example.com';
    expect(await verify(keysFor(), one, 'one')).toBe('unavailable');
    expect(reads.jwks).toBe(0);
  });
});
