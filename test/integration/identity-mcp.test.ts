// JWT access tokens on the MCP front door (docs/identity.md "MCP clients"): a real OpenID
// provider (oidc-provider, test/helpers/oidc-provider.ts) issues tokens by the client
// credentials grant for an MCP server's resource URL (RFC 8707); the official MCP SDK client
// calls /mcp/{server} with them. A token for the server lists and calls the tools of its mcp
// claim, under its plan's quotas, audited as a token; a token for another resource, expired or
// tampered is 401 with the challenge that points to the protected resource metadata (RFC
// 9728); and the SDK's own 401 handling finds the provider from that challenge and gets a
// token by itself (ClientCredentialsProvider).
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readAuditFile } from '../helpers/audit-records.js';
import { freePort } from '../helpers/free-port.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startTestMcpServer, type TestMcpServer } from '../helpers/mcp-servers.js';
import { startTestProvider, type TestProvider } from '../helpers/oidc-provider.js';
import { waitFor } from '../helpers/wait.js';

const MCP_CLIENT = { id: 'svc-mcp', secret: 'svc-mcp-secret-0123456789ab', claims: { org_id: 'acme', plan: 'mcp-pro', mcp: { files: ['echo', 'add'] } } };
const GIT_ONLY = { id: 'svc-git', secret: 'svc-git-secret-0123456789abc', claims: { org_id: 'acme', plan: 'mcp-pro', mcp: { git: ['*'] } } };
const CHAT_ONLY = { id: 'svc-chat', secret: 'svc-chat-secret-0123456789ab', claims: { org_id: 'acme', plan: 'mcp-pro', agents: ['*'] } };

let provider: TestProvider;
let mcp: TestMcpServer;
let gateway: TestGateway;
/** The gateway's URL, which is also the audience its tokens name (so the metadata's URLs are real). */
let base: string;
let filesResource: string;
let filesMetadata: string;
const issued: string[] = [];

async function tokenFor(client: string, resource: string): Promise<string> {
  const token = await provider.token(client, resource);
  issued.push(token);
  return token;
}

beforeAll(async () => {
  provider = await startTestProvider([MCP_CLIENT, GIT_ONLY, CHAT_ONLY]);
  mcp = await startTestMcpServer();
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  filesResource = `${base}/mcp/files`;
  filesMetadata = `${base}/.well-known/oauth-protected-resource/mcp/files`;
  gateway = await startTestGateway({
    agents: { support: 'http://127.0.0.1:9/api/v1' },
    config: {
      listen: { port },
      auth: { jwt: [{ issuer: provider.issuer, audiences: [base] }] },
      plans: { 'mcp-pro': { windows: [{ requests: 100_000, per: '1m' }], tool_calls: { files__add: [{ calls: 2, per: '1h' }] } } },
      mcp_servers: {
        files: { upstream: mcp.url, timeout: '20s', tools: ['echo', 'add', 'secret'] },
        git: { upstream: mcp.url, timeout: '20s' },
      },
      // The bad-token tests fail several times from one address; the throttle is tested elsewhere.
      keys: { failed_auth: { max_attempts: 100_000 } },
    },
  });
  expect(gateway.url).toBe(base);
}, 60_000);

afterAll(async () => {
  await gateway?.close();
  await mcp?.close();
  await provider?.close();
});

/** `server` '': the aggregated endpoint /mcp. */
function connectWith(token: string, server = 'files'): { client: Client; transport: StreamableHTTPClientTransport } {
  const client = new Client({ name: 'token-client', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(server === '' ? `${base}/mcp` : `${base}/mcp/${server}`), { requestInit: { headers: { authorization: `Bearer ${token}` } } });
  return { client, transport };
}

/** A raw initialize, as a client's first request. */
function initialize(authorization: string | undefined, server = 'files'): Promise<Response> {
  return fetch(`${base}/mcp/${server}`, {
    method: 'POST',
    headers: {
      ...(authorization === undefined ? {} : { authorization }),
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }),
  });
}

async function refusal(response: Response): Promise<{ status: number; type: string; challenge: string | null }> {
  const body = (await response.json()) as { error?: { type?: string } };
  return { status: response.status, type: body.error?.type ?? '', challenge: response.headers.get('www-authenticate') };
}

describe('a token for the MCP server', () => {
  it('lists and calls the tools its mcp claim names, and no other', async () => {
    const token = await tokenFor(MCP_CLIENT.id, filesResource);
    expect(decodeJwt(token).aud).toBe(filesResource);
    const { client, transport } = connectWith(token);
    await client.connect(transport);
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(['add', 'echo']);
    const before = mcp.called.length;
    expect((await client.callTool({ name: 'echo', arguments: { text: 'from a token' } })).content).toEqual([{ type: 'text', text: 'from a token' }]);
    await expect(client.callTool({ name: 'secret', arguments: {} })).rejects.toMatchObject({ code: -32602 });
    expect(mcp.called.slice(before)).toEqual(['echo']);
    await client.close();
  });

  it("its calls count in its plan's quotas and are audited with the token's issuer, sub and end user", async () => {
    const token = await tokenFor(MCP_CLIENT.id, filesResource);
    const { client, transport } = connectWith(token);
    await client.connect(transport);
    await client.callTool({ name: 'add', arguments: { a: 1, b: 2 } });
    await client.callTool({ name: 'add', arguments: { a: 3, b: 4 } });
    // files__add: 2 calls an hour in the token's plan (its plan claim).
    await expect(client.callTool({ name: 'add', arguments: { a: 5, b: 6 } })).rejects.toThrow(/tool_budget_exceeded|429|quota/i);
    const session = transport.sessionId;
    const { jti } = decodeJwt(token);
    const records = await waitFor('three audit records of the session', async () => {
      const mine = (await readAuditFile(join(gateway.dir, 'audit.jsonl'))).filter((record) => record.route === 'mcp' && record.session_id === session);
      return mine.length === 3 ? mine : undefined;
    }, 15_000);
    expect(records.map((record) => [record.tool, record.status])).toEqual([['add', 200], ['add', 200], ['add', 429]]);
    for (const record of records) {
      expect(record).toMatchObject({ auth: 'jwt', token_issuer: provider.issuer, token_sub: MCP_CLIENT.id, token_jti: jti, account: 'acme', plan: 'mcp-pro', mcp_server: 'files', user_id: MCP_CLIENT.id });
      expect(record.key_id).toMatch(/^jwt_[A-Za-z0-9_-]{22}$/);
    }
    await client.close();
  });

  it('a token whose mcp claim does not name the server is 403 key_not_allowed', async () => {
    const token = await tokenFor(GIT_ONLY.id, filesResource);
    const answer = await refusal(await initialize(`Bearer ${token}`));
    expect(answer).toMatchObject({ status: 403, type: 'key_not_allowed' });
    // The same token's client is let in where its claim and its audience agree.
    const gitToken = await tokenFor(GIT_ONLY.id, `${base}/mcp/git`);
    const { client, transport } = connectWith(gitToken, 'git');
    await client.connect(transport);
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    await client.close();
  });
});

describe('the aggregated endpoint /mcp', () => {
  it('takes a token for its own resource (the gateway + /mcp) with the servers of its mcp claim, and no other resource\'s', async () => {
    const token = await tokenFor(MCP_CLIENT.id, `${base}/mcp`);
    const { client, transport } = connectWith(token, '');
    await client.connect(transport);
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(['files__add', 'files__echo']);
    await client.close();
    const aggregateMetadata = `${base}/.well-known/oauth-protected-resource/mcp`;
    const forFiles = await tokenFor(MCP_CLIENT.id, filesResource);
    const refused = await fetch(`${base}/mcp`, { method: 'POST', headers: { authorization: `Bearer ${forFiles}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: '{}' });
    expect(await refusal(refused)).toEqual({ status: 401, type: 'invalid_token', challenge: `Bearer resource_metadata="${aggregateMetadata}", error="invalid_token"` });
    const metadata = (await (await fetch(aggregateMetadata)).json()) as { resource: string; authorization_servers: string[] };
    expect(metadata).toMatchObject({ resource: `${base}/mcp`, authorization_servers: [provider.issuer] });
    // A token whose claim names no server is refused there (a key with no server is too).
    const chatOnly = await tokenFor(CHAT_ONLY.id, `${base}/mcp`);
    const noServer = await fetch(`${base}/mcp`, { method: 'POST', headers: { authorization: `Bearer ${chatOnly}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: '{}' });
    expect(await refusal(noServer)).toMatchObject({ status: 403, type: 'key_not_allowed' });
  });
});

describe('refused tokens: 401 with the challenge that points to the metadata', () => {
  const invalid = (): { status: number; type: string; challenge: string } => ({ status: 401, type: 'invalid_token', challenge: `Bearer resource_metadata="${filesMetadata}", error="invalid_token"` });

  it('no credential: 401 with resource_metadata and no error', async () => {
    expect(await refusal(await initialize(undefined))).toEqual({ status: 401, type: 'missing_api_key', challenge: `Bearer resource_metadata="${filesMetadata}"` });
  });

  it("a token for another server's resource, or for the chat routes, is refused", async () => {
    const forGit = await tokenFor(MCP_CLIENT.id, `${base}/mcp/git`);
    expect(await refusal(await initialize(`Bearer ${forGit}`))).toEqual(invalid());
    const forChat = await tokenFor(CHAT_ONLY.id, base);
    expect(await refusal(await initialize(`Bearer ${forChat}`))).toEqual(invalid());
    // The chat token is good where it belongs: on the MCP endpoint only its audience failed.
    const chat = await fetch(`${base}/agents/support/api/v1/chat`, { method: 'POST', headers: { authorization: `Bearer ${forChat}`, 'content-type': 'application/json' }, body: '{"message":"hi"}' });
    expect(chat.status).not.toBe(401);
    await chat.text();
  });

  it('an expired token and a tampered one are refused; so is a bad key', async () => {
    const now = Math.floor(Date.now() / 1000);
    const expired = await provider.sign({ iss: provider.issuer, aud: filesResource, sub: MCP_CLIENT.id, org_id: 'acme', plan: 'mcp-pro', mcp: { files: ['*'] }, iat: now - 3_600, exp: now - 600 });
    issued.push(expired);
    expect(await refusal(await initialize(`Bearer ${expired}`))).toEqual(invalid());
    const good = await tokenFor(MCP_CLIENT.id, filesResource);
    const [header, payload] = good.split('.');
    // The claims changed (every tool of the server), the signature kept: the signature check fails.
    const claims = { ...decodeJwt(good), mcp: { files: ['*'] } };
    const tampered = `${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${good.split('.')[2]}`;
    expect(tampered.split('.')[1]).not.toBe(payload);
    expect(await refusal(await initialize(`Bearer ${tampered}`))).toEqual(invalid());
    // The good token itself was not spoiled by its tampered copy.
    expect((await initialize(`Bearer ${good}`)).status).toBe(200);
    const badKey = await refusal(await initialize('Bearer ha_notakeynotakeynotakeynotakey0000'));
    expect(badKey).toEqual({ status: 401, type: 'invalid_api_key', challenge: `Bearer resource_metadata="${filesMetadata}", error="invalid_token"` });
  });
});

describe('discovery (RFC 9728): from a 401 to the provider', () => {
  it('the challenge names the metadata, which names the issuer, whose discovery document has a token endpoint', async () => {
    const challenge = (await initialize(undefined)).headers.get('www-authenticate') ?? '';
    const metadataUrl = /resource_metadata="([^"]+)"/.exec(challenge)?.[1];
    expect(metadataUrl).toBe(filesMetadata);
    const metadata = (await (await fetch(metadataUrl!)).json()) as { resource: string; authorization_servers: string[] };
    expect(metadata.resource).toBe(filesResource);
    expect(metadata.authorization_servers).toEqual([provider.issuer]);
    const discovery = (await (await fetch(`${metadata.authorization_servers[0]}/.well-known/openid-configuration`)).json()) as { issuer: string; token_endpoint: string };
    expect(discovery.issuer).toBe(provider.issuer);
    expect(discovery.token_endpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+\//);
  });

  it('answers configured servers only: another name is 404, whatever its shape', async () => {
    for (const name of ['nope', 'files2', 'FILES', '..%2Ffiles', 'files/extra', '__proto__', 'constructor']) {
      const response = await fetch(`${base}/.well-known/oauth-protected-resource/mcp/${name}`);
      expect(response.status, name).toBe(404);
      expect(((await response.json()) as { error: { type: string } }).error.type).toBe('not_found');
    }
    expect((await fetch(`${base}/.well-known/oauth-protected-resource`)).status).toBe(404);
    expect((await fetch(`${base}/.well-known/oauth-protected-resource/mcp/git`)).status).toBe(200);
    expect((await fetch(filesMetadata, { method: 'POST', body: 'x' })).status).toBe(405);
  });

  it("the SDK client's own 401 handling discovers the provider and gets a token for the resource", async () => {
    const authProvider = new ClientCredentialsProvider({ clientId: MCP_CLIENT.id, clientSecret: MCP_CLIENT.secret, expectedIssuer: provider.issuer, scope: 'chat' });
    const client = new Client({ name: 'discovering-client', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(filesResource), { authProvider });
    await client.connect(transport);
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(['add', 'echo']);
    const token = authProvider.tokens()?.access_token;
    expect(token).toBeDefined();
    issued.push(token!);
    // The SDK asked for the resource the metadata named (RFC 8707).
    expect(decodeJwt(token!).aud).toBe(filesResource);
    await client.close();
  });
});

describe('no token text where it could leak', () => {
  it('the audit file and the logs hold no token or signature', async () => {
    expect(issued.length).toBeGreaterThan(5);
    const places = { audit: await readFile(join(gateway.dir, 'audit.jsonl'), 'utf8'), logs: gateway.logs.join('') };
    for (const token of issued) {
      for (const [place, text] of Object.entries(places)) {
        expect(text.includes(token), `${place} holds a token`).toBe(false);
        expect(text.includes(token.split('.')[2]!), `${place} holds a signature`).toBe(false);
      }
    }
  });
});
