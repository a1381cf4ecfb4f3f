// HTTPS runners (`agents.<id>.tls`, docs/upstreams.md "HTTPS runners") against real TLS
// servers: a custom CA and a client certificate work; a runner whose certificate the CA did not
// sign, and a runner that wants a client certificate the agent lacks, answer the documented
// 503 agent_unavailable; the files are read again on a config reload, and a reload with a file
// that cannot be read is refused with the running pools kept.
import { copyFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load-config.js';
import { chatResponse } from '../helpers/fake-upstream.js';
import { postChat, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { makeTestCertificates, type TestCertificates } from '../helpers/tls-certs.js';

let first: TestCertificates;
let second: TestCertificates;
/** Wants a client certificate signed by `first`'s CA; serves `first`'s server certificate. */
let mutualRunner: Server;
/** Serves `second`'s server certificate; wants no client certificate. */
let otherRunner: Server;
/** Client certificate subjects the mutual runner saw. */
const clientSubjects: string[] = [];
let gateway: TestGateway;
let apiKey: string;
let rotatingCa: string;

function runner(options: Parameters<typeof createServer>[0]): Promise<Server> {
  const server = createServer(options, (req, res) => {
    const peer = (req.socket as TLSSocket).getPeerCertificate();
    if (peer.subject) clientSubjects.push(String(peer.subject.CN));
    req.resume();
    req.on('end', () => {
      const body = JSON.stringify(chatResponse('over https'));
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    });
  });
  server.listen(0, '127.0.0.1');
  return once(server, 'listening').then(() => server);
}

const urlOf = (server: Server): string => `https://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1`;

beforeAll(async () => {
  [first, second] = await Promise.all([makeTestCertificates('localhost'), makeTestCertificates('localhost')]);
  mutualRunner = await runner({ cert: readFileSync(first.serverCert), key: readFileSync(first.serverKey), ca: readFileSync(first.ca), requestCert: true, rejectUnauthorized: true });
  otherRunner = await runner({ cert: readFileSync(second.serverCert), key: readFileSync(second.serverKey) });
  rotatingCa = join(first.dir, 'rotating-ca.pem');
  await copyFile(first.ca, rotatingCa);
  gateway = await startTestGateway({
    agents: {
      trusted: { upstream: urlOf(mutualRunner), tls: { ca: first.ca, cert: first.clientCert, key: first.clientKey, servername: 'localhost' } },
      nocert: { upstream: urlOf(mutualRunner), tls: { ca: first.ca, servername: 'localhost' } },
      untrusted: { upstream: urlOf(otherRunner), tls: { ca: first.ca, servername: 'localhost' } },
      rotating: { upstream: urlOf(otherRunner), tls: { ca: rotatingCa, servername: 'localhost' } },
    },
  });
  ({ rawKey: apiKey } = await gateway.createKey());
});

afterAll(async () => {
  await gateway?.close();
  mutualRunner?.close();
  otherRunner?.close();
  mutualRunner?.closeAllConnections();
  otherRunner?.closeAllConnections();
  await first?.remove();
  await second?.remove();
});

const chat = (agent: string): Promise<Response> => postChat(gateway.url, `/agents/${agent}/api/v1/chat`, apiKey, { message: 'hi' });

describe('HTTPS runners', () => {
  it('reaches a runner with a custom CA and presents the client certificate', async () => {
    const res = await chat('trusted');
    expect(res.status).toBe(200);
    expect(((await res.json()) as { response: string }).response).toBe('over https');
    expect(clientSubjects).toContain('agentgw test client');
  });

  it('answers 503 agent_unavailable when the runner certificate is not signed by the configured CA', async () => {
    const res = await chat('untrusted');
    expect(res.status).toBe(503);
    expect(((await res.json()) as { error: { type: string } }).error.type).toBe('agent_unavailable');
    expect(res.headers.get('retry-after')).toBeTruthy();
    const line = gateway.logs.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.agent === 'untrusted').at(-1)!;
    expect(line.upstream_failure).toBe('connect');
  });

  it('answers 503 agent_unavailable when the runner wants a client certificate the agent has none of', async () => {
    const res = await chat('nocert');
    expect(res.status).toBe(503);
    expect(((await res.json()) as { error: { type: string } }).error.type).toBe('agent_unavailable');
  });

  it('reads the files again on a config reload: a renewed CA file applies to new connections', async () => {
    expect((await chat('rotating')).status).toBe(503);
    await copyFile(second.ca, rotatingCa);
    gateway.running.reload(gateway.config);
    expect((await chat('rotating')).status).toBe(200);
  });

  it('refuses a reload whose TLS file cannot be read, keeping the running pools', async () => {
    const broken = parseConfig(
      { agents: { trusted: { upstream: urlOf(mutualRunner), tls: { ca: join(first.dir, 'missing-ca.pem'), servername: 'localhost' } } }, keys: { file: join(gateway.dir, 'keys.json') } },
      'test',
      {},
    );
    expect(() => gateway.running.reload(broken)).toThrow(/agents\.trusted\.tls\.ca: cannot read .*missing-ca\.pem: ENOENT/);
    expect((await chat('trusted')).status).toBe(200);
    expect((await chat('rotating')).status).toBe(200);
  });
});

describe('agents.<id>.tls validation', () => {
  it('refuses tls on an agent without an https:// runner, and a cert without its key', () => {
    expect(() => parseConfig({ agents: { a: { upstream: 'http://127.0.0.1:1/api/v1', tls: { ca: 'x.pem' } } } }, 'test', {})).toThrow(/applies to https:\/\/ runners only/);
    expect(() => parseConfig({ agents: { a: { upstream: 'https://127.0.0.1:1/api/v1', tls: { cert: 'c.pem' } } } }, 'test', {})).toThrow(/needs both cert and key/);
  });
});
