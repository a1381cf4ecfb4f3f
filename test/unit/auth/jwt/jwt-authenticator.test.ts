// The JWT authenticator's remembered tokens (src/auth/jwt/jwt-authenticator.ts; decision 0109)
// against a real JWKS server and an injected clock: a keep-alive connection's repeated token
// is matched by comparison, and every check that can change still runs on it (expiry,
// revocation, audience, scope); another text on the same connection is verified on its own.
// And the scope on an MCP endpoint is the mcp claim, never the agents claim (decision 0108).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FailedAuthThrottle } from '../../../../src/auth/failed-auth-throttle.js';
import { CLOCK_SKEW_SECONDS, JwtAuthenticator } from '../../../../src/auth/jwt/jwt-authenticator.js';
import { MemoryTokenRevocations } from '../../../../src/auth/jwt/token-revocations.js';
import type { JwtIssuerConfig } from '../../../../src/config/schema.js';
import { mcpTarget } from '../../../../src/keys/mcp-scope.js';
import { silentLogger } from '../../../../src/logger.js';

const AUDIENCE = 'https://gw.test';
const FILES = `${AUDIENCE}/mcp/files`;
let server: Server;
let issuer: string;
let jwk: JWK;
let privateKey: CryptoKey;
let now = Date.parse('2026-12-07T06:00:00Z');
const clock = { now: () => now };

beforeAll(async () => {
  const pair = await generateKeyPair('ES256');
  privateKey = pair.privateKey;
  jwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256' };
  server = createServer((req, res) => {
    if (req.url === '/.well-known/openid-configuration') res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ issuer, jwks_uri: `${issuer}/jwks` }));
    else if (req.url === '/jwks') res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] }));
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

function authenticator(): { tokens: JwtAuthenticator; revocations: MemoryTokenRevocations } {
  const config: JwtIssuerConfig = {
    issuer,
    audiences: [AUDIENCE],
    algorithms: ['ES256'],
    claims: { account: 'org_id', plan: 'plan', endUser: 'sub', agents: 'agents', mcp: 'mcp', limits: undefined },
    defaultPlan: 'starter',
    jwksRefetchIntervalMs: 30_000,
    jwksMaxAgeMs: 600_000,
  };
  const revocations = new MemoryTokenRevocations(clock);
  const throttle = new FailedAuthThrottle({ maxAttempts: 1_000, perMs: 60_000, blockForMs: 60_000, clock, logger: silentLogger });
  return { tokens: new JwtAuthenticator({ issuers: [config], clock, logger: silentLogger, throttle, revocations, hasPlan: () => true }), revocations };
}

function sign(claims: Record<string, unknown>): Promise<string> {
  const seconds = Math.floor(now / 1000);
  return new SignJWT({ org_id: 'acme', iat: seconds, exp: seconds + 300, ...claims }).setProtectedHeader({ alg: 'ES256', kid: 'k1' }).setIssuer(issuer).sign(privateKey);
}

const outcome = (promise: Promise<unknown>): Promise<string> => promise.then(() => 'ok', (error: { type?: string; message?: string }) => `${error.type}: ${error.message}`);

describe('a remembered token on a keep-alive connection', () => {
  it('is accepted by comparison, and still refused once revoked or expired', async () => {
    const { tokens, revocations } = authenticator();
    const connection = {};
    const token = await sign({ aud: AUDIENCE, sub: 'svc-a', jti: 'j-1', agents: ['support'] });
    const chat = { authorization: undefined, agentId: 'support', clientIp: '192.0.2.1', connection };
    expect(tokens.acceptedNow(token, chat)).toBeUndefined();
    expect(await outcome(tokens.authenticate(token, chat))).toBe('ok');
    expect(tokens.acceptedNow(token, chat)?.account).toBe('acme');
    // A copy of the same text (another string object) on another connection: the same answer.
    expect(tokens.acceptedNow(`${token}`.slice(0), { ...chat, connection: {} })?.account).toBe('acme');
    // Another agent than its agents claim names.
    expect(tokens.acceptedNow(token, { ...chat, agentId: 'billing' })).toBeUndefined();
    expect(await outcome(tokens.authenticate(token, { ...chat, agentId: 'billing' }))).toMatch(/^agent_not_allowed/);
    await revocations.revoke({ kind: 'jti', value: 'j-1', untilMs: now + 60_000 });
    expect(tokens.acceptedNow(token, chat)).toBeUndefined();
    expect(await outcome(tokens.authenticate(token, chat))).toBe('invalid_token: The access token has been revoked.');
    // The revocation lapses; the token is good again until its exp plus the skew.
    now += 61_000;
    expect(tokens.acceptedNow(token, chat)?.account).toBe('acme');
    now += (300 - 61 + CLOCK_SKEW_SECONDS) * 1000;
    expect(tokens.acceptedNow(token, chat)).toBeUndefined();
    expect(await outcome(tokens.authenticate(token, chat))).toMatch(/^invalid_token: The access token has expired/);
  });

  it('another text on the same connection is verified on its own: a tampered copy is refused, the good one still accepted', async () => {
    const { tokens } = authenticator();
    const connection = {};
    const token = await sign({ aud: AUDIENCE, sub: 'svc-b', agents: ['support'] });
    const input = { authorization: undefined, agentId: 'support', clientIp: '192.0.2.2', connection };
    expect(await outcome(tokens.authenticate(token, input))).toBe('ok');
    const [header, , signature] = token.split('.');
    const widened = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()), agents: ['*'] })).toString('base64url');
    const tampered = `${header}.${widened}.${signature}`;
    expect(tokens.acceptedNow(tampered, { ...input, agentId: 'billing' })).toBeUndefined();
    expect(await outcome(tokens.authenticate(tampered, { ...input, agentId: 'billing' }))).toBe("invalid_token: The access token's signature is not valid.");
    expect(tokens.acceptedNow(token, input)?.account).toBe('acme');
    expect(tokens.acceptedNow(tampered, input)).toBeUndefined();
  });
});

describe('the scope on an MCP endpoint', () => {
  it('is the mcp claim: agents "*" reaches no MCP server, a claim without the server is refused, another audience is invalid', async () => {
    const { tokens } = authenticator();
    const onFiles = { authorization: undefined, agentId: mcpTarget('files'), clientIp: '192.0.2.3', connection: {}, audience: FILES };
    const scoped = await sign({ aud: FILES, sub: 'svc-c', mcp: { files: ['read'] } });
    expect(await outcome(tokens.authenticate(scoped, onFiles))).toBe('ok');
    expect(tokens.acceptedNow(scoped, onFiles)?.mcp).toEqual({ files: ['read'] });
    const everyAgent = await sign({ aud: FILES, sub: 'svc-d', agents: ['*'], mcp: { git: ['*'] } });
    expect(await outcome(tokens.authenticate(everyAgent, onFiles))).toBe('agent_not_allowed: The access token is not allowed to use this MCP server.');
    expect(await outcome(tokens.authenticate(scoped, { ...onFiles, agentId: mcpTarget('git'), audience: `${AUDIENCE}/mcp/git` }))).toMatch(/^invalid_token: The access token's "aud" claim/);
    // The chat routes do not take the MCP resource's token.
    expect(await outcome(tokens.authenticate(scoped, { ...onFiles, agentId: 'support', audience: undefined }))).toMatch(/^invalid_token/);
  });
});
