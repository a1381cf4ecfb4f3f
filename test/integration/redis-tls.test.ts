// redis.tls against a real redis-server that speaks only TLS and asks for client certificates:
// a rediss:// URL with the CA, a client certificate and the server name connects; a missing
// client certificate, an unknown CA or the wrong name is refused; an unreadable PEM file stops
// the start with a message that names the key and the file (docs/configuration.md).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load-config.js';
import { silentLogger } from '../../src/logger.js';
import { createRedisClientFactory, type RedisClient } from '../../src/redis/redis-client.js';
import { distinctFreePorts, startRedisProcess, type RedisProcess } from '../helpers/redis-process.js';
import { makeTestCertificates, type TestCertificates } from '../helpers/tls-certs.js';

const SERVER_NAME = 'redis.agentgw.test';
const agents = { support: { upstream: 'http://127.0.0.1:8081/api/v1' } };

let certs: TestCertificates;
let server: RedisProcess;
const clients: RedisClient[] = [];

beforeAll(async () => {
  certs = await makeTestCertificates(SERVER_NAME);
  const [port] = (await distinctFreePorts(1)) as [number];
  const tls = ['--tls-cert-file', certs.serverCert, '--tls-key-file', certs.serverKey, '--tls-ca-cert-file', certs.ca];
  server = await startRedisProcess(
    'redis-server',
    port,
    ['--port', '0', '--tls-port', String(port), ...tls, '--tls-auth-clients', 'yes', '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    ['--tls', '--cacert', certs.ca, '--cert', certs.clientCert, '--key', certs.clientKey, '--sni', SERVER_NAME],
  );
});

afterAll(async () => {
  for (const client of clients) client.disconnect();
  await server?.kill();
  await certs?.remove();
});

function factoryFor(tls: Record<string, string>) {
  const config = parseConfig({ agents, redis: { url: `rediss://127.0.0.1:${server.port}/0`, tls } }, 'test', {});
  return createRedisClientFactory(config.redis!, silentLogger);
}

async function reach(tls: Record<string, string>): Promise<string> {
  const factory = factoryFor(tls);
  const client = factory.connect('cli-read', 'test-tls');
  clients.push(client);
  await factory.whenReady(client, 5_000);
  await client.set('gwtls:probe', 'over tls');
  return (await client.get('gwtls:probe'))!;
}

describe('redis.tls', () => {
  it('connects with the CA, a client certificate and the server name', async () => {
    expect(await reach({ ca: certs.ca, cert: certs.clientCert, key: certs.clientKey, servername: SERVER_NAME })).toBe('over tls');
  });

  it('is refused without a client certificate, with an unknown CA, or for another name', async () => {
    await expect(reach({ ca: certs.ca, servername: SERVER_NAME })).rejects.toThrow(/^cannot reach redis at rediss:\/\/127\.0\.0\.1:\d+\/0: /);
    await expect(reach({ cert: certs.clientCert, key: certs.clientKey, servername: SERVER_NAME })).rejects.toThrow(/certificate/i);
    await expect(reach({ ca: certs.ca, cert: certs.clientCert, key: certs.clientKey, servername: 'other.agentgw.test' })).rejects.toThrow(/other\.agentgw\.test|altnames/i);
  });

  it('names the key and the file it cannot read', () => {
    expect(() => factoryFor({ ca: `${certs.dir}/missing-ca.pem` })).toThrow(`redis.tls.ca: cannot read ${certs.dir}/missing-ca.pem: ENOENT`);
  });
});
