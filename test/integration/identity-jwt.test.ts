// JWT access tokens from a real OpenID provider (docs/identity.md): oidc-provider in this
// process issues tokens by the client credentials grant; the gateway finds its keys through
// the discovery document. Good tokens pass on both chat routes with the account, plan and end
// user of their claims; every kind of bad token is 401 invalid_token with the RFC 6750
// challenge; a rotated key is taken without a restart; an unknown-kid flood costs the provider
// a bounded number of JWKS reads; the JWKS down admits nothing unverifiable; revocation by jti
// and by sub; the MCP protected resource metadata; and no token text anywhere it could leak.
import { createPublicKey } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { decodeJwt, SignJWT, UnsecuredJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registry } from '../../src/metrics/metrics.js';
import { FailedAuthThrottle } from '../../src/auth/failed-auth-throttle.js';
import { JwtAuthenticator } from '../../src/auth/jwt/jwt-authenticator.js';
import { mcpResourceUrl } from '../../src/auth/jwt/protected-resource.js';
import { mcpTarget } from '../../src/keys/mcp-scope.js';
import { MemoryTokenRevocations } from '../../src/auth/jwt/token-revocations.js';
import { systemClock } from '../../src/clock.js';
import { silentLogger } from '../../src/logger.js';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { postChat, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { newSigningKey, startTestProvider, type TestProvider } from '../helpers/oidc-provider.js';
import { readAuditFile } from '../helpers/audit-records.js';
import { startOtlpReceiver } from '../helpers/otlp-receiver.js';
import { waitFor } from '../helpers/wait.js';

const AUDIENCE = 'https://gateway.test';
const CHAT = '/agents/support/api/v1/chat';
const STREAM = '/agents/support/api/v1/chat/stream';
const ADMIN_TOKEN = 'identity-test-admin-token-0123456789';
const VIEWER_TOKEN = 'identity-test-viewer-token-012345678';

let provider: TestProvider;
let upstream: FakeUpstream;
let gateway: TestGateway;
const extraGateways: TestGateway[] = [];
/** Every token a test made: none may appear in logs, audit or metrics. */
const issued: string[] = [];

function gatewayConfig(refetch: string): Record<string, unknown> {
  return {
    auth: { jwt: [{ issuer: provider.issuer, audiences: [AUDIENCE], default_plan: 'starter', jwks_refetch_interval: refetch }] },
    admin: { host: '127.0.0.1', port: 0, tokens: [{ name: 'ops', token: ADMIN_TOKEN, role: 'admin' }, { name: 'watcher', token: VIEWER_TOKEN, role: 'viewer' }] },
    // The bad-token tests fail many times from one address; the throttle is tested elsewhere.
    keys: { failed_auth: { max_attempts: 100_000 } },
    // Only configured MCP servers have protected resource metadata (nothing here dials it).
    mcp_servers: { files: { upstream: 'http://127.0.0.1:9/mcp' } },
  };
}

async function tokenFor(client: string, resource = AUDIENCE): Promise<string> {
  const token = await provider.token(client, resource);
  issued.push(token);
  return token;
}

async function sign(payload: Record<string, unknown>, options?: Parameters<TestProvider['sign']>[1]): Promise<string> {
  const token = await provider.sign(payload, options);
  issued.push(token);
  return token;
}

const nowSeconds = (): number => Math.floor(Date.now() / 1000);

function claimsOf(client: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { iss: provider.issuer, aud: AUDIENCE, sub: client, org_id: 'acme', plan: 'pro', agents: ['support'], jti: `j-${Math.random()}`, iat: nowSeconds(), exp: nowSeconds() + 600, ...extra };
}

async function refusal(response: Response): Promise<{ status: number; type: string; challenge: string | null }> {
  const body = (await response.json()) as { error?: { type: string } };
  return { status: response.status, type: body.error?.type ?? '', challenge: response.headers.get('www-authenticate') };
}

const INVALID = { status: 401, type: 'invalid_token', challenge: 'Bearer error="invalid_token"' };

beforeAll(async () => {
  provider = await startTestProvider([
    { id: 'svc-acme', secret: 'svc-acme-secret-0123456789', claims: { org_id: 'acme', plan: 'pro', agents: ['support'], mcp: { files: ['*'] } } },
    { id: 'svc-default', secret: 'svc-default-secret-012345678', claims: { org_id: 'globex', agents: ['*'] } },
    { id: 'svc-elsewhere', secret: 'svc-elsewhere-secret-0123456', claims: { org_id: 'acme', agents: ['billing'] } },
  ]);
  upstream = await startFakeUpstream();
  gateway = await startTestGateway({ agents: { support: `${upstream.baseUrl}` }, config: gatewayConfig('1s') });
}, 60_000);

afterAll(async () => {
  for (const extra of extraGateways) await extra.close();
  await gateway?.close();
  await upstream?.close();
  await provider?.close();
});

describe('good tokens', () => {
  it('a token from the provider passes on /chat and /chat/stream, audited with its issuer, sub and jti', async () => {
    const token = await tokenFor('svc-acme');
    const chat = await postChat(gateway.url, CHAT, token, { message: 'hi', context: { user_id: 'someone-else' } });
    expect(chat.status).toBe(200);
    await chat.text();
    const stream = await postChat(gateway.url, STREAM, token, { message: 'hi' });
    expect(stream.status).toBe(200);
    expect(await stream.text()).toContain('event: done');
    const { jti } = decodeJwt(token);
    const records = await waitFor('both audit records', async () => {
      const all = (await readAuditFile(join(gateway.dir, 'audit.jsonl'))).filter((r) => r.token_jti === jti);
      return all.length === 2 ? all : undefined;
    }, 10_000);
    for (const record of records) {
      expect(record).toMatchObject({ auth: 'jwt', token_issuer: provider.issuer, token_sub: 'svc-acme', account: 'acme', plan: 'pro', status: 200 });
      expect(record.key_id).toMatch(/^jwt_[A-Za-z0-9_-]{22}$/);
      // The token's end-user claim (sub by default) wins over the body's context.user_id.
      expect(record.user_id).toBe('svc-acme');
    }
  });

  it('a token without a plan claim gets the default plan; "*" in its agents claim allows every agent', async () => {
    const token = await tokenFor('svc-default');
    const response = await postChat(gateway.url, CHAT, token, { message: 'hi' });
    expect(response.status).toBe(200);
    await response.text();
    const { jti } = decodeJwt(token);
    const record = await waitFor('the audit record', async () => (await readAuditFile(join(gateway.dir, 'audit.jsonl'))).find((r) => r.token_jti === jti), 10_000);
    expect(record).toMatchObject({ account: 'globex', plan: 'starter' });
  });

  it('a token whose agents claim does not name the agent is agent_not_allowed', async () => {
    const response = await postChat(gateway.url, CHAT, await tokenFor('svc-elsewhere'), { message: 'hi' });
    expect(await refusal(response)).toMatchObject({ status: 401, type: 'agent_not_allowed' });
  });
});

describe('bad tokens: each 401 invalid_token with Bearer error="invalid_token"', () => {
  it('expired past the 60 s skew', async () => {
    const token = await sign(claimsOf('svc-acme', { iat: nowSeconds() - 900, exp: nowSeconds() - 120 }));
    expect(await refusal(await postChat(gateway.url, CHAT, token, { message: 'hi' }))).toEqual(INVALID);
  });

  it('expired within the 60 s skew is still accepted', async () => {
    const token = await sign(claimsOf('svc-acme', { iat: nowSeconds() - 900, exp: nowSeconds() - 20 }));
    const response = await postChat(gateway.url, CHAT, token, { message: 'hi' });
    expect(response.status).toBe(200);
    await response.text();
  });

  it('not yet valid (nbf past the skew)', async () => {
    const token = await sign(claimsOf('svc-acme', { nbf: nowSeconds() + 600, exp: nowSeconds() + 1200 }));
    expect(await refusal(await postChat(gateway.url, CHAT, token, { message: 'hi' }))).toEqual(INVALID);
  });

  it('for another audience (a token the provider issued for another resource)', async () => {
    const token = await tokenFor('svc-acme', 'https://other.test');
    expect(await refusal(await postChat(gateway.url, CHAT, token, { message: 'hi' }))).toEqual(INVALID);
  });

  it('from another issuer, and from a configured issuer signed with a key it never published', async () => {
    const other = await newSigningKey();
    const foreign = await sign(claimsOf('svc-acme', { iss: 'https://login.evil.test/' }), { key: other });
    expect(await refusal(await postChat(gateway.url, CHAT, foreign, { message: 'hi' }))).toEqual(INVALID);
    const unknownKid = await sign(claimsOf('svc-acme'), { key: other });
    expect(await refusal(await postChat(gateway.url, CHAT, unknownKid, { message: 'hi' }))).toEqual(INVALID);
  });

  it('alg none', async () => {
    const token = new UnsecuredJWT(claimsOf('svc-acme')).encode();
    issued.push(token);
    expect(await refusal(await postChat(gateway.url, CHAT, token, { message: 'hi' }))).toEqual(INVALID);
  });

  it('HS256 signed with the public key (algorithm confusion)', async () => {
    const { d: _d, p: _p, q: _q, dp: _dp, dq: _dq, qi: _qi, ...publicJwk } = provider.signingKey.privateJwk;
    const pem = createPublicKey({ key: publicJwk as never, format: 'jwk' }).export({ type: 'spki', format: 'pem' }) as string;
    for (const secret of [pem, JSON.stringify(publicJwk)]) {
      const token = await new SignJWT(claimsOf('svc-acme')).setProtectedHeader({ alg: 'HS256', kid: provider.signingKey.kid }).sign(new TextEncoder().encode(secret));
      issued.push(token);
      expect(await refusal(await postChat(gateway.url, CHAT, token, { message: 'hi' }))).toEqual(INVALID);
    }
  });

  it('tampered: claims changed after signing', async () => {
    const token = await tokenFor('svc-acme');
    const [header, payload, signature] = token.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>;
    const tampered = `${header}.${Buffer.from(JSON.stringify({ ...claims, org_id: 'globex', plan: 'scale' })).toString('base64url')}.${signature}`;
    issued.push(tampered);
    expect(await refusal(await postChat(gateway.url, CHAT, tampered, { message: 'hi' }))).toEqual(INVALID);
  });

  it('not a JWT at all, a JWT without sub or exp, and a JWT whose account claim is unusable', async () => {
    expect(await refusal(await postChat(gateway.url, CHAT, 'eyJnot.a.token', { message: 'hi' }))).toEqual(INVALID);
    expect(await refusal(await postChat(gateway.url, CHAT, 'opaque-bearer-value', { message: 'hi' }))).toEqual(INVALID);
    // Past 8 KiB, refused unparsed; a header that is not JSON; a payload that is not JSON.
    expect(await refusal(await postChat(gateway.url, CHAT, `eyJ${'a'.repeat(9_000)}.b.c`, { message: 'hi' }))).toEqual(INVALID);
    expect(await refusal(await postChat(gateway.url, CHAT, `eyJ${Buffer.from('{"alg":').toString('base64url')}.e30.c2ln`, { message: 'hi' }))).toEqual(INVALID);
    expect(await refusal(await postChat(gateway.url, CHAT, `eyJhbGciOiJSUzI1NiJ9.${Buffer.from('not json').toString('base64url')}.c2ln`, { message: 'hi' }))).toEqual(INVALID);
    const { sub: _sub, ...withoutSub } = claimsOf('svc-acme');
    expect(await refusal(await postChat(gateway.url, CHAT, await sign(withoutSub), { message: 'hi' }))).toEqual(INVALID);
    const { exp: _exp, ...withoutExp } = claimsOf('svc-acme');
    expect(await refusal(await postChat(gateway.url, CHAT, await sign(withoutExp), { message: 'hi' }))).toEqual(INVALID);
    const badAccount = await sign(claimsOf('svc-acme', { org_id: 'has spaces and "quotes"' }));
    expect(await refusal(await postChat(gateway.url, CHAT, badAccount, { message: 'hi' }))).toEqual(INVALID);
    const unknownPlan = await sign(claimsOf('svc-acme', { plan: 'platinum' }));
    expect(await refusal(await postChat(gateway.url, CHAT, unknownPlan, { message: 'hi' }))).toEqual(INVALID);
  });

  it('keys still work beside tokens, and a bad key is still invalid_api_key', async () => {
    const { rawKey } = await gateway.createKey({ agents: ['support'] });
    const response = await postChat(gateway.url, CHAT, rawKey, { message: 'hi' });
    expect(response.status).toBe(200);
    await response.text();
    expect(await refusal(await postChat(gateway.url, CHAT, `${rawKey.slice(0, -1)}${rawKey.endsWith('x') ? 'y' : 'x'}`, { message: 'hi' }))).toMatchObject({ status: 401, type: 'invalid_api_key' });
  });
});

describe('signing keys', () => {
  it('a rotated signing key is accepted without a restart', async () => {
    const before = await tokenFor('svc-acme');
    const ok = await postChat(gateway.url, CHAT, before, { message: 'hi' });
    expect(ok.status).toBe(200);
    await ok.text();
    const rotated = await provider.rotate();
    const token = await tokenFor('svc-acme');
    const header = JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString('utf8')) as { kid: string };
    expect(header.kid).toBe(rotated.kid);
    // The unknown kid is read again at most once per jwks_refetch_interval (1 s here).
    await waitFor('the rotated key to be accepted', async () => {
      const response = await postChat(gateway.url, CHAT, token, { message: 'hi' });
      await response.text();
      return response.status === 200;
    }, 20_000, 200);
  });

  it('a flood of unknown kids costs the provider a bounded number of JWKS reads', async () => {
    // The default interval (30 s): a gateway of its own, so the other tests' reads do not count.
    const flooded = await startTestGateway({ agents: { support: upstream.baseUrl }, config: gatewayConfig('30s') });
    extraGateways.push(flooded);
    const warm = await postChat(flooded.url, CHAT, await tokenFor('svc-acme'), { message: 'hi' });
    expect(warm.status).toBe(200);
    await warm.text();
    const startedAt = Date.now();
    const before = provider.jwksRequests;
    const forged = await newSigningKey();
    for (let round = 0; round < 4; round += 1) {
      const answers = await Promise.all(
        Array.from({ length: 50 }, async (_, i) => {
          const token = await sign(claimsOf('svc-acme'), { key: forged, kid: `flood-${round}-${i}` });
          return refusal(await postChat(flooded.url, CHAT, token, { message: 'hi' }));
        }),
      );
      for (const answer of answers) expect(answer).toEqual(INVALID);
    }
    const reads = provider.jwksRequests - before;
    // At most one read per started 30 s (counted from the warm-up read) while 200 unknown kids arrived.
    expect(reads).toBeLessThanOrEqual(1 + Math.ceil((Date.now() - startedAt) / 30_000));
  });

  it('with the JWKS endpoint down nothing unverifiable is admitted; what the held keys verify still is', async () => {
    const warmToken = await tokenFor('svc-acme');
    const cold = await startTestGateway({ agents: { support: upstream.baseUrl }, config: gatewayConfig('1s') });
    extraGateways.push(cold);
    const warm = await postChat(gateway.url, CHAT, warmToken, { message: 'hi' });
    expect(warm.status).toBe(200);
    await warm.text();
    provider.setJwksDown(true);
    try {
      // A gateway that never read the keys: even a good token cannot be verified.
      expect(await refusal(await postChat(cold.url, CHAT, warmToken, { message: 'hi' }))).toEqual(INVALID);
      // A key the provider never published: refused, whatever the JWKS says now.
      const forged = await sign(claimsOf('svc-acme'), { key: await newSigningKey() });
      expect(await refusal(await postChat(gateway.url, CHAT, forged, { message: 'hi' }))).toEqual(INVALID);
      // A new token signed with a key the warm gateway holds: verified with it.
      const fresh = await sign(claimsOf('svc-acme'));
      const response = await postChat(gateway.url, CHAT, fresh, { message: 'hi' });
      expect(response.status).toBe(200);
      await response.text();
    } finally {
      provider.setJwksDown(false);
    }
    // Once the provider answers again, the cold gateway verifies (after its refetch interval).
    await waitFor('the cold gateway to read the keys', async () => {
      const response = await postChat(cold.url, CHAT, warmToken, { message: 'hi' });
      await response.text();
      return response.status === 200;
    }, 20_000, 200);
  });
});

describe('revocation', () => {
  async function revoke(body: Record<string, unknown>): Promise<Response> {
    return fetch(`${gateway.adminUrl}/admin/v1/tokens/revocations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  }

  it('by jti refuses that token (cached or not) and no other; by sub refuses every token of the subject', async () => {
    const token = await tokenFor('svc-acme');
    const other = await tokenFor('svc-acme');
    const first = await postChat(gateway.url, CHAT, token, { message: 'hi' });
    expect(first.status).toBe(200);
    await first.text();
    const jti = decodeJwt(token).jti!;
    const answer = await revoke({ jti });
    expect(answer.status).toBe(201);
    expect(await answer.json()).toMatchObject({ jti });
    expect(await refusal(await postChat(gateway.url, CHAT, token, { message: 'hi' }))).toEqual(INVALID);
    const unrelated = await postChat(gateway.url, CHAT, other, { message: 'hi' });
    expect(unrelated.status).toBe(200);
    await unrelated.text();

    const sub = await revoke({ sub: 'svc-default', until: new Date(Date.now() + 3_600_000).toISOString() });
    expect(sub.status).toBe(201);
    expect(await refusal(await postChat(gateway.url, CHAT, await tokenFor('svc-default'), { message: 'hi' }))).toEqual(INVALID);

    const trail = await waitFor('the admin audit entries', async () => {
      const text = await readFile(join(gateway.dir, 'admin-audit.jsonl'), 'utf8').catch(() => '');
      const lines = text.split('\n').filter((line) => line.includes('token.revoke'));
      return lines.length >= 2 ? lines.map((line) => JSON.parse(line) as Record<string, unknown>) : undefined;
    }, 10_000);
    expect(trail.map((entry) => entry.jti ?? entry.sub)).toEqual([jti, 'svc-default']);
    expect(trail[0]).toMatchObject({ actor: 'ops', action: 'token.revoke' });
  });

  it('a viewer cannot revoke', async () => {
    const answer = await fetch(`${gateway.adminUrl}/admin/v1/tokens/revocations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${VIEWER_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ sub: 'svc-acme' }),
    });
    expect(answer.status).toBe(403);
    expect(((await answer.json()) as { error: { type: string } }).error.type).toBe('insufficient_role');
    const response = await postChat(gateway.url, CHAT, await tokenFor('svc-acme'), { message: 'hi' });
    expect(response.status).toBe(200);
    await response.text();
  });

  it('refuses bad revocations with a clear 400 and changes nothing', async () => {
    for (const body of [{}, { jti: 'a', sub: 'b' }, { jti: '' }, { sub: 'x', until: '2001-01-01T00:00:00Z' }, { jti: 'x', until: 'tomorrow' }, { jti: 'x', extra: 1 }]) {
      const answer = await revoke(body);
      expect(answer.status).toBe(400);
      expect(((await answer.json()) as { error: { type: string } }).error.type).toBe('invalid_request');
    }
    const token = await tokenFor('svc-acme');
    const response = await postChat(gateway.url, CHAT, token, { message: 'hi' });
    expect(response.status).toBe(200);
    await response.text();
  });
});

describe('MCP authorization metadata (RFC 9728)', () => {
  it('names the issuer and the resource URL a token must carry in aud', async () => {
    const response = await fetch(`${gateway.url}/.well-known/oauth-protected-resource/mcp/files`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      resource: `${AUDIENCE}/mcp/files`,
      authorization_servers: [provider.issuer],
      bearer_methods_supported: ['header'],
      resource_signing_alg_values_supported: ['RS256', 'ES256', 'EdDSA'],
    });
    expect((await fetch(`${gateway.url}/.well-known/oauth-protected-resource/mcp/..%2Fetc`)).status).toBe(404);
    // A well-formed name that is not a configured server: nothing to tell.
    expect((await fetch(`${gateway.url}/.well-known/oauth-protected-resource/mcp/git`)).status).toBe(404);
    expect((await fetch(`${gateway.url}/.well-known/oauth-protected-resource/mcp/files`, { method: 'POST' })).status).toBe(405);
  });

  it("an MCP endpoint's audience (RFC 8707): a token for the server's resource URL only, not a chat token, not another server's", async () => {
    const issuers = gateway.config.auth.jwt;
    const authenticator = new JwtAuthenticator({
      issuers,
      clock: systemClock,
      logger: silentLogger,
      throttle: new FailedAuthThrottle({ maxAttempts: 1_000, perMs: 60_000, blockForMs: 60_000, clock: systemClock, logger: silentLogger }),
      revocations: new MemoryTokenRevocations(systemClock),
      hasPlan: (plan) => gateway.config.plans.has(plan),
    });
    const files = mcpResourceUrl(issuers, 'files')!;
    expect(files).toBe(`${AUDIENCE}/mcp/files`);
    const mcpToken = await tokenFor('svc-acme', files);
    const chatToken = await tokenFor('svc-acme');
    // On an MCP endpoint the target is the server (its mcp claim's scope), on the chat routes the agent.
    const input = (audience: string | undefined) => ({ authorization: undefined, agentId: audience === undefined ? 'support' : mcpTarget(audience.slice(audience.lastIndexOf('/') + 1)), clientIp: '192.0.2.1', audience });
    const outcome = (promise: Promise<unknown>) => promise.then(() => 'ok', (error: { type?: string }) => error.type);
    expect(await outcome(authenticator.authenticate(mcpToken, input(files)))).toBe('ok');
    // Remembered now: the same answers from the cache.
    expect(authenticator.acceptedNow(mcpToken, input(files))?.account).toBe('acme');
    expect(await outcome(authenticator.authenticate(mcpToken, input(mcpResourceUrl(issuers, 'git'))))).toBe('invalid_token');
    expect(await outcome(authenticator.authenticate(mcpToken, input(undefined)))).toBe('invalid_token');
    expect(await outcome(authenticator.authenticate(chatToken, input(files)))).toBe('invalid_token');
    expect(await outcome(authenticator.authenticate(chatToken, input(undefined)))).toBe('ok');
  });
});

describe('traces', () => {
  it("a token request's spans carry its account and plan as a key's do, and never the token", async () => {
    const receiver = await startOtlpReceiver();
    try {
      const traced = await startTestGateway({ agents: { support: upstream.baseUrl }, config: { ...gatewayConfig('1s'), telemetry: { otlp_endpoint: receiver.url, sample_ratio: 1 } } });
      extraGateways.push(traced);
      const token = await tokenFor('svc-acme');
      const response = await postChat(traced.url, CHAT, token, { message: 'hi' });
      expect(response.status).toBe(200);
      await response.text();
      const server = await waitFor('the server span', () => receiver.spans.find((span) => span.kind === 2 && span.attributes['agentgw.account'] !== undefined), 20_000, 100);
      expect(server.attributes).toMatchObject({ 'agentgw.account': 'acme', 'agentgw.plan': 'pro' });
      expect(String(server.attributes['agentgw.key_id'])).toMatch(/^jwt_/);
      const exported = Buffer.concat(receiver.raw).toString('utf8');
      expect(exported.includes(token)).toBe(false);
      expect(exported.includes(token.split('.')[2]!)).toBe(false);
    } finally {
      await receiver.close();
    }
  });
});

describe('no token text where it could leak', () => {
  it('logs, audit records, the admin trail and metrics never hold a token or its signature', async () => {
    expect(issued.length).toBeGreaterThan(10);
    const audit = await readFile(join(gateway.dir, 'audit.jsonl'), 'utf8');
    const adminTrail = await readFile(join(gateway.dir, 'admin-audit.jsonl'), 'utf8');
    const metricsText = await registry.metrics();
    const places = { logs: gateway.logs.join(''), audit, adminTrail, metrics: metricsText };
    for (const token of issued) {
      const signature = token.split('.')[2]!;
      for (const [place, text] of Object.entries(places)) {
        expect(text.includes(token), `${place} holds a token`).toBe(false);
        if (signature.length > 0) expect(text.includes(signature), `${place} holds a signature`).toBe(false);
      }
    }
  });
});
